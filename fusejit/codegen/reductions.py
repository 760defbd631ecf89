"""Accumulator code for the one reduction a reduce kernel may hold.

Each reduction is three pieces of scalar source: the accumulator's initialisation (once per
output element), its update (once per input element, ``{v}`` the element) and the final value.
NaN handling follows NumPy: max/min propagate NaN, argmax/argmin return the first NaN.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node


def accumulator_dtype(node: Node) -> np.dtype:
    """f32 sums accumulate in f64 (then round once); everything else in the input dtype."""
    dtype = node.inputs[0].type.dtype
    if node.op == "sum" and dtype == np.float32:
        return np.dtype(np.float64)
    return dtype


def init_lines(node: Node) -> list[str]:
    acc = accumulator_dtype(node)
    if node.op in ("argmax", "argmin"):
        return ["k = 0", "best_index = 0", f"best = {_ctor(acc)}(0)"]
    start = {"sum": "0", "prod": "1", "any": "False", "all": "True",
             "reduce_max": _extreme(acc, low=True),
             "reduce_min": _extreme(acc, low=False)}[node.op]
    if acc == np.bool_:
        return [f"acc = {node.op in ('all', 'reduce_min')}"]
    return [f"acc = {_ctor(acc)}({start})"]


def update_lines(node: Node, value: str) -> list[str]:
    acc = accumulator_dtype(node)
    is_float = acc.kind == "f"
    op = node.op
    if op == "sum":
        return [f"acc = {_ctor(acc)}(acc + {value})"]
    if op == "prod":
        return [f"acc = {_ctor(acc)}(acc * {value})"]
    if op in ("any", "all"):
        word = "or" if op == "any" else "and"
        return [f"acc = acc {word} bool({value})"]
    if op in ("reduce_max", "reduce_min"):
        return _extreme_update(op, value, is_float, acc == np.bool_)
    return _arg_update(op, value, is_float)


def final_expr(node: Node) -> str:
    out = node.out.type.dtype
    if node.op in ("argmax", "argmin"):
        return f"{_ctor(out)}(best_index)"
    return f"{_ctor(out)}(acc)"


def _extreme_update(op, value, is_float, is_bool) -> list[str]:
    if is_bool:
        word = "or" if op == "reduce_max" else "and"
        return [f"acc = acc {word} {value}"]
    cmp = ">" if op == "reduce_max" else "<"
    # Once acc is NaN no comparison is true, so the first NaN sticks (np.max semantics).
    nan = f" or {value} != {value}" if is_float else ""
    return [f"if {value} {cmp} acc{nan}:", f"    acc = {value}"]


def _arg_update(op, value, is_float) -> list[str]:
    cmp = ">" if op == "argmax" else "<"
    # First element always wins; later a strictly better value, or the first NaN.
    nan = f" or ({value} != {value} and best == best)" if is_float else ""
    return [f"if k == 0 or {value} {cmp} best{nan}:",
            f"    best = {value}", "    best_index = k", "k += 1"]


def _extreme(dtype, low: bool) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return "-np.inf" if low else "np.inf"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        # min + 1 - 1: the literal -2**63 would not type as int64.
        return f"{int(info.min) + 1} - 1" if low else str(int(info.max))
    return "False" if low else "True"


def _ctor(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bool" if dtype == np.bool_ else f"np.{dtype.name}"


def describe(node: Node) -> str:
    """``sum f32 in f64`` for kernel headers."""
    return f"{node.op} {node.inputs[0].type.dtype.name} in {accumulator_dtype(node).name}"
