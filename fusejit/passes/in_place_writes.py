"""Writes that update their target's buffer instead of a copy of it.

``setitem(x, v, key)`` (and ``scatter_add``) is functional in the IR: a copy of ``x`` with
``v`` written into it. When nothing reads ``x``'s buffer after the write -- not ``x``, not a view
of it, not an earlier version written in place -- the copy serves no one, and the write may go
into the buffer itself; its result then aliases that buffer, as a view does
(``plan_memory.view_parents(graph, writes)``).

The buffer must be one the program owns (a new array of a kernel, a product, a gather, a pad or
a copying write, never handed to an opaque NumPy call that might keep a view of it), or a
caller's array that the body updates in place itself (``written``), when the write is on the
chain of writes from that array to the version written back into it and every later write
on that chain is in place too (so the array ends up holding its final version, and no version
aliasing it is overwritten by a write-back): the runtime undoes those writes if the replay
fails (``runtime/undo.py``).
"""
from __future__ import annotations

from ..ir import Graph, Node, Var
from .rewrite import view_parents

WRITE_OPS = ("setitem", "scatter_add")
# ops whose outputs are new arrays nothing else refers to
OWNING_OPS = ("fused", "matmul", "concatenate", "gather", "pad", "setitem", "scatter_add")


def in_place_writes(graph: Graph, written=None) -> frozenset[Node]:
    """The write nodes that may write into their target's buffer. ``written``: position among
    the graph's inputs of each caller's array the body updates in place -> the Var the runtime
    writes back into it (its final version)."""
    parents = view_parents(graph)
    last = _last_reads(graph)
    opaque = {v for node in graph.nodes if node.op == "host" for v in node.inputs}
    chains = _chains(graph, written or {})
    on_chain = {node for chain in chains for node in chain}
    callers = set(graph.inputs)
    root: dict[Var, Var] = {}
    members: dict[Var, list[Var]] = {}
    for position in written or {}:
        var = graph.inputs[position]
        root[var], members[var] = var, [var]
    chosen = set()
    for index, node in enumerate(graph.nodes):
        target = node.inputs[0] if node.op in WRITE_OPS else None
        owner = root.get(target)
        if owner is not None and (owner not in callers or node in on_chain) and \
                all(last.get(m, -1) <= index and m not in opaque for m in members[owner]):
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
    for chain in chains:
        chosen.difference_update(_before_the_last_copy(chain, chosen))
    return frozenset(chosen)


def _chains(graph: Graph, written: dict) -> list[list[Node]]:
    """For each written input, the writes from it to the version written back, in order; a
    final version that is not the input's writes alone (``x += 1`` made a new array) has
    none. A write into a caller's array must be one of these: another write into the same
    input (``t = x.copy(); t[0] = 1``, the copy folded away) is a write into a copy."""
    producers = graph.producers()
    chains = []
    for position, final in written.items():
        source, var, chain = graph.inputs[position], final, []
        while var is not source:
            node = producers.get(var) if isinstance(var, Var) else None
            if node is None or node.op not in WRITE_OPS:
                chain = []
                break
            chain.append(node)
            var = node.inputs[0]
        if chain:
            chains.append(chain[::-1])
    return chains


def _before_the_last_copy(chain: list[Node], chosen: set) -> list[Node]:
    """The chain's in-place writes up to its last write into a copy: the runtime copies that
    copy's final value over the caller's array, under any version still aliasing it (one
    returned: ``x[0] = 1; r = x * 1; x[1] = 2``). Only a suffix of in-place writes may stay."""
    for index in range(len(chain) - 1, -1, -1):
        if chain[index] not in chosen:
            return chain[:index]
    return []


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
