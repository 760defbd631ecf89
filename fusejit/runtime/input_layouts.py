"""Arguments laid out in another axis order than C's, compiled in their own order.

Kernels loop over their outputs in C order. An F-ordered argument (``x.T`` passed in, a
Fortran array from SciPy) read that way takes a whole row's stride per element: tanh(a) * b + 1
over two 2000x3000 F-ordered float32 arrays took 66 ms compiled against NumPy's 12 ms, which
walks its operands in memory order (``order="K"``) and returns an F-ordered result.

So an argument whose strides order its axes otherwise than C does keys apart
(``runtime.key``), and its path compiles a graph whose input is the argument as memory holds
it, ``x.transpose(order)`` (C-ordered), transposed back by a permute node; the passes sink
that transpose below the elementwise work and reductions (``passes/sink_permutes.py``), so
kernels walk memory in order and results come out laid out as NumPy's. Arguments the body
writes into keep the traced graph's input: their writes go back through the caller's array.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, TensorType, Var
from ..tracer.layouts import stride_order

__all__ = ["argument_orders", "in_memory_order", "stride_order"]


def argument_orders(trace, leaves) -> dict[int, tuple[int, ...]]:
    """Input position -> ``stride_order`` of each array argument laid out otherwise than C's
    that the body does not write into (``leaves``: the traced call's)."""
    written = {m.index for m in trace.mutations if m.target == "arg"}
    orders = {}
    for position, index in enumerate(trace.arg_leaves):
        leaf = leaves[index]
        if type(leaf) is np.ndarray and index not in written:
            order = stride_order(leaf)
            if order is not None:
                orders[position] = order
    return orders


def in_memory_order(graph: Graph, orders: dict[int, tuple[int, ...]]) -> Graph:
    """``graph`` taking each input at a position of ``orders`` transposed into memory order
    (the runtime passes ``argument.transpose(order)``), a permute node restoring its value."""
    inputs, nodes = list(graph.inputs), []
    for position, order in sorted(orders.items()):
        value = graph.inputs[position]
        shape = tuple(value.type.shape[axis] for axis in order)
        raw = Var(TensorType(shape, value.type.dtype), value.hint)
        inputs[position] = raw
        nodes.append(Node("permute", (raw,), (value,), {"perm": _inverse(order)}))
    return graph.replace(inputs=tuple(inputs), nodes=(*nodes, *graph.nodes))


def _inverse(order) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for k, axis in enumerate(order):
        inverse[axis] = k
    return tuple(inverse)
