"""Results that are views of an array the body wrote in place (``x[0] += y; return x[1:]``).

The graph computes a written array's new value functionally and the runtime copies it back into
the argument or captured array. A result taken as a view of that new value would then be a view
of the program's buffer, a copy of the user's memory where eager NumPy returned a view of it.
Such a result is rebuilt on every replay by the same NumPy view calls, applied to the array
itself after the write-back (``OutputLeaf("view", ...)``)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir import Node, Var, ops
from ..passes.rewrite import is_view

MAX_CHAIN = 256  # view calls between the result and the written array (x[1:].T[0] is 3)


def written(recorder, proxies: dict) -> list[tuple]:
    """``(final Var, "arg" | "capture", index, the array itself)`` for each array the body
    wrote: the arguments in order, then the captured arrays."""
    first_input = set(recorder.inputs)
    result, seen = [], set()
    for index, proxy in sorted(proxies.items()):
        if proxy.ir_var not in first_input and id(proxy) not in seen:   # f(a, a): once
            result.append((proxy.ir_var, "arg", index, proxy.value))
        seen.add(id(proxy))
    for k, record in enumerate(recorder.captures):
        var = recorder.raw[id(record.live)][1]
        if var is not record.var and record.source[0] != "const":
            result.append((var, "capture", k, record.live))
    return result


def view_chain(recorder, tracer, writes: list[tuple]) -> tuple | None:
    """``(target, index, view nodes from the array outwards)`` when ``tracer`` is a view of a
    written array that eager NumPy returned sharing its memory, else None."""
    if not writes:
        return None
    roots = {}
    for var, *where in writes:
        roots.setdefault(var, where)
    found = _chain(recorder, tracer.ir_var, roots)
    if found is None and tracer.link is not None:  # ``v = x[1:]; v += 1; return v``
        found = _chain(recorder, _derived(recorder, tracer), roots)
    if found is None:
        return None
    (target, index, array), chain = found
    if not chain or not _shares(tracer.value, array):
        return None
    return target, index, chain


def _derived(recorder, tracer):
    """The view taken again from its base's current value (a written view's Var is the value
    written, not a view)."""
    link = tracer.link
    return tracer.ir_var if link is None else link.derive(recorder, _derived(recorder, link.base))


def _chain(recorder, var, roots: dict):
    """(the written array's record, the view nodes from it to ``var``), or None."""
    producers, chain = None, []
    while var not in roots:
        if len(chain) == MAX_CHAIN or not isinstance(var, Var):
            return None
        if producers is None:
            producers = {out: node for node in recorder.nodes for out in node.outputs}
        node = producers.get(var)
        if node is None or not _single_view(node, recorder.host_views):
            return None
        chain.append(node)
        var = node.inputs[0]
    return roots[var], tuple(reversed(chain))


def apply_views(array, nodes) -> np.ndarray:
    """The same NumPy view calls, on the user's array."""
    for node in nodes:
        array = ops.get(node.op).impl(array, **dict(node.attrs))
        if node.op == "host":
            array = array[0]
    return array


def _single_view(node: Node, host_views=frozenset()) -> bool:
    """A view op, or a host call whose result viewed its one operand (``np.diagonal(x)``)."""
    return (is_view(node) or node.outputs[0] in host_views) and len(node.outputs) == 1 \
        and isinstance(node.inputs[0], Var)


def _shares(value, array) -> bool:
    return type(value) is np.ndarray and isinstance(array, np.ndarray) and \
        np.may_share_memory(value, array)


def between_results(recorder, leaves: tuple, raw: list, outputs: list) -> tuple:
    """Results the body made that are views of each other, as NumPy's are.

    A view of a made array written through the view (``a = y[1:]; a += x; return y, a``) is
    the written value in the graph, an array of its own: it becomes the same view calls on
    ``y``'s output. Results the graph derives from one array by view calls where NumPy's
    share no memory (``y = x.T * 1; return y, y.reshape(-1)``: NumPy's ``y`` is F-ordered,
    its reshape a copy) are handed out apart (``_separated``)."""
    results = [(position, obj) for position, obj in enumerate(raw)
               if leaves[position].kind == "value" and type(getattr(obj, "value", None))
               is np.ndarray]
    returned = {id(obj): leaves[position].index for position, obj in results}
    leaves, derived = list(leaves), {}
    for position, obj in results:
        base = _written_base(obj)
        if base is not None and id(base) in returned and _shares(obj.value, base.value):
            if id(obj) not in derived:   # ``return y, a, a``: one output, as one object
                outputs.append(_derived(recorder, obj))
                derived[id(obj)] = len(outputs) - 1
            leaves[position] = replace(leaves[position], index=derived[id(obj)])
    return _separated(recorder, leaves, results, outputs)


def _separated(recorder, leaves: list, results: list, outputs: list) -> tuple:
    """Results the graph takes by views from one array, handed out as NumPy's are: those
    NumPy made views of one memory (one owner) stay views of the program's array, the class
    nearest the array itself; each other class becomes views of one copy, made on every call,
    of the array its views start from (``y = x.T + 0; r = y.reshape(-1); return y, r[:3], r[1:]``:
    NumPy's reshape of the F-ordered ``y`` is a copy, both slices views of it)."""
    producers = {out: node for node in recorder.nodes for out in node.outputs}
    paths = [_view_path(outputs[leaves[position].index], producers, recorder.host_views)
             for position, _ in results]
    inputs = {*recorder.inputs, *(c.var for c in recorder.captures)}
    for root, classes in _memory_classes(results, paths).items():
        if root in inputs:   # the same NumPy calls on the caller's array, laid out as traced
            continue         # (``layouts``): views and copies as NumPy's
        for members in classes[1:]:
            common = _common_prefix([paths[k][1] for k in members])
            base = common[-1].outputs[0] if common else root
            _copied_class(leaves, results, members, _output_index(base, outputs),
                          [paths[k][1][len(common):] for k in members])
    return tuple(leaves)


def _memory_classes(results: list, paths: list) -> dict:
    """Root Var -> the results taken from it by views, grouped by the memory NumPy's share
    (their owner), each group shallowest first, the groups by their shallowest result."""
    groups: dict = {}
    for k, (_, obj) in enumerate(results):
        owners = groups.setdefault(paths[k][0], {})
        owners.setdefault(_memory_owner(obj.value), []).append(k)
    depth = lambda k: (len(paths[k][1]), k)
    return {root: sorted((sorted(members, key=depth) for members in owners.values()),
                         key=lambda members: depth(members[0]))
            for root, owners in groups.items()}


def _copied_class(leaves: list, results: list, members: list, base: int, views: list) -> None:
    """Each member: ``views`` of one per-call copy of output ``base``. The leaf keeps its own
    output (handed out when that output is not a NumPy array, a device array) and the
    position of the first member that is the same object (``return r, r``: one object)."""
    first_of: dict = {}
    for k, member_views in zip(members, views, strict=True):
        position, obj = results[k]
        same = first_of.setdefault(id(obj), position)
        leaves[position] = replace(leaves[position], kind="view", index=base, view="copied",
                                   views=member_views, const=(leaves[position].index, same))


def _output_index(var, outputs: list) -> int:
    """``var``'s index among the graph outputs, appended when it is not one."""
    index = next((i for i, v in enumerate(outputs) if v is var), len(outputs))
    if index == len(outputs):
        outputs.append(var)
    return index


def _common_prefix(paths: list) -> tuple:
    """The view calls every path starts with (the nodes of the first)."""
    first, n = paths[0], min(len(p) for p in paths)
    for depth in range(n):
        if any(_view_step(p[depth]) != _view_step(first[depth]) for p in paths[1:]):
            return first[:depth]
    return first[:n]


def _view_step(node: Node) -> tuple:
    return node.op, node.attrs, tuple(node.inputs[1:])


def _view_path(var, producers, host_views) -> tuple:
    """(the Var ``var`` is taken from by view calls alone, those view nodes in order)."""
    chain: list = []
    node = producers.get(var)
    while node is not None and _single_view(node, host_views) and len(chain) < MAX_CHAIN:
        chain.append(node)
        var = node.inputs[0]
        node = producers.get(var)
    return var, tuple(reversed(chain))


def _memory_owner(array: np.ndarray) -> int:
    """id of the object that owns ``array``'s memory, through every ``base`` (an ndarray's,
    or the stand-in ``as_strided`` and ``sliding_window_view`` keep)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return id(array)


def _written_base(tracer):
    """The array a view written through was taken from (None: not such a view)."""
    if tracer.link is None or tracer.link.key is None:
        return None
    base = tracer.link.base
    while base.link is not None:
        base = base.link.base
    return base
