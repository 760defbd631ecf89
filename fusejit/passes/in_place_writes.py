"""Writes that update their target's buffer instead of a copy of it.

``setitem(x, v, key)`` (and ``scatter_add``) is functional in the IR: a copy of ``x`` with
``v`` written into it. When nothing reads ``x``'s buffer after the write -- not ``x``, not a view
of it, not an earlier version written in place -- the copy serves no one, and the write may go
into the buffer itself; its result then aliases that buffer, as a view does
(``plan_memory.view_parents(graph, writes)``).

The buffer must be one the program owns (a new array of a kernel, a product, a gather, a pad or
a copying write, never handed to an opaque NumPy call that might keep a view of it), or a
caller's array that the body updates in place itself (``written``): that one gets its final
value anyway, and the runtime undoes the writes if the replay fails (``runtime/undo.py``).
"""
from __future__ import annotations

from ..ir import Graph, Node, Var
from .rewrite import is_view

WRITE_OPS = ("setitem", "scatter_add")
# ops whose outputs are new arrays nothing else refers to
OWNING_OPS = ("fused", "matmul", "concatenate", "gather", "pad", "setitem", "scatter_add")


def in_place_writes(graph: Graph, written=frozenset()) -> frozenset[Node]:
    """The write nodes that may write into their target's buffer. ``written``: positions among
    the graph's inputs of the caller's arrays the body updates in place."""
    parents = {out: node.inputs[0] for node in graph.nodes
               if is_view(node) and isinstance(node.inputs[0], Var) for out in node.outputs}
    last = _last_reads(graph)
    opaque = {v for node in graph.nodes if node.op == "host" for v in node.inputs}
    root: dict[Var, Var] = {}
    members: dict[Var, list[Var]] = {}
    for position, var in enumerate(graph.inputs):
        if position in written:
            root[var], members[var] = var, [var]
    chosen = set()
    for index, node in enumerate(graph.nodes):
        target = node.inputs[0] if node.op in WRITE_OPS else None
        owner = root.get(target)
        if owner is not None and all(last.get(m, -1) <= index and m not in opaque
                                     for m in members[owner]):
            chosen.add(node)
            parent = {node.outputs[0]: target}
        else:
            parent = parents
        for out in node.outputs:
            owner = root.get(parent.get(out)) if out in parent else \
                (out if node.op in OWNING_OPS else None)
            if owner is not None:
                root[out] = owner
                members.setdefault(owner, []).append(out)
    return frozenset(chosen)


def _last_reads(graph: Graph) -> dict[Var, int]:
    """Each Var -> the index of the last node that reads it directly; ``len(nodes)`` for what
    the graph returns."""
    last: dict[Var, int] = {}
    for index, node in enumerate(graph.nodes):
        for var in node.inputs:
            if isinstance(var, Var):
                last[var] = index
    for var in graph.outputs:
        if isinstance(var, Var):
            last[var] = len(graph.nodes)
    return last
