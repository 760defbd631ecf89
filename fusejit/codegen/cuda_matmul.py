"""``matmul`` as a generated tiled shared-memory CUDA kernel, its elementwise epilogue fused
into the store.

Each block computes one ``TILE x TILE`` tile of one batch entry's output (grid-stride over
batch x tiles): per step of the inner dimension it stages a tile of ``a`` and of ``b`` in
shared memory, then every thread accumulates its output element in the operands' dtype (as
BLAS does). Operands are read through their strides, so a transposed operand (a ``permute``
view) costs no copy; batch dims broadcast NumPy style (a batch dim of 1 reads index 0).

The epilogue is a fused elementwise node whose only use of the matmul result is at the
result's own shape: its statements run on the accumulator before the store, so the matmul's
output is never written to memory.
"""
from __future__ import annotations

import functools

import numpy as np

from ..ir import Node
from . import cuda_launch, source_cache
from .cuda_emit import INDENT, Statements, element_lines, indent, unravel_lines
from .cuda_reduce import ctor
from .numba_cuda import HEADER, CudaKernel, load_cuda_module, prelude_hash

MATMUL_KINDS = "iuf"


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
    source = matmul_file(a.shape, b.shape, out.shape, out.dtype, epilogue and (node, epilogue))
    key = source_cache.source_key(source)
    module = load_cuda_module(key, source)
    body_nodes = epilogue.attr["body"].nodes if epilogue is not None else ()
    source_ops = [(node.op, node.loc)] + [(n.op, n.loc) for n in body_nodes]
    name = (epilogue.attr.get("name") if epilogue is not None else None) or "k_matmul"
    m, n, k = out.shape[-2], out.shape[-1], a.shape[-1]
    tile = cuda_launch.MATMUL_TILE
    tiles = int(np.prod(batch, dtype=np.int64)) * -(-m // tile) * -(-n // tile)
    rule = functools.partial(cuda_launch.tiles_config, tiles)
    extra = [v.type for v in epilogue.inputs if v is not node.out] if epilogue else []
    outs = [v.type for v in epilogue.outputs] if epilogue is not None else [out]
    header = (f"# kernel {name}  target=cuda  kind=matmul  out=[{'x'.join(map(str, out.shape))}]"
              f"  tile={tile}  epilogue={len(body_nodes)} ops  key={key}\n")
    return CudaKernel(name, key, header + source, source_ops, module,
                      sizes=(*batch, m, n, k), config_rule=rule,
                      in_types=[a, b, *extra], out_types=outs, kind="matmul")


def matmul_file(a_shape, b_shape, out_shape, dtype, fused) -> str:
    rank = len(out_shape)
    batch = list(range(rank - 2))
    sizes = [f"n{d}" for d in batch] + ["m", "n", "k"]
    stmts, extra, outputs = _epilogue(fused)
    params = sizes + ["a", "b"] + [f"in{j}" for j in extra] + \
        [f"out{k}" for k in range(max(len(outputs), 1))]
    ab = (_batch_index(a_shape, out_shape), _batch_index(b_shape, out_shape))
    tile_loop = unravel_lines("rest0", batch) if batch else []
    lines = [f"# fusejit CUDA matmul (generated): rank={rank}", f"# prelude {prelude_hash()}",
             *HEADER, f"TILE = {cuda_launch.MATMUL_TILE}", "", "",
             "@cuda.jit(cache=True)", f"def kernel({', '.join(params)}):"]
    body = [f"sa = cuda.shared.array((TILE, TILE), {ctor(dtype)})",
            f"sb = cuda.shared.array((TILE, TILE), {ctor(dtype)})",
            "tx = cuda.threadIdx.x", "ty = cuda.threadIdx.y",
            "tiles_m = (m + TILE - 1) // TILE", "tiles_n = (n + TILE - 1) // TILE",
            f"total = {' * '.join(sizes[:-3] + ['tiles_m', 'tiles_n'])}",
            "for t in range(cuda.blockIdx.x, total, cuda.gridDim.x):"]
    per_tile = ["tj = t % tiles_n", "rest0 = t // tiles_n", "ti = rest0 % tiles_m",
                "rest0 = rest0 // tiles_m", *tile_loop,
                "row = ti * TILE + ty", "col = tj * TILE + tx", f"acc = {ctor(dtype)}(0)",
                "for k0 in range(0, k, TILE):"]
    zero = f"{ctor(dtype)}(0)"
    per_tile += indent([f"sa[ty, tx] = a[{ab[0]}row, k0 + tx] if row < m and k0 + tx < k "
                        f"else {zero}",
                        f"sb[ty, tx] = b[{ab[1]}k0 + ty, col] if k0 + ty < k and col < n "
                        f"else {zero}",
                        "cuda.syncthreads()", "for kk in range(TILE):",
                        f"{INDENT}acc = {ctor(dtype)}(acc + sa[ty, kk] * sb[kk, tx])",
                        "cuda.syncthreads()"])
    per_tile += ["if row < m and col < n:"] + indent(_store_lines(stmts, outputs, out_shape))
    body += indent(per_tile)
    return "\n".join(lines + indent(body)) + "\n"


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
