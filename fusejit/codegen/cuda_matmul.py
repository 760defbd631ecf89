"""``matmul`` as a generated tiled shared-memory CUDA kernel, its elementwise epilogue fused
into the store.

Each block of ``TILE x TILE`` threads computes one square tile of one batch entry's output
(grid-stride over batch x tiles), ``reg x reg`` elements per thread in registers (64x64 tiles,
or 32x32 where a small output would leave multiprocessors idle): per step of the inner
dimension it stages strips of ``a`` and ``b`` in shared memory, then every thread accumulates
its elements in the operands' dtype (as BLAS does). Operands are read through their strides,
so a transposed operand (a ``permute`` view) costs no copy; batch dims broadcast NumPy style
(a batch dim of 1 reads index 0).

The epilogue is a fused elementwise node whose only use of the matmul result is at the
result's own shape: its statements run on the accumulator before the store, so the matmul's
output is never written to memory.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..ir import Node
from . import cuda_launch, source_cache
from . import cuda_skinny as skinny
from .cuda_emit import Statements, element_lines, indent, unravel_lines
from .cuda_reduce import ctor
from .numba_cuda import HEADER, CudaKernel, load_cuda_module, prelude_hash

MATMUL_KINDS = "iuf"
MIN_BLOCKS = 128   # a 64x64 tile only where it still gives this many blocks (an H200: 132 SMs)


def matmul_supported(node: Node) -> bool:
    a, b = (v.type for v in node.inputs)
    return (a.ndim >= 2 and b.ndim >= 2 and a.dtype == b.dtype == node.out.type.dtype
            and a.dtype.kind in MATMUL_KINDS and a.dtype != np.float16)


def epilogue_fits(matmul: Node, fused: Node | None) -> bool:
    """Whether ``fused`` can run as ``matmul``'s store epilogue."""
    if fused is None or fused.op != "fused" or fused.attr.get("kind") != "elementwise":
        return False
    body = fused.attr["body"]
    shapes = {v.type.shape for n in body.nodes for v in n.outputs}
    return shapes == {matmul.out.type.shape} and matmul.out in fused.inputs


def build_cuda_matmul(node: Node, epilogue: Node | None = None) -> CudaKernel:
    out = node.out.type
    batch = out.shape[:-2]
    a, b = (v.type for v in node.inputs)
    m, n, k = out.shape[-2], out.shape[-1], a.shape[-1]
    wide = 4 * cuda_launch.MATMUL_TILE
    count = int(np.prod(batch, dtype=np.int64))
    reg = register_block(count * -(-m // wide) * -(-n // wide))
    fused = epilogue and (node, epilogue)
    if 0 < m <= skinny.SKINNY_ROWS:
        source = skinny.skinny_file(kernel_frame(a.shape, b.shape, out.shape, fused),
                                    out.shape, out.dtype, _store_lines)
        tiles = count * -(-n // skinny.WIDTH)
        rule, shape = functools.partial(skinny.skinny_config, tiles), f"split-K {skinny.WIDTH}"
    else:
        source = matmul_file(a.shape, b.shape, out.shape, out.dtype, fused, reg)
        tile = reg * cuda_launch.MATMUL_TILE
        tiles = count * -(-m // tile) * -(-n // tile)
        rule = functools.partial(cuda_launch.tiles_config, tiles)
        shape = f"{tile}x{tile} ({reg}x{reg} per thread)"
    key = source_cache.source_key(source)
    module = load_cuda_module(key, source)
    body_nodes = epilogue.attr["body"].nodes if epilogue is not None else ()
    source_ops = [(node.op, node.loc)] + [(n.op, n.loc) for n in body_nodes]
    name = (epilogue.attr.get("name") if epilogue is not None else None) or "k_matmul"
    extra = [v.type for v in epilogue.inputs if v is not node.out] if epilogue else []
    outs = [v.type for v in epilogue.outputs] if epilogue is not None else [out]
    header = (f"# kernel {name}  target=cuda  kind=matmul  out=[{'x'.join(map(str, out.shape))}]"
              f"  tile={shape}  epilogue={len(body_nodes)} ops"
              f"  key={key}\n")
    return CudaKernel(name, key, header + source, source_ops, module,
                      sizes=(*batch, m, n, k), config_rule=rule,
                      in_types=[a, b, *extra], out_types=outs, kind="matmul")


def register_block(tiles_64: int) -> int:
    """Outputs per thread along each axis: 4 (a 64x64 tile per block) where that still gives
    ``MIN_BLOCKS`` blocks, else 2 (32x32), so that a small output keeps the GPU busy."""
    return 4 if tiles_64 >= MIN_BLOCKS else 2


def matmul_file(a_shape, b_shape, out_shape, dtype, fused, reg: int = 4) -> str:
    """A ``TILE x TILE`` block of threads computes a ``reg*TILE`` square tile of the output,
    ``reg x reg`` elements per thread, held in registers (``acc_r_c``: the loops are unrolled
    here); per ``TILE`` step of the inner dimension the block stages ``reg*TILE x TILE`` of
    ``a`` and ``TILE x reg*TILE`` of ``b`` in shared memory."""
    frame = kernel_frame(a_shape, b_shape, out_shape, fused)
    rank, batch, sizes, ab = len(out_shape), frame.batch, frame.sizes, frame.ab
    stmts, outputs, params = frame.stmts, frame.outputs, frame.params
    tile_loop = unravel_lines("rest0", batch) if batch else []
    ctor_, tile = ctor(dtype), cuda_launch.MATMUL_TILE
    lines = [f"# fusejit CUDA matmul (generated): rank={rank} reg={reg}",
             f"# prelude {prelude_hash()}", *HEADER,
             f"TILE = {tile}", f"WIDE = {reg * tile}",
             "", "", "@cuda.jit(cache=True)", f"def kernel({', '.join(params)}):"]
    body = [f"sa = cuda.shared.array((WIDE, TILE), {ctor_})",
            f"sb = cuda.shared.array((TILE, WIDE), {ctor_})",
            "tx = cuda.threadIdx.x", "ty = cuda.threadIdx.y",
            "tiles_m = (m + WIDE - 1) // WIDE", "tiles_n = (n + WIDE - 1) // WIDE",
            f"total = {' * '.join(sizes[:-3] + ['tiles_m', 'tiles_n'])}",
            "for t in range(cuda.blockIdx.x, total, cuda.gridDim.x):"]
    grid = [(r, c) for r in range(reg) for c in range(reg)]
    per_tile = ["tj = t % tiles_n", "rest0 = t // tiles_n", "ti = rest0 % tiles_m",
                "rest0 = rest0 // tiles_m", *tile_loop,
                "row0 = ti * WIDE + ty", "col0 = tj * WIDE + tx",
                *[f"acc_{r}_{c} = {ctor_}(0)" for r, c in grid],
                "for k0 in range(0, k, TILE):"]
    zero = f"{ctor_}(0)"
    loads = []
    for r in range(reg):
        loads += [f"row = row0 + {r * tile}",
                  f"sa[ty + {r * tile}, tx] = a[{ab[0]}row, k0 + tx] if row < m and k0 + tx < k "
                  f"else {zero}",
                  f"col = col0 + {r * tile}",
                  f"sb[ty, tx + {r * tile}] = b[{ab[1]}k0 + ty, col] if k0 + ty < k and col < n "
                  f"else {zero}"]
    inner = [f"a{r} = sa[ty + {r * tile}, kk]" for r in range(reg)]
    inner += [f"b{c} = sb[kk, tx + {c * tile}]" for c in range(reg)]
    inner += [f"acc_{r}_{c} = {ctor_}(acc_{r}_{c} + a{r} * b{c})" for r, c in grid]
    per_tile += indent(loads + ["cuda.syncthreads()", "for kk in range(TILE):",
                                *indent(inner), "cuda.syncthreads()"])
    for r, c in grid:
        per_tile += [f"row = row0 + {r * tile}", f"col = col0 + {c * tile}", f"acc = acc_{r}_{c}",
                     "if row < m and col < n:"]
        per_tile += indent(_store_lines(stmts, outputs, out_shape))
    body += indent(per_tile)
    return "\n".join(lines + indent(body)) + "\n"


@dataclass
class Frame:
    """What both matmul kernels share: sizes, parameters, the operands' batch indices and
    the fused epilogue's statements."""

    batch: list
    sizes: list
    params: list
    ab: tuple
    stmts: object
    outputs: list


def kernel_frame(a_shape, b_shape, out_shape, fused) -> Frame:
    batch = list(range(len(out_shape) - 2))
    sizes = [f"n{d}" for d in batch] + ["m", "n", "k"]
    stmts, extra, outputs = _epilogue(fused)
    params = sizes + ["a", "b"] + [f"in{j}" for j in extra] + \
        [f"out{k}" for k in range(max(len(outputs), 1))]
    ab = (_batch_index(a_shape, out_shape), _batch_index(b_shape, out_shape))
    return Frame(batch, sizes, params, ab, stmts, outputs)


def _batch_index(shape, out_shape) -> str:
    """Leading index text of an operand's batch dims, broadcast against the output's."""
    parts = []
    offset = len(out_shape) - len(shape)
    for j, size in enumerate(shape[:-2]):
        dim = offset + j
        parts.append("0" if size == 1 and out_shape[dim] != 1 else f"i{dim}")
    return "".join(f"{p}, " for p in parts)


def _epilogue(fused):
    if not fused:
        return None, [], []
    matmul, epilogue = fused
    body = epilogue.attr["body"]
    stmts = Statements(body)
    position = list(epilogue.inputs).index(matmul.out)
    stmts.names[body.inputs[position]] = "acc"
    stmts.fixed.add(body.inputs[position])
    extra = [j for j, v in enumerate(epilogue.inputs) if v is not matmul.out]
    # Epilogue inputs keep their body position as in<j>; the matmul result is not an input.
    return stmts, extra, list(enumerate(body.outputs))


def _store_lines(stmts, outputs, out_shape) -> list[str]:
    exprs = [f"i{d}" for d in range(len(out_shape) - 2)] + ["row", "col"]
    if stmts is None:
        return [f"out0[{', '.join(exprs)}] = acc"]
    return element_lines(stmts, stmts.body.nodes, tuple(out_shape), exprs, outputs)
