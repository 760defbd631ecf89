"""Elementwise loops that call tanh or sigmoid (or float64 exp and log) run four vectors at a
time: LLVM's loop vectorizer is told to interleave them 4 ways while their module compiles.

Why: such a loop is one long dependency chain per vector (tanh-GELU: about 30 instructions,
a division and some 100 cycles from load to store), and the vectorizer's own cost model,
seeing 16 AVX2 registers taken by constants, keeps one vector per iteration. The out-of-order
core then cannot find enough independent work to fill its pipes. Four chains side by side,
each kernel compiled both ways in one process and timed in alternation (AVX2 EPYC, 4096x1024,
serial rows, medians):

================  =========  =========  ==================================================
loop              default    4 ways     note
================  =========  =========  ==================================================
f32 tanh-GELU     2.03 ms    1.65 ms    the whole ``gelu_f32`` call; f64 GELU 14.0 -> 11.7
f32 tanh          1.31       1.14
f32 sigmoid       1.76       1.50
f64 exp           8.46       7.01       f64 tanh 13.5 -> 11.2, f64 log 7.17 -> 6.35
f32 exp, log      1.41, 2.36 1.37, 2.31 no gain: left to LLVM
f32 erf           3.46       3.60       slower (erf-GELU 4.5 -> 5.1): left to LLVM
softmax           2.02       1.93       a reduction's partial sums would change: left alone
================  =========  =========  ==================================================

Results are bitwise the same: interleaving reorders no arithmetic outside reductions, and
kernels with reductions never get it. LLVM reads the count from a process-wide option
(``-force-vector-interleave``), so it is set only while one of these modules compiles, under
Numba's compiler lock (no other compilation sees it), and set back to 0 (the cost model's
choice) when the outermost such compilation ends, whether it succeeded or not. A disk-cache
hit compiles nothing and needs none of this.
"""
from __future__ import annotations

import contextlib
import functools

import llvmlite.binding as llvm
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher

from ..ir import Graph
from .work import wide

WAYS = 4
ALWAYS = frozenset({"tanh", "sigmoid"})
WIDE_ONLY = frozenset({"exp", "expm1", "log", "log1p"})   # float64 only (table above)
NEVER = frozenset({"erf"})

_OPTION = "-force-vector-interleave={}"
_depth = 0   # nested compilations (a kernel compiling its row loop), under the compiler lock


def ways_for(body: Graph, has_reduction: bool) -> int:
    """How many ways the kernel's loops interleave: ``WAYS``, or 0 to leave it to LLVM."""
    if has_reduction:
        return 0
    ops = {(node.op, wide(node.outputs[0].type.dtype)) for node in body.nodes}
    if any(op in NEVER for op, _ in ops):
        return 0
    wanted = any(op in ALWAYS or (op in WIDE_ONLY and eight) for op, eight in ops)
    return WAYS if wanted else 0


def source_lines(ways: int) -> list[str]:
    """The generated module's last lines: its functions compile interleaved ``ways`` ways."""
    if not ways:
        return []
    return [f"# LLVM interleaves this module's vector loops {ways} ways "
                "(fusejit/codegen/interleave.py)",
            f"interleave_loops({ways}, globals())"]


def interleave_loops(ways: int, namespace: dict) -> None:
    """Makes every Numba function defined in ``namespace`` (a generated module's globals,
    not what it imported) compile with its loops interleaved ``ways`` ways."""
    for value in namespace.values():
        if (isinstance(value, Dispatcher) and value.py_func.__globals__ is namespace
                and not getattr(value, "_fusejit_ways", 0)):
            value.compile = functools.partial(_compile, value.compile, ways)
            value._fusejit_ways = ways


def _compile(compile_, ways, sig):
    with interleaved(ways):
        return compile_(sig)


@contextlib.contextmanager
def interleaved(ways: int):
    """LLVM's vectorizer interleaves ``ways`` ways inside the block, for this thread only
    (the compiler lock keeps every other compilation out)."""
    global _depth
    with global_compiler_lock:
        if _depth == 0:
            llvm.set_option("fusejit", _OPTION.format(ways))
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
            if _depth == 0:
                llvm.set_option("fusejit", _OPTION.format(0))
