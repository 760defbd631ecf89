"""cse: structural hashing. A node equal to an earlier one (same op, operands and attributes)
is dropped and its outputs are replaced by the earlier node's.

Literals compare by their bytes (``Lit.__eq__``), and so do float attributes: ``full`` of
``-0.0`` is not ``full`` of ``0.0``.
"""
from __future__ import annotations

from ..ir import Graph, Node, ops
from .manager import PassResult, register_pass
from .rewrite import exposed_vars, substitute


def freeze(value):
    """A hashable key for an attribute value that tells ``-0.0`` from ``0.0`` and ``1`` from
    ``1.0`` and ``True`` (Python's ``==`` does not)."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(freeze(item) for item in value))
    if isinstance(value, Graph):
        return ("graph", id(value))
    if hasattr(value, "dtype") and hasattr(value, "tobytes"):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def node_key(node: Node):
    return (node.op, node.inputs, freeze(node.attrs))


def is_pure(node: Node) -> bool:
    """Opaque ops (host calls) may differ from call to call: never merged."""
    return node.op == "fused" or (node.op in ops.REGISTRY
                                  and ops.get(node.op).kind != ops.OPAQUE)


@register_pass("cse")
def cse(graph: Graph) -> PassResult:
    exposed = exposed_vars(graph)
    seen: dict = {}
    subst: dict = {}
    nodes = []
    for node in graph.nodes:
        node = node.replace(inputs=substitute(node.inputs, subst))
        nodes.append(node)
        if not is_pure(node):
            continue
        key = node_key(node)
        first = seen.setdefault(key, node)
        if first is not node and not _both_exposed(first, node, exposed):
            subst.update(zip(node.outputs, first.outputs, strict=True))
            nodes.pop()
    new_graph = graph.replace(nodes=nodes, outputs=substitute(graph.outputs, subst))
    removed = len(graph.nodes) - len(nodes)
    return PassResult(new_graph if removed else graph, bool(removed), {"merged": removed})


def _both_exposed(first: Node, dup: Node, exposed) -> bool:
    """Two results the caller can see stay two arrays, as in eager NumPy."""
    return any(v in exposed for v in first.outputs) and any(v in exposed for v in dup.outputs)
