"""Arguments laid out in another axis order than C's, compiled in their own order.

Kernels loop over their outputs in C order. An F-ordered argument (``x.T`` passed in, a
Fortran array from SciPy) read that way takes a whole row's stride per element: tanh(a) * b + 1
over two 2000x3000 F-ordered float32 arrays took 66 ms compiled against NumPy's 12 ms, which
walks its operands in memory order (``order="K"``) and returns an F-ordered result.

So an argument whose strides order its axes otherwise than C does keys apart
(``runtime.key``), and its path compiles a graph whose input is the argument as memory holds
it, ``x.transpose(order)`` (C-ordered), transposed back by a permute node; the passes sink
that transpose below the elementwise work and reductions (``passes/sink_permutes.py``), so
kernels walk memory in order and results come out laid out as NumPy's. An argument the body
writes into gets its final value in its memory order too, written into the transposed
argument (or stored there by the kernel that computes it). A captured array (a global, a
closure's) laid out so when traced is taken the same way, unless the body writes into it;
its layout is not part of the key (kernels read any strides: another layout later is only
slower).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorType, Var
from ..ir.ops import inverse_perm
from ..tracer.layouts import stride_order


def argument_orders(trace, leaves) -> dict[int, tuple[int, ...]]:
    """Input position -> ``stride_order`` of each array argument laid out otherwise than C's
    (``leaves``: the traced call's)."""
    orders = {}
    for position, index in enumerate(trace.arg_leaves):
        leaf = leaves[index]
        if type(leaf) is np.ndarray:
            order = stride_order(leaf)
            if order is not None:
                orders[position] = order
    return orders


def capture_orders(trace, leaves) -> dict[int, tuple[int, ...]]:
    """Input position -> ``stride_order`` of each captured array laid out otherwise than C's
    when traced (``leaves``: the traced call's) that the body does not write into."""
    written = {m.index for m in trace.mutations if m.target == "capture"}
    first, orders = len(trace.arg_leaves), {}
    for k, capture in enumerate(trace.captures):
        if k in written or capture.source[0] == "const":
            continue
        try:
            array = capture.resolve(leaves)
        except Exception:  # noqa: BLE001 -- gone since: taken as it comes
            continue
        order = stride_order(array) if type(array) is np.ndarray else None
        if order is not None:
            orders[first + k] = order
    return orders


def in_memory_order(graph: Graph, orders: dict[int, tuple[int, ...]],
                    written: dict[int, int]) -> tuple[Graph, frozenset[int]]:
    """``graph`` taking each input at a position of ``orders`` transposed into memory order
    (the runtime passes ``argument.transpose(order)``), a permute node restoring its value.
    ``written``: output -> input position of each array the body updates in place that
    nothing else reads (``deferred_writes.written_inputs``); those of ``orders`` output their
    final value in the argument's memory order, for the runtime to write into
    ``argument.transpose(order)``, so that the kernel computing it may store it there itself
    (``in_place_updates``). Returns the graph and those outputs."""
    inputs, nodes = list(graph.inputs), []
    for position, order in sorted(orders.items()):
        value = graph.inputs[position]
        shape = tuple(value.type.shape[axis] for axis in order)
        raw = Var(TensorType(shape, value.type.dtype), value.hint)
        inputs[position] = raw
        nodes.append(Node("permute", (raw,), (value,), {"perm": inverse_perm(order)}))
    outputs, stored, tail = list(graph.outputs), set(), []
    for out, position in sorted(written.items()):
        final = graph.outputs[out]
        if position in orders and isinstance(final, Var) and graph.outputs.count(final) == 1:
            order = orders[position]
            outputs[out] = Var(TensorType(tuple(final.type.shape[axis] for axis in order),
                                          final.type.dtype), final.hint)
            tail.append(Node("permute", (final,), (outputs[out],), {"perm": tuple(order)}))
            stored.add(out)
    graph = graph.replace(inputs=tuple(inputs), nodes=(*nodes, *graph.nodes, *tail),
                          outputs=tuple(outputs))
    return graph, frozenset(stored)


def target_orders(trace, stored: frozenset[int], orders: dict[int, tuple[int, ...]]) -> tuple:
    """For each of ``trace``'s mutations: the axis order its target is written in (an output
    ``in_memory_order`` stored in memory order), or None."""
    position = {leaf: p for p, leaf in enumerate(trace.arg_leaves)}
    return tuple(orders[position[m.index]] if m.target == "arg" and m.output in stored
                 else None for m in trace.mutations)
