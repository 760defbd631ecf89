"""dce: drop nodes none of whose outputs reaches a graph output (backward liveness), unless they
may raise."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Lit, Node, Var
from ..located import drops_imaginary
from .manager import PassResult, register_pass

INDEXING_OPS = ("gather", "setitem", "scatter_add")


def may_raise(node: Node) -> bool:
    """Whether running the node can raise for some values of its inputs, whatever their
    (traced) shapes: an integer index array out of bounds (``h[idx] = 0`` with nothing reading
    ``h`` afterwards still raises IndexError in eager NumPy), an integer power (a negative
    exponent), or an opaque NumPy call (``np.linalg.inv`` of a singular matrix), except a
    boolean-mask read and an elementwise op that a host op runs (``tracer.dynamic``), which
    raises only as the op itself does or where its operands' shapes stop broadcasting."""
    if node.op in INDEXING_OPS:
        first = 1 if node.op == "gather" else 2
        return any(isinstance(v, Var) and v.type.dtype.kind in "iu" for v in node.inputs[first:])
    if node.op == "pow":   # integers to a negative integer power: ValueError
        return all(isinstance(v, Var) and v.type.dtype.kind in "iu" or
                   isinstance(v, Lit) and v.dtype.kind in "iu" for v in node.inputs)
    if node.op == "cast":   # complex to real: a ComplexWarning, an error under an "error" filter
        source = node.inputs[0]
        return isinstance(source, Var) and drops_imaginary(source.type.dtype, node.attr["dtype"])
    if node.op == "host" and node.attr.get("elementwise"):   # an op on a data-dependent shape
        arrays = [v for v in node.inputs if v.type.ndim > 0]   # may no longer broadcast
        return len(arrays) > 1 or node.attr["name"] == "pow" and node.out.type.dtype.kind in "iu"
    if node.op == "host" and node.attr.get("varies"):   # a mask may no longer fit
        return True
    if node.op == "host":
        masks_only = node.attr.get("name") == "getitem" and all(
            v.type.dtype == np.bool_ for v in node.inputs[1:] if isinstance(v, Var))
        return not masks_only
    return False


def live_nodes(graph: Graph) -> set[int]:
    """Indices of the nodes whose results the graph's outputs depend on, and of the nodes that
    may raise (``may_raise``): eager NumPy raises there whether or not the result is used."""
    needed = {v for v in graph.outputs if isinstance(v, Var)}
    live: set[int] = set()
    for index in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[index]
        if any(out in needed for out in node.outputs) or may_raise(node):
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
