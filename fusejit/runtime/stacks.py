"""Concatenations the program returns, written in place: each part computed into its rows.

``np.stack(hs)`` after an unrolled loop (an LSTM's sixteen hidden states) kept every part
alive in the arena until the end and then copied them all into the result: the parts and the
result were live together, and with the arena's other buffers the call's peak rose above
eager NumPy's (5.4 MB against 4.3 MB for the bench's LSTM, arena counted). When every part of
a returned concatenation along axis 0 is a kernel's output (or one with a leading axis of one
added, ``expand_dims``), the result is allocated before the first part is computed and each
kernel writes its part straight into its rows (``IntoRows``): the parts take no memory of
their own and the copy is gone (``Stacked``).

A part qualifies only where nothing else can reach its memory: not returned or viewed by what
is returned, not written in place afterwards, and not taken over by a later kernel's output;
and a result written in place after the concatenation keeps its parts apart.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, Var
from ..passes.plan_memory import caller_reachable, view_roots


@dataclass(frozen=True)
class Stack:
    node: Node                       # the concatenate
    rows: dict                       # part (a kernel's output Var) -> (start, stop) rows
    copies: tuple                    # (operand position, start, stop): the others, copied


def find(graph: Graph, writes, donors: dict[Var, Var]) -> list[Stack]:
    """The returned concatenations with parts that can be written into the result."""
    producers, returned = graph.producers(), {v for v in graph.outputs if isinstance(v, Var)}
    written = _written(graph, writes)
    blocked = caller_reachable(graph, writes) | written | set(donors) | set(donors.values())
    stacks = []
    for node in graph.nodes:
        # a result written in place (``s[0] = 0``) would write over its parts, still readable
        if node.op != "concatenate" or node.outputs[0] not in returned \
                or node.outputs[0] in written:
            continue
        layout = _layout(node, producers, blocked)
        if layout is not None:
            stacks.append(Stack(node, *layout))
            blocked |= set(layout[0])
    return stacks


def _layout(node: Node, producers, blocked) -> tuple[dict, tuple] | None:
    """Each part's rows of the result, for the operands that are distinct kernel outputs of
    the result's dtype (themselves or with a leading axis of one added) and not ``blocked``;
    the other operands' positions and rows, to copy."""
    result = node.outputs[0].type
    if node.attr["axis"] not in (0, -result.ndim) or not all(
            isinstance(operand, Var) for operand in node.inputs):
        return None
    rows, copies, start = {}, [], 0
    for position, operand in enumerate(node.inputs):
        stop = start + operand.type.shape[0]
        part = _part(operand, producers)
        if (part is None or part in rows or part in blocked or part.type.ndim == 0
                or part.type.dtype != result.dtype):
            copies.append((position, start, stop))
        else:
            rows[part] = (start, stop)
        start = stop
    return (rows, tuple(copies)) if rows else None


def _part(operand: Var, producers) -> Var | None:
    """The kernel output ``operand`` is, or is with a leading axis of one added."""
    maker = producers.get(operand)
    if maker is not None and maker.op == "expand_dims" and tuple(maker.attr["axes"]) == (0,):
        operand, maker = maker.inputs[0], producers.get(maker.inputs[0])
    return operand if maker is not None and maker.op == "fused" else None


def _written(graph: Graph, writes) -> set[Var]:
    """The buffers (views followed to their roots) that an in-place write goes into."""
    roots = view_roots(graph, writes)
    return {roots.get(node.inputs[0], node.inputs[0]) for node in writes}


class Allocate:
    """The step that makes a stacked result, before its first part is computed."""

    name = "stack"

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __call__(self):
        return (np.empty(self.shape, self.dtype),)


def into_rows(node: Node, stacks: list[Stack]) -> tuple[list[Stack], dict]:
    """The stacks ``node`` computes parts of, and for each such output position: (which of
    those stacks, start row, stop row, the part's shape)."""
    used, rows = [], {}
    for k, out in enumerate(node.outputs):
        for stack in stacks:
            if out in stack.rows:
                if stack not in used:
                    used.append(stack)
                rows[k] = (used.index(stack), *stack.rows[out], out.type.shape)
    return used, rows


class IntoRows:
    """A kernel step whose outputs in ``rows`` are written into stacked results (``into_rows``),
    which it takes as its last ``n_results`` inputs."""

    def __init__(self, kernel, n_outputs: int, rows: dict, n_results: int):
        self.kernel, self.n_outputs, self.rows, self.n_results = kernel, n_outputs, rows, n_results
        self.name = getattr(kernel, "name", "")

    def __call__(self, *inputs, out=None):
        results = inputs[len(inputs) - self.n_results:]
        outs = list(out) if out is not None else [None] * self.n_outputs
        for k, (which, start, stop, shape) in self.rows.items():
            outs[k] = results[which][start:stop].reshape(shape)
        complete = all(o is not None for o in outs)
        return self.kernel(*inputs[:len(inputs) - self.n_results],
                           out=tuple(outs) if complete else outs)


class Stacked:
    """The concatenation's step: the kernels wrote their parts into the result (its last
    input); the other operands are copied into their rows."""

    name = "stacked"

    def __init__(self, copies: tuple):
        self.copies = copies

    def __call__(self, *inputs):
        result = inputs[-1]
        for position, start, stop in self.copies:
            result[start:stop] = inputs[position]
        return (result,)
