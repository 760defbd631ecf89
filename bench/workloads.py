"""Workload definitions and the pure helpers around them (no timing here: tests may import it).

A workload is a model from ``bench/models`` at a given size and dtype, plus the peers that
implement the same computation.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .models import MODELS, MUTATES_ARGS, STATIC_ARGNAMES, load
from .peers import PEERS

# repeats per workload: (warmup, timed) for the full and the --quick run
REPEATS = {"bench": (2, 15), "quick": (2, 9)}


@dataclass
class Workload:
    name: str
    size: str
    dtype: np.dtype
    fn: object
    make_inputs: object
    static_argnames: tuple = ()
    mutates_args: bool = False
    peers: list = field(default_factory=list)

    def inputs(self, seed=0):
        return self.make_inputs(dtype=self.dtype, size=self.size, seed=seed)


def workloads(size="bench", dtype=np.float32, only=None):
    """The benchmark workloads, in ``MODELS`` order, optionally restricted to ``only``."""
    names = [name for name in MODELS if not only or name in only]
    unknown = set(only or ()) - set(MODELS)
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join(MODELS)}")
    result = []
    for name in names:
        fn, make_inputs = load(name)
        result.append(Workload(name, size, np.dtype(dtype), fn, make_inputs,
                               STATIC_ARGNAMES.get(name, ()), name in MUTATES_ARGS,
                               list(PEERS.get(name, ()))))
    return result


def fresh(args, kwargs):
    """Deep copies of the inputs, for workloads that update their arguments in place."""
    return copy.deepcopy(args), copy.deepcopy(kwargs)


def eager_output(workload, args, kwargs):
    """Eager NumPy's result, on copies of the inputs (a workload may update its arguments)."""
    call_args, call_kwargs = fresh(args, kwargs)
    return workload.fn(*call_args, **call_kwargs)


def leaves(tree):
    """Array and scalar leaves of a pytree, dict keys in sorted order."""
    if isinstance(tree, dict):
        for key in sorted(tree):
            yield from leaves(tree[key])
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from leaves(item)
    else:
        yield tree


def nbytes(tree) -> int:
    return sum(np.asarray(leaf).nbytes for leaf in leaves(tree)
               if isinstance(leaf, (np.ndarray, np.generic)))


def tolerance(dtype) -> float:
    return 1e-4 if np.dtype(dtype).itemsize <= 4 else 1e-9


def compare(expected, actual, dtype):
    """Raise ``AssertionError`` unless ``actual`` matches the eager result: same pytree, same
    shapes and dtypes, values within rtol (1e-4 for f32) and an atol scaled by the largest
    magnitude, so that values near zero (softmax tails) do not need relative agreement."""
    want, got = list(leaves(expected)), list(leaves(actual))
    assert len(want) == len(got), f"{len(got)} results, eager gave {len(want)}"
    rtol = tolerance(dtype)
    for index, (e, a) in enumerate(zip(want, got, strict=True)):
        if e is None:   # a step that only updates its arguments returns nothing
            assert a is None, f"result {index}: {type(a).__name__}, eager None"
            continue
        e_arr, a_arr = np.asarray(e), np.asarray(a)
        assert type(a) is type(e), f"result {index}: {type(a).__name__}, eager {type(e).__name__}"
        assert a_arr.shape == e_arr.shape, f"result {index}: shape {a_arr.shape} != {e_arr.shape}"
        assert a_arr.dtype == e_arr.dtype, f"result {index}: dtype {a_arr.dtype} != {e_arr.dtype}"
        scale = float(np.max(np.abs(e_arr), initial=1.0)) if e_arr.dtype.kind in "fc" else 0.0
        np.testing.assert_allclose(a_arr, e_arr, rtol=rtol, atol=rtol * scale * 1e-2,
                                   err_msg=f"result {index}")


def compare_values(expected, actual, dtype):
    """Like :func:`compare` but only the values (peers may return another dtype or type)."""
    rtol = tolerance(dtype)
    for e, a in zip(leaves(expected), leaves(actual), strict=True):
        if e is None:
            continue
        e_arr = np.asarray(e)
        scale = float(np.max(np.abs(e_arr), initial=1.0))
        np.testing.assert_allclose(np.asarray(a), e_arr, rtol=rtol, atol=rtol * scale * 1e-2)
