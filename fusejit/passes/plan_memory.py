"""plan_memory: buffer lifetimes over the node schedule, the peak the runtime holds when it frees
each buffer after its last use, and the same figure for eager NumPy on the unfused program.

Views own no memory: they keep their root buffer alive. Graph inputs belong to the caller and
are never freed or counted. Buffers are given offsets in one arena (first fit); two buffers that
are live at the same step never overlap.
"""
from __future__ import annotations

from ..ir import Graph, Node, Var
from .manager import PassResult, register_pass
from .rewrite import is_view


def view_parents(graph: Graph) -> dict[Var, Var]:
    """Each view's output -> the Var it is a view of."""
    return {out: node.inputs[0] for node in graph.nodes
            if is_view(node) and node.inputs and isinstance(node.inputs[0], Var)
            for out in node.outputs}


def last_uses(graph: Graph) -> dict[Var, int]:
    """Each node-defined Var -> the index of the last node that reads it or a view of it;
    ``len(nodes)`` for what the graph returns; its own index when nothing reads it."""
    last = {out: index for index, node in enumerate(graph.nodes) for out in node.outputs}
    parents = view_parents(graph)
    reads = [(index, node.inputs) for index, node in enumerate(graph.nodes)]
    reads.append((len(graph.nodes), graph.outputs))
    for index, values in reads:
        for var in values:
            while isinstance(var, Var) and var in last:  # graph inputs are never freed
                last[var] = max(last[var], index)
                var = parents.get(var)
    return last


def lifetimes(graph: Graph) -> dict[Var, tuple[int, int]]:
    """Each buffer (a non-view node output) -> (defining node index, last use index)."""
    last = last_uses(graph)
    return {out: (index, last[out]) for index, node in enumerate(graph.nodes)
            if not is_view(node) for out in node.outputs}


def peak_bytes(spans: dict[Var, tuple[int, int]]) -> int:
    """The most bytes live at one step; a buffer is live from its definition to its last use."""
    change: dict[int, int] = {}   # step -> bytes allocated there minus bytes freed before it
    for var, (start, end) in spans.items():
        change[start] = change.get(start, 0) + var.type.nbytes
        change[end + 1] = change.get(end + 1, 0) - var.type.nbytes
    live, peak = 0, 0
    for step in sorted(change):
        live += change[step]
        peak = max(peak, live)
    return peak


def assign_offsets(spans: dict[Var, tuple[int, int]], align: int = 1) -> dict[Var, int]:
    """First fit, in order of definition: each buffer takes the lowest offset (a multiple of
    ``align``) that overlaps no buffer live at the same time."""
    offsets: dict[Var, int] = {}
    placed: list[tuple[int, int, int, int]] = []   # (start, end, low, high) of placed buffers
    for var, (start, end) in sorted(spans.items(), key=lambda item: (item[1][0], item[0].uid)):
        busy = sorted((low, high) for s, e, low, high in placed if s <= end and start <= e)
        offset, nbytes = 0, var.type.nbytes
        for low, high in busy:
            if offset + nbytes <= low:
                break
            offset = max(offset, -(-high // align) * align)
        offsets[var] = offset
        placed.append((start, end, offset, offset + nbytes))
    return offsets


def unfused(graph: Graph) -> Graph:
    """The graph with every fused node replaced by its body's nodes (the eager program)."""
    nodes: list[Node] = []
    for node in graph.nodes:
        nodes += _inline(node) if node.op == "fused" else [node]
    return graph.replace(nodes=nodes)


def _inline(fused: Node) -> list[Node]:
    """The body's nodes on the fused node's operands; each body output is defined under the
    fused node's output Var (by a ``copy`` when no body node defines it, or defines it twice)."""
    body = unfused(fused.attr["body"])
    defined = {out for node in body.nodes for out in node.outputs}
    claimed: dict[Var, Var] = {}
    for inner, outer in zip(body.outputs, fused.outputs, strict=True):
        if isinstance(inner, Var) and inner in defined and inner not in claimed:
            claimed[inner] = outer
    rename: dict = dict(zip(body.inputs, fused.inputs, strict=True))
    nodes = []
    for node in body.nodes:
        outputs = tuple(claimed.get(v) or Var(v.type, v.hint) for v in node.outputs)
        inputs = tuple(rename.get(v, v) if isinstance(v, Var) else v for v in node.inputs)
        rename.update(zip(node.outputs, outputs, strict=True))
        nodes.append(node.replace(inputs=inputs, outputs=outputs))
    for inner, outer in zip(body.outputs, fused.outputs, strict=True):
        if claimed.get(inner) is not outer:
            source = rename.get(inner, inner) if isinstance(inner, Var) else inner
            nodes.append(Node("copy", (source,), (outer,), (), fused.loc))
    return nodes


@register_pass("plan_memory")
def plan_memory(graph: Graph) -> PassResult:
    spans = lifetimes(graph)
    offsets = assign_offsets(spans)
    arena = max((offsets[v] + v.type.nbytes for v in spans), default=0)
    stats = {"last_use": last_uses(graph), "peak_bytes": peak_bytes(spans),
             "eager_peak_bytes": peak_bytes(lifetimes(unfused(graph))),
             "buffers": len(spans), "offsets": offsets, "arena_bytes": arena}
    return PassResult(graph, False, stats)
