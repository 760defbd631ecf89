"""Kernels that store an argument's update straight into the caller's array.

``m *= 0.9; m += 0.1 * g`` computes ``m``'s final version in one fused kernel that reads ``m``;
the runtime then copied the kernel's new array over the caller's (a second pass over memory).
When the kernel reads ``m`` element by element (``plan_memory.overwritable``) and nothing reads
``m``'s old contents after it, the kernel stores over ``m`` instead, as it stores over an
intermediate that dies there (``plan_memory.in_place_outputs``).

A replay that fails after such a kernel could not give the caller its old array back without
a copy of it, so nothing may fail from that kernel on: no guard is checked after it, no step
may raise (``dce.may_raise``, inside kernels too), and no deferred write with index arrays is
left for after the run. The runtime checks every array the call writes before the replay
(``Program.donated``, ``CompiledEntry.run``): a read-only one raises NumPy's error, and one whose
elements overlap each other (``sliding_window_view``) makes the call run eagerly, since NumPy
buffers such an update where the kernel would read what it stored.
"""
from __future__ import annotations

from ..ir import Graph, Node, Var
from .dce import may_raise
from .plan_memory import overwritable, read_once, view_roots


def last_failure(graph: Graph, checked: set[int]) -> int:
    """The index of the last node that may raise or after which a guard is checked (-1: none).
    ``checked``: the node indices whose results guards check."""
    raising = [index for index, node in enumerate(graph.nodes) if _may_raise_deep(node)]
    return max([-1, *checked, *raising])


def _may_raise_deep(node: Node) -> bool:
    if node.op == "fused":
        return any(_may_raise_deep(inner) for inner in node.attr["body"].nodes)
    return may_raise(node)


def caller_donors(graph: Graph, written: dict, writes, failure: int) -> dict[Var, Var]:
    """Kernel outputs stored over the caller's array they update: output -> the graph input.

    ``written``: position among the graph's inputs -> the Var written back into it;
    ``writes``: the in-place setitems (``in_place_writes``); ``failure``: ``last_failure``."""
    producers, roots = graph.producers(), view_roots(graph, writes)
    index_of = {node: index for index, node in enumerate(graph.nodes)}
    last, opaque = _last_reads(graph, roots), _opaque_roots(graph, roots)
    written_into = {roots.get(node.inputs[0], node.inputs[0]) for node in writes}
    donors: dict[Var, Var] = {}
    for position, final in written.items():
        source, node = graph.inputs[position], producers.get(final)
        if node is None or node.op != "fused" or index_of[node] <= failure:
            continue
        if source in opaque or source in written_into or source in donors.values() or \
                last.get(source, -1) > index_of[node] or graph.outputs.count(final) != 1:
            continue
        if _overwrites(node, final, source, roots):
            donors[final] = source
    return donors


def _overwrites(node: Node, out: Var, source: Var, roots) -> bool:
    """The kernel may store ``out`` over its operand ``source`` (the same test as for an
    intermediate donor: one operand covering the space, read element by element)."""
    space, allowed = overwritable(node.attr["body"])
    k = node.outputs.index(out)
    return (k in allowed and source in node.inputs and read_once(node, source, roots)
            and source.type.shape == out.type.shape == space and out.type.ndim > 0
            and source.type.dtype == out.type.dtype)


def _last_reads(graph: Graph, roots: dict[Var, Var]) -> dict[Var, int]:
    """Each graph input -> the index of the last node reading it or a view of it;
    ``len(nodes)`` when the graph returns it or a view of it."""
    last: dict[Var, int] = {}
    reads = [(index, node.inputs) for index, node in enumerate(graph.nodes)]
    reads.append((len(graph.nodes), graph.outputs))
    for index, values in reads:
        for var in values:
            if isinstance(var, Var):
                last[roots.get(var, var)] = index
    return last


def _opaque_roots(graph: Graph, roots: dict[Var, Var]) -> set[Var]:
    """Arrays handed (themselves or a view) to an opaque NumPy call, which may keep a view."""
    return {roots.get(v, v) for node in graph.nodes if node.op == "host"
            for v in node.inputs if isinstance(v, Var)}
