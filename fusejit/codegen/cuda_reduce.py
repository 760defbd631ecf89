"""Accumulators of CUDA row kernels: per-thread updates and the block-wide combine.

Each thread folds its share of a row into a local accumulator; the block then combines the
partials with a shared-memory tree (``blockDim.x`` is a power of two, at most ``MAX_THREADS``)
and every thread reads the row's value from ``shared[0]``. The tree is used instead of warp
shuffles because Numba's CUDA simulator, which CI runs, has no shuffles.

Semantics follow the CPU backend (``codegen/reductions.py``): f32 sums accumulate in f64;
max/min propagate NaN; argmax/argmin return the first NaN, ties go to the smaller index; bool
accumulators are int32 (0/1) so that they fit shared memory and the tree.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from .reductions import accumulator_dtype

MAX_THREADS = 256   # the tree's shared arrays; cuda_launch.THREADS must not exceed it
INDENT = "    "


def ctor(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bool" if dtype == np.bool_ else f"np.{dtype.name}"


def acc_dtype(node: Node) -> np.dtype:
    if node.op in ("any", "all") or accumulator_dtype(node) == np.bool_:
        return np.dtype(np.int32)
    return np.dtype(accumulator_dtype(node))


def is_arg(node: Node) -> bool:
    return node.op in ("argmax", "argmin")


def init_lines(node: Node, acc: str) -> list[str]:
    dtype = acc_dtype(node)
    if is_arg(node):
        return [f"{acc} = {ctor(dtype)}(0)", f"{acc}_at = np.int64(-1)"]
    return [f"{acc} = {ctor(dtype)}({_start(node, dtype)})"]


def update_lines(node: Node, acc: str, value: str, index: str) -> list[str]:
    """Fold ``value`` (at flat reduced position ``index``) into the thread's accumulator."""
    dtype = acc_dtype(node)
    if is_arg(node):
        take = "arg_take_max" if node.op == "argmax" else "arg_take_min"
        return [f"if {take}({acc}, {acc}_at, {value}, {index}):",
                f"{INDENT}{acc} = {value}", f"{INDENT}{acc}_at = {index}"]
    operand = f"(1 if {value} else 0)" if dtype == np.int32 and _boolish(node) else value
    return [f"{acc} = {combine(node, acc, f'{ctor(dtype)}({operand})')}"]


def combine(node: Node, a: str, b: str) -> str:
    dtype = acc_dtype(node)
    op = node.op
    if op == "sum":
        body = f"{a} + {b}"
    elif op == "prod":
        body = f"{a} * {b}"
    elif op in ("any", "reduce_max"):
        body = f"fmaximum({a}, {b})" if dtype.kind == "f" else f"max({a}, {b})"
    else:  # all, reduce_min
        body = f"fminimum({a}, {b})" if dtype.kind == "f" else f"min({a}, {b})"
    return f"{ctor(dtype)}({body})"


def tree_lines(node: Node, acc: str, shared: str) -> list[str]:
    """Block-wide combine of every thread's ``acc``; afterwards each thread holds the row's
    value in ``acc``. Ends with a barrier so that the next row may reuse the shared array."""
    arg = is_arg(node)
    lines = [f"{shared}[tid] = {acc}"] + ([f"{shared}_at[tid] = {acc}_at"] if arg else [])
    lines += ["cuda.syncthreads()", "stride = width // 2", "while stride > 0:",
              f"{INDENT}if tid < stride:"]
    deeper = INDENT * 2
    if arg:
        take = "arg_take_max" if node.op == "argmax" else "arg_take_min"
        lines += [f"{deeper}if {take}({shared}[tid], {shared}_at[tid], {shared}[tid + stride], "
                  f"{shared}_at[tid + stride]):",
                  f"{deeper}{INDENT}{shared}[tid] = {shared}[tid + stride]",
                  f"{deeper}{INDENT}{shared}_at[tid] = {shared}_at[tid + stride]"]
    else:
        merged = combine(node, f"{shared}[tid]", f"{shared}[tid + stride]")
        lines.append(f"{deeper}{shared}[tid] = {merged}")
    lines += [f"{INDENT}cuda.syncthreads()", f"{INDENT}stride //= 2",
              f"{acc} = {shared}[0]"] + ([f"{acc}_at = {shared}_at[0]"] if arg else [])
    return lines + ["cuda.syncthreads()"]


def shared_name(node: Node) -> str:
    """The shared array of ``node``'s accumulator dtype (an arg reduction's also has
    ``<name>_at``)."""
    return f"shared_{acc_dtype(node).name}"


def shared_lines(node: Node, shared: str) -> list[str]:
    dtype = acc_dtype(node)
    lines = [f"{shared} = cuda.shared.array({MAX_THREADS}, {ctor(dtype)})"]
    if is_arg(node):
        lines.append(f"{shared}_at = cuda.shared.array({MAX_THREADS}, np.int64)")
    return lines


def final_expr(node: Node, acc: str) -> str:
    out = node.out.type.dtype
    if is_arg(node):
        return f"{ctor(out)}({acc}_at)"
    if out == np.bool_:
        return f"({acc} != 0)"
    return f"{ctor(out)}({acc})"


def describe(node: Node) -> str:
    return f"{node.op} {node.inputs[0].type.dtype.name} in {acc_dtype(node).name}"


def _boolish(node: Node) -> bool:
    return node.inputs[0].type.dtype == np.bool_


def _start(node: Node, dtype: np.dtype) -> str:
    op = node.op
    if op in ("sum", "any"):
        return "0"
    if op in ("prod", "all"):
        return "1"
    low = op == "reduce_max"
    if _boolish(node):
        return "0" if low else "1"
    if dtype.kind == "f":
        return "-np.inf" if low else "np.inf"
    info = np.iinfo(dtype)
    return f"{int(info.min) + 1} - 1" if low else str(int(info.max))
