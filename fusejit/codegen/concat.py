"""``np.concatenate`` (and ``np.stack``, ``hstack``, ...) of short rows as a generated copy loop.

NumPy copies each input into its slab of the result with one inner loop per row of that
input, so a concatenation of many short rows pays NumPy's per-row cost many times over, and
its inputs are copied one after another: each pass writes a strided slice of the whole result.
The loop here walks the result in memory order instead, copying each input's rows into place
as it passes them; a row is a unit-stride slice (``prelude.crow``) that LLVM vectorizes.
Measured on 4 MiB float32 results, serial, against ``np.concatenate``: rows of 16-64 elements
1.7-2x faster, 4-8 and 128-256 elements 1.3-1.5x, 1024 about even, single elements 6x slower
(NumPy folds those into one axis): those, small results and inputs whose rows are not
unit-stride stay NumPy's. The im2col of the ``conv`` workload (nine 32-element windows per
channel): 1.83 -> 0.75-0.88 ms. From 1 MiB on, a second thread helps where the axes before
the concatenated one give it rows to share (``concat_parallel``, one ``prange`` over them):
conv's 18 MiB im2col 1.32 -> 0.68 ms, 2.2 MiB 0.13 -> 0.08, float32 rows of 3x64 elements
at 1.5 MiB 0.064 -> 0.046 ms, at 12 MiB 0.78 -> 0.48; at 0.4 MiB the serial loop is faster
(17 vs 27 us). The inputs arrive as one tuple, looped over at run time: a loop
with one copy per input took Numba 0.9 s to compile for conv's 9 inputs and 1.7 s for the
LSTM's 16, the tuple loop 0.3 s for any number.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from . import _prelude_hash, fuses_lines, source_cache
from .kernel import one_at_a_time

MIN_BYTES = 1 << 16   # smaller results: NumPy's call costs less than a Numba dispatch (~8 us)
MIN_ROW = 2           # single-element rows: NumPy collapses them into one long axis
PARALLEL_MIN_BYTES = 1 << 20   # larger results: two threads copy faster (module docstring)
LOOPABLE = frozenset("?bBhHiIlLqQfdFD")   # NumPy type characters Numba has (no float16)


def build_concat(node: Node) -> ConcatLoop | None:
    """The copy loop for a ``concatenate`` node, or None where NumPy's copy is as fast (see
    the module docstring) or Numba cannot run it."""
    out = node.out.type
    if not (out.ndim and out.nbytes >= MIN_BYTES and out.dtype.char in LOOPABLE
            and all(v.type.dtype == out.dtype and v.type.shape[-1] >= MIN_ROW
                    for v in node.inputs)):
        return None
    return ConcatLoop(node)


class ConcatLoop:
    """``__call__(*inputs, out=None)`` -> ``(result,)``, like the NumPy step it replaces;
    ``out``: the arena's view to write into. The inputs go to the loop as one tuple, which
    Numba types only when they share one array type: inputs of mixed layouts (a C-ordered
    array beside a sliced view) or mixed writeability are concatenated by NumPy, and so are
    inputs whose rows are not unit-stride (a transpose, a reversed last axis)."""

    kind = "concatenate"

    def __init__(self, node: Node):
        self.node, self.axis = node, node.attr["axis"]
        self.shape, self.dtype = node.out.type.shape, node.out.type.dtype
        self.parallel = (self.axis > 0 and node.out.type.nbytes >= PARALLEL_MIN_BYTES
                         and int(np.prod(self.shape[:self.axis])) > 1)
        self.name = f"concatenate_{len(node.inputs)}x{node.out.type.ndim}d"
        file_source = loop_source(node.out.type.ndim, self.axis)
        self.key = source_cache.source_key(file_source)
        self.module = source_cache.load_module(self.key, file_source)
        header = [f"# kernel {self.name}  target=cpu  kind=concatenate  key={self.key}",
                  *fuses_lines([(node.op, node.loc)])]
        self.source = "\n".join(header) + "\n" + file_source
        # the parallel loop as kernels run theirs: one parallel region at a time, else serial
        self._loop = (one_at_a_time(self.module.concat_parallel, self.module.concat)
                      if self.parallel else self.module.concat)

    def __repr__(self):
        return f"ConcatLoop({self.name}, key={self.key})"

    def __call__(self, *inputs, out=None):
        result = np.empty(self.shape, self.dtype) if out is None else out[0]
        if not (_one_type(inputs) and self._loop(result, inputs)):
            np.concatenate(inputs, self.axis, out=result)
        return (result,)


def _one_type(arrays) -> bool:
    """Whether Numba gives every array the same type (dtype and rank agree already)."""
    first = _numba_kind(arrays[0])
    return first is not None and all(_numba_kind(x) == first for x in arrays[1:])


def _numba_kind(x) -> tuple | None:
    """What of an array's Numba type its dtype and rank leave open: its layout ("C" where
    C-contiguous, else "F" where F-contiguous, else "A"), writeability and alignment."""
    if type(x) is not np.ndarray:
        return None
    flags = x.flags
    return (flags.c_contiguous, flags.f_contiguous and not flags.c_contiguous, flags.writeable,
            flags.aligned)


def loop_source(ndim: int, axis: int) -> str:
    """A module with ``concat(out, inputs)`` (``inputs``: a tuple of arrays of one type):
    False (nothing written) when a row of an operand is not unit-stride, else True with
    ``out`` filled. Loops over the axes before ``axis`` enclose a loop over the inputs, each
    copied over its axes from ``axis`` on; the last axis is the row. One body serves any
    number of inputs, so Numba compiles one per rank, axis and array type. Where ``axis`` is
    not the first, ``concat_parallel`` does the same with the axes before it flattened into
    one ``prange`` loop (Numba compiles it on its first call)."""
    header = (f"# prelude {_prelude_hash()}\n"   # Numba's disk cache tracks this file only
              f"# fusejit concatenate loop (generated): rank {ndim}, along axis {axis}\n"
              f"import numba\n\nfrom fusejit.codegen.prelude import crow, unit_row\n")
    functions = [_function("concat", ndim, axis, parallel=False)]
    if axis:
        functions.append(_function("concat_parallel", ndim, axis, parallel=True))
    return header + "".join(functions)


def _function(name: str, ndim: int, axis: int, parallel: bool) -> str:
    lines = [f"def {name}(out, inputs):",
             "    if not unit_row(out):",
             "        return False",
             "    for j in range(len(inputs)):",
             "        if not unit_row(inputs[j]):",
             "            return False"]
    if parallel:
        outer = "        "
        lines += _flat_outer(axis)
    else:
        outer = "    "
        for d in range(axis):
            lines.append(f"{outer}for i{d} in range(out.shape[{d}]):")
            outer += "    "
    lines += _copies(ndim, axis, outer)
    decorator = (f"@numba.njit(cache=True, error_model=\"numpy\""
                 f"{', parallel=True' if parallel else ''})")
    return "\n\n" + decorator + "\n" + "\n".join(lines) + "\n"


def _flat_outer(axis: int) -> list[str]:
    """One ``prange`` loop over the axes before ``axis``, each index recovered from the flat
    one (the last of them varies fastest, as in memory; Numba refuses to reassign ``flat``)."""
    count = " * ".join(f"out.shape[{d}]" for d in range(axis))
    lines = [f"    for flat in numba.prange({count}):"]
    for d in range(axis):
        inner = " * ".join(f"out.shape[{e}]" for e in range(d + 1, axis))
        index = f"flat // ({inner})" if inner else "flat"
        lines.append(f"        i{d} = {index}" + (f" % out.shape[{d}]" if d else ""))
    return lines


def _copies(ndim: int, axis: int, outer: str) -> list[str]:
    """The loop over the inputs at indent ``outer``: each input's rows copied into place."""
    last = ndim - 1
    each = outer + "    "   # the body of the loop over the inputs
    lines = [f"{outer}start = 0",
             f"{outer}for j in range(len(inputs)):",
             f"{each}part = inputs[j]"]
    indent = each
    for d in range(axis, last):
        lines.append(f"{indent}for i{d} in range(part.shape[{d}]):")
        indent += "    "
    lead = [f"i{d}" for d in range(last)]
    into = [f"start + i{d}" if d == axis else f"i{d}" for d in range(last)]
    shift = "start + " if axis == last else ""
    return lines + [f"{indent}src = crow(part, {_tuple(lead)})",
                    f"{indent}dst = crow(out, {_tuple(into)})",
                    f"{indent}for k in range(part.shape[{last}]):",
                    f"{indent}    dst[{shift}k] = src[k]",
                    f"{each}start += part.shape[{axis}]",
                    "    return True"]


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
