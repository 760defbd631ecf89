"""Kernel codegen: a ``fused`` node -> Python source for Numba -> a callable ``CompiledKernel``.

One source file (and one Numba dispatcher) is shared by every fused node with the same
structure: names, shapes and source lines stay out of the file; each ``CompiledKernel`` carries
its own header naming the kernel and the source ops it fuses.
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

# Numba's OpenMP workers must sleep, not spin, between kernels: a BLAS call follows most of
# them, and on a 2-core machine a spinning worker takes a core from OpenBLAS (measured: a
# matmul 2x slower) while a descheduled spinner makes every prange launch wait a scheduler
# tick (8 ms, measured). libgomp reads this once, when Numba first loads it, which is after
# this import; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ..ir import Node
from . import reductions, source_cache
from .kernel import CompiledKernel, KernelPlan
from .numba_cpu import generate_source

__all__ = ["CompiledKernel", "KernelPlan", "build_kernel", "kernel_source", "kernel_stats"]


def build_kernel(node: Node, target: str = "cpu") -> CompiledKernel:
    """Generate, cache and import the kernel for a ``fused`` node."""
    if node.op != "fused":
        raise ValueError(f"build_kernel takes a fused node, got {node.op!r}")
    if target != "cpu":
        raise NotImplementedError(f"target {target!r}: only the Numba CPU backend exists yet")
    file_source, plan = kernel_source(node)
    key = source_cache.source_key(file_source)
    module = source_cache.load_module(key, file_source)
    source_ops = [(n.op, n.loc) for n in node.attr["body"].nodes]
    header = _header(node, plan, key, source_ops)
    return CompiledKernel(_name(node), key, header + file_source, source_ops, module, plan, node)


def kernel_source(node: Node) -> tuple[str, KernelPlan]:
    """The structural file source (what the key hashes) and the plan for a fused node."""
    source, plan = generate_source(node.attr["body"])
    return f"# prelude {_prelude_hash()}\n{source}", plan


def kernel_stats() -> dict[str, int]:
    return source_cache.stats()


@functools.lru_cache(maxsize=1)
def _prelude_hash() -> str:
    # Numba's disk cache tracks only the kernel file, so a prelude change must change the key.
    here = Path(__file__).parent
    text = b"".join((here / name).read_bytes() for name in ("prelude.py", "vecmath.py"))
    return hashlib.sha256(text).hexdigest()[:12]


def _name(node: Node) -> str:
    return node.attr.get("name") or "kernel"


def _header(node: Node, plan: KernelPlan, key: str, source_ops) -> str:
    lines = [f"# kernel {_name(node)}  target=cpu  kind={plan.kind}  rank={plan.rank}  "
             f"key={key}",
             f"# loops: {' '.join(plan.loop_dims_text())}"]
    lines += [f"# accumulator: {reductions.describe(r)}" for r in plan.reduces]
    lines.append("# fuses:")
    for op, loc in source_ops:
        where = f"{loc.file}:{loc.line}" if loc is not None else "<unknown>"
        lines.append(f"#   {op:<12} {where}")
    return "\n".join(lines) + "\n"
