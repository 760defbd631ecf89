"""dce: drop nodes none of whose outputs reaches a graph output (backward liveness)."""
from __future__ import annotations

from ..ir import Graph, Var
from .manager import PassResult, register_pass


def live_nodes(graph: Graph) -> set[int]:
    """Indices of the nodes whose results the graph's outputs depend on."""
    needed = {v for v in graph.outputs if isinstance(v, Var)}
    live: set[int] = set()
    for index in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[index]
        if any(out in needed for out in node.outputs):
            live.add(index)
            needed.update(v for v in node.inputs if isinstance(v, Var))
    return live


@register_pass("dce")
def dce(graph: Graph) -> PassResult:
    live = live_nodes(graph)
    removed = len(graph.nodes) - len(live)
    if not removed:
        return PassResult(graph, False, {"removed": 0})
    nodes = [node for index, node in enumerate(graph.nodes) if index in live]
    return PassResult(graph.replace(nodes=nodes), True, {"removed": removed})
