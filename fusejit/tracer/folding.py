"""Values that depend on no input: computed once, at the end of the trace.

Arrays the body creates are proxies (``creation.py``), so NumPy code on them alone is recorded
too: ``np.tril(np.ones((n, n), bool))`` becomes a ``full`` node and a ``tril`` host op that
would run on every replay. Every value computed only from fills, constants and literals is the
same on every call: each one that the rest of the program reads (or that is an output) becomes
a constant input holding its value, taken through a ``reshape`` to its own shape (a ``copy``
for an output) so the references to it stay valid; the nodes that computed it are left to
dead-code elimination. ``full`` nodes themselves stay, and so do views of them: kernels compute
them for free.
"""
from __future__ import annotations

import numpy as np

from ..ir import Lit, Node, TensorType, Var
from ..ir.interpret import run_node
from ..ir.ops import inverse_perm
from .context import CaptureRecord
from .layouts import stride_order

# views of a fill that stay nodes, as the fill does (``np.ones_like`` of an F-ordered array is
# a fill in memory order, transposed)
FILL_VIEWS = ("permute", "reshape", "broadcast", "expand_dims", "squeeze")


def fold_constants(recorder, outputs: list) -> None:
    constant = {c.var for c in recorder.captures if c.source[0] == "const"}
    producers, folded, fills = {}, [], set()
    for index, node in enumerate(recorder.nodes):
        if all(isinstance(v, Lit) or v in constant for v in node.inputs):
            constant.update(node.outputs)
            producers.update((var, node) for var in node.outputs)
            if node.op == "full" or (node.op in FILL_VIEWS and node.inputs[0] in fills):
                fills.update(node.outputs)    # free in a kernel: no array to hold
            elif len(node.outputs) == 1:
                folded.append(index)
    read = {v for node in recorder.nodes
            if not all(var in constant for var in node.outputs) for v in node.inputs}
    read.update(outputs)
    values = {c.var: c.source[1] for c in recorder.captures if c.source[0] == "const"}
    returned, replaced = set(outputs), {}
    for index in folded:
        node = recorder.nodes[index]
        if node.outputs[0] in read:
            value = _value(node.outputs[0], producers, values)
            replaced[index] = _from_constant(recorder, node, value, node.outputs[0] in returned)
    if replaced:
        recorder.nodes[:] = [new for index, node in enumerate(recorder.nodes)
                             for new in replaced.get(index, (node,))]


def _value(var, producers, values):
    """``var``'s value, computed from the constants and literals it depends on."""
    if isinstance(var, Lit):
        return np.asarray(var.value)
    if var not in values:
        node = producers[var]
        args = [_value(v, producers, values) for v in node.inputs]
        with np.errstate(all="ignore"):   # the trace warned from the user's line already
            values.update(zip(node.outputs, run_node(node, args), strict=True))
    return values[var]


def _from_constant(recorder, node, value, returned: bool) -> tuple[Node, ...]:
    """``node`` replaced by a read of a new constant input: a ``reshape`` to its own shape,
    or a ``copy`` where it is an output (the caller gets a new array every call, as
    eagerly). A value laid out otherwise than C's (``np.ones((3, 4)).T * 2``) is held in its
    memory order and transposed back by a ``permute`` before that copy, so that the copy
    comes out laid out as NumPy's."""
    out = node.outputs[0]
    value = np.asarray(value, dtype=out.type.dtype)
    order = stride_order(value)
    held = value if order is None else value.transpose(order)
    held = np.array(held, copy=True, order="C")
    var = Var(TensorType(held.shape, out.type.dtype), "const")
    where = node.loc.short().split(" ")[0] if node.loc else "<unknown>"
    recorder.register_capture(CaptureRecord(f"constant computed at {where}", var,
                                            ("const", held), (), held))
    if order is None:
        attrs = {} if returned else {"shape": out.type.shape}
        return (Node("copy" if returned else "reshape", [var], [out], attrs, node.loc),)
    seen = Var(out.type) if returned else out
    nodes = (Node("permute", [var], [seen], {"perm": inverse_perm(order)}, node.loc),)
    return nodes + (Node("copy", [seen], [out], {}, node.loc),) if returned else nodes
