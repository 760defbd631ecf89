"""Memory layouts a trace's view-or-copy decisions rest on.

``x.reshape(-1)`` and ``x.ravel()`` give a view of ``x`` or a copy depending on its strides, and
so may the same call on a value computed from ``x`` (NumPy's ufuncs lay their results out like
their inputs). The trace records what NumPy did for the layouts it saw: a write into ``x`` reaches
the reshaped array, or does not. The cache key holds shapes, dtypes and axis orders
(``runtime/input_layouts.py``), not strides, so a path whose trace made such a decision keeps the
layout of each argument it rests on (``Trace.layouts``) and is not taken for a call whose
arguments are laid out otherwise: that call traces a path of its own. Arrays the decision cannot
rest on are not kept: what reaches the reshaped value only through a product, whose result NumPy
lays out C-ordered whatever its inputs are. Captured arrays (globals, closure cells) are kept as
arguments are, and checked as each call reads them.
"""
from __future__ import annotations

import numpy as np

from ..ir import Var
from .tracer import Tracer

# ops whose result NumPy lays out C-ordered whatever their inputs are (a reduction keeps its
# input's order: the sum over axis 1 of an F-ordered 3-d array is F-ordered)
FRESH_LAYOUT = frozenset({"matmul"})


def note(rec, base) -> None:
    """``base``'s view-or-copy decision is being made (reshape, ravel)."""
    if isinstance(base, Tracer) and base.recorder is rec:
        rec.layout_bases.append(base.ir_var)


def link(rec, var, *like) -> None:
    """``var`` is laid out as the ``like`` values, though not computed from them by ops that
    keep layouts (``np.ones_like(x)``; ``np.einsum``'s product, laid out as its operands)."""
    rec.layout_links.setdefault(var, []).extend(
        v.ir_var for v in like if isinstance(v, Tracer) and v.recorder is rec)


def layout(array: np.ndarray):
    """``"C"`` for a C-contiguous array, else its strides (0 on axes of length 1, whose
    stride no view-or-copy decision reads)."""
    flags = array.flags   # a Numba device array's is a dict
    if flags["C_CONTIGUOUS"]:
        return "C"
    return tuple(s if n > 1 else 0 for n, s in zip(array.shape, array.strides, strict=True))


def kept(rec, proxies: dict, arg_leaves: tuple, leaves: list) -> tuple:
    """(argument layouts, capture layouts): (leaf index, layout) of each argument array and
    (capture index, layout) of each captured array the recorded decisions rest on; None and ()
    where there are none (a reshape of a product only: nothing to check on replay)."""
    if not rec.layout_bases:
        return None, ()
    producer = {out: node for node in rec.nodes for out in node.outputs}
    stack, seen = list(rec.layout_bases), set()
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        node = producer.get(var)
        if node is not None and node.op not in FRESH_LAYOUT:
            stack += [v for v in node.inputs if isinstance(v, Var) and v not in seen]
        stack += rec.layout_links.get(var, ())
    # the graph input each proxy started as (an update in place moves a proxy to a new Var;
    # an array passed twice has one proxy)
    input_of = {id(proxies[i]): var for i, var in zip(arg_leaves, rec.inputs, strict=False)}
    arguments = tuple((index, layout(leaves[index])) for index, proxy in sorted(proxies.items())
                      if type(leaves[index]) is np.ndarray and input_of.get(id(proxy)) in seen)
    captures = tuple((j, layout(record.live)) for j, record in enumerate(rec.captures)
                     if record.var in seen and type(record.live) is np.ndarray)
    return arguments or None, captures


def stride_order(array: np.ndarray) -> tuple[int, ...] | None:
    """The axis order that lays ``array`` out in C order (``array.transpose(order)`` walks
    memory forward), or None where C order already does: C-contiguous arrays, C-ordered
    views, and arrays with fewer than two axes longer than 1. Axes of length 1 and
    broadcast axes (stride 0) stay where they are: no order reads their strides."""
    if array.flags.c_contiguous or array.ndim < 2:
        return None
    moving = [axis for axis, (n, s) in enumerate(zip(array.shape, array.strides, strict=True))
              if n > 1 and s != 0]
    ranked = sorted(moving, key=lambda axis: -abs(array.strides[axis]))
    if ranked == moving:
        return None
    order = list(range(array.ndim))
    for slot, axis in zip(moving, ranked, strict=True):
        order[slot] = axis
    return tuple(order)


def hold(layouts, arrays) -> bool:
    """Each kept argument (or captured array) is laid out as it was when traced."""
    return all(layout(arrays[index]) == expected for index, expected in layouts)
