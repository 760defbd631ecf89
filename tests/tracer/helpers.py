"""Differential check: trace, verify, interpret, and compare with eager NumPy."""
from __future__ import annotations

import copy

import numpy as np

from fusejit.ir import interpret, verify
from fusejit.tracer import flatten, trace


def assert_same(got, want, exact=True):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
        if exact or want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        assert got == want or (got != got and want != want)


def replay(tr, leaves_before):
    """Run the trace's graph on the pre-call inputs; rebuild the result leaves."""
    inputs = [leaves_before[i] for i in tr.arg_leaves]
    inputs += [c.resolve(leaves_before) for c in tr.captures]
    results = interpret(tr.graph, *inputs)
    out = []
    for leaf in tr.out_leaves:
        if leaf.kind == "value":
            value = results[leaf.index]
            value = float(value) if leaf.pyfloat else value[()] if leaf.scalar else value
        elif leaf.kind == "arg":
            mutated = {m.index: results[m.output] for m in tr.mutations if m.target == "arg"}
            value = mutated.get(leaf.index, leaf_value(leaves_before, leaf.index))
        elif leaf.kind == "capture":
            value = tr.captures[leaf.index].resolve(leaves_before)
        else:
            value = leaf.const
        out.append(value)
    return out, results


def leaf_value(leaves, index):
    return leaves[index]


def check(fn, *args, exact=True, **kwargs):
    """Trace ``fn``; assert its eager result is NumPy's and the graph reproduces it."""
    expected = fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    leaves_before = copy.deepcopy(flatten((args, kwargs))[0])
    tr = trace(fn, args, kwargs)
    assert tr.fallback is None, tr.fallback
    verify(tr.graph)
    want_leaves = flatten(expected)[0]
    for got, want in zip(flatten(tr.result)[0], want_leaves, strict=True):
        assert_same(got, want)
    replayed, _ = replay(tr, leaves_before)
    for got, want in zip(replayed, want_leaves, strict=True):
        assert_same(got, want, exact)
    return tr
