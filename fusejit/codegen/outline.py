"""Row loops that call vector math, each moved into a function of its own.

LLVM hoists a loop's constants (the coefficients of an inlined exp or tanh) out of it, into
vector registers. Inside a nest of loops they are hoisted out of the outer loop too, and where
the registers run out (16 ymm on AVX2) the register allocator brings them back in the inner
loop, each with two instructions (an absolute address and a broadcast) per vector. Compiled as
a function of its own, and kept from being inlined back (``never_inline``), a row loop spills
them once and reads them as memory operands of the arithmetic instead. Measured on an AVX2
EPYC at 4096x1024 float32, the parallel kernel alone: tanh-GELU and the 8-op chain 1.2-1.35x
faster, serial kernels 20-25% (docs/backends.md, Row loops).

The row variants keep building each row (``crow``) and call ``row_loop<k>`` with the rows,
sizes, outer indices and values its loop reads. Rows shorter than ``MIN_ROW`` elements run the
``short_*`` variants instead, which keep every loop inline (``kernel._row_variants``).
"""
from __future__ import annotations

import ast
import re
import textwrap
from typing import NamedTuple

INDENT = "    "
# Shorter rows run the variants with the loops inline: a call per row of 16 float32 (two
# vectors) made tanh over 262144x16 take 4.5 ms instead of 3.1; at 64 and above the call is
# the faster.
MIN_ROW = 64
_BOUND = re.compile(r"^\s*(?:for\s+(\w+)\s+in\b|(\w+)\s*\+?=)")


class RowLoop(NamedTuple):
    """One outlined loop: the function's name, its parameters, and its body (``never_inline``,
    the loop, and the return of the accumulators), indented one level."""
    name: str
    params: list[str]
    body: list[str]


def outline_rows(lines: list[str], params: list[str], dim: int, calls: frozenset
                 ) -> tuple[list[str], list[RowLoop]]:
    """(``lines`` with each outermost loop over ``i{dim}`` or ``j{dim}`` that calls one of
    ``calls`` replaced by a call, the loops called: ``row_loop0``, ``row_loop1``, ...).
    A function takes the names its loop reads that are bound before it, and returns those it
    rebinds that are read after it (an accumulator), which the call binds again. Loops without
    such a call stay inline: they hold few constants, and each function outlined costs
    compile time (softmax's kernel 0.54 -> 0.80 s with all three passes outlined)."""
    loops: list[RowLoop] = []
    out: list[str] = []
    position = 0
    while position < len(lines):
        end = _block_end(lines, position) if _loops_over(lines[position], dim) else None
        if end is None or not _calls(lines[position:end], calls):
            out.append(lines[position])
            position += 1
            continue
        call, loop = _outline(lines, position, end, params, f"row_loop{len(loops)}")
        out.append(lines[position][:_depth(lines[position])] + call)
        loops.append(loop)
        position = end
    return out, loops


def _outline(lines, start, end, params, name) -> tuple[str, RowLoop]:
    """(the call, unindented, that replaces ``lines[start:end]``, the loop it calls)."""
    block, before, after = lines[start:end], lines[:start], lines[end:]
    reads, binds = _exposed(block)
    outside = set(params) | {bound for line in before for bound in _bound(line)}
    returns = sorted((var for var in binds & outside if _read_next(var, after)), key=_order)
    args = sorted((reads | set(returns)) & outside, key=_order)
    call = f"{name}({', '.join(args)})"
    if returns:
        call = f"{', '.join(returns)} = {call}"
    loop = textwrap.indent(textwrap.dedent("\n".join(block)), INDENT).splitlines()
    result = [f"{INDENT}return {', '.join(returns)}"] if returns else []
    return call, RowLoop(name, args, [f"{INDENT}never_inline()", *loop, *result])


def _exposed(block: list[str]) -> tuple[set[str], set[str]]:
    """(names the block may read before binding them, names it binds), line by line in
    order; a name bound under an ``if`` of the block counts as bound only for that branch."""
    bound: set[str] = set()
    reads, binds = set(), set()
    branches: list[tuple[int, set[str]]] = []   # (depth of an if, names bound before it)
    for line in block:
        while branches and _depth(line) <= branches[-1][0]:
            bound = branches.pop()[1]
        loads, stores = _line_names(line)
        reads |= loads - bound
        binds |= stores
        if line.strip().startswith(("if ", "elif ", "else")):
            branches.append((_depth(line), set(bound)))
        bound |= stores
    return reads, binds


def _calls(block: list[str], names) -> bool:
    return any(f"{name}(" in line for line in block for name in names)


def _loops_over(line: str, dim: int) -> bool:
    return re.match(rf"\s*for [ij]{dim} in ", line) is not None


def _block_end(lines: list[str], header: int) -> int | None:
    """The position after the body of the loop at ``header`` (None when it has none)."""
    depth = _depth(lines[header])
    end = header + 1
    while end < len(lines) and (_depth(lines[end]) > depth or not lines[end].strip()):
        end += 1
    return end if end > header + 1 else None


def _read_next(name: str, after: list[str]) -> bool:
    """Whether the next occurrence of ``name`` in ``after`` reads it (the code generator binds
    every name of a row anew before that row uses it, so nothing flows to the next row)."""
    for line in after:
        loads, stores = _line_names(line)
        if name in loads:
            return True
        if name in stores:
            return False
    return False


def _line_names(line: str) -> tuple[set[str], set[str]]:
    text = line.strip()
    if text.endswith(":"):   # a header: its condition or range, and a loop's target
        target = _bound(line)
        text = re.sub(r"^(for \w+ in|if|elif|while)\s+", "", text[:-1]).strip()
        loads = _names([text])[0] if text and text != "else" else set()
        return loads, set(target)
    return _names([text])


def _names(block: list[str]) -> tuple[set[str], set[str]]:
    """(names the block reads, names it binds)."""
    tree = ast.parse(textwrap.dedent("\n".join(block)).replace("$RANGE0", "range")
                     .replace("$RANGE", "range"))
    loads, stores = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (stores if isinstance(node.ctx, ast.Store) else loads).add(node.id)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loads.add(node.target.id)
    return loads, stores


def _bound(line: str) -> tuple[str, ...]:
    match = _BOUND.match(line)
    return tuple(name for name in match.groups() if name) if match else ()


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip())


def _order(name: str) -> tuple:
    """Sizes, then outer indices, then the rest (accumulators, rows, arrays), each by number."""
    kind = {"n": 0, "i": 1}.get(name[0], 2) if name[1:].isdigit() else 2
    return kind, re.sub(r"\d+", lambda m: m.group().zfill(4), name)
