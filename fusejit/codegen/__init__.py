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

from .. import config
from ..ir import Graph, Lit, Node, Var
from . import reductions, source_cache
from .kernel import CompiledKernel, KernelPlan, plan_kernel
from .numba_cpu import generate_source

__all__ = ["CompiledKernel", "KernelPlan", "build_kernel", "kernel_source", "kernel_stats"]


def build_kernel(node: Node, target: str = "cpu", in_place=()) -> CompiledKernel:
    """Generate, cache and import the kernel for a ``fused`` node. ``in_place``: (output,
    input) positions of outputs the kernel writes over that input (elementwise kernels only;
    ``plan_memory.in_place_outputs``)."""
    if node.op != "fused":
        raise ValueError(f"build_kernel takes a fused node, got {node.op!r}")
    if target != "cpu":
        raise NotImplementedError(f"target {target!r}: only the Numba CPU backend exists yet")
    file_source, plan = kernel_source(node, in_place)
    key = source_cache.source_key(file_source)
    module = source_cache.load_module(key, file_source)
    source_ops = [(n.op, n.loc) for n in node.attr["body"].nodes]
    header = _header(node, plan, key, source_ops)
    return CompiledKernel(_name(node), key, header + file_source, source_ops, module, plan, node,
                          in_place)


def kernel_source(node: Node, in_place=()) -> tuple[str, KernelPlan]:
    """The structural file source (what the key hashes) and the plan for a fused node.

    Identical bodies (the same kernel in each of 12 transformer layers) are generated once:
    the source is remembered under the body's exact structure, shapes included. The plan is
    always rebuilt: it refers to this body's own Vars. The vector width the source asks for
    (``config.vector_bits``) is part of the key."""
    body = node.attr["body"]
    bits = config.vector_bits()
    key = _structure_key(body), tuple(in_place), bits
    source = _SOURCES.get(key)
    if source is None:
        source, plan = generate_source(body, in_place, bits)
        if len(_SOURCES) >= _SOURCES_MAX:
            _SOURCES.pop(next(iter(_SOURCES)))
        _SOURCES[key] = source
    else:
        plan = plan_kernel(body)
    return f"# prelude {_prelude_hash()}\n{source}", plan


_SOURCES: dict[tuple, str] = {}
_SOURCES_MAX = 4096


def _structure_key(body: Graph) -> tuple:
    """Everything ``generate_source`` reads, without Var identities or source lines: ops,
    attributes (by ``repr``, so that -0.0 and 0.0 differ), operand positions, literals by
    their bytes, and every type."""
    position = {var: ("in", j) for j, var in enumerate(body.inputs)}
    nodes = []
    for index, node in enumerate(body.nodes):
        refs = tuple(position[v] if isinstance(v, Var) else _literal_key(v) for v in node.inputs)
        nodes.append((node.op, repr(node.attrs), refs, tuple(map(_type_key, node.outputs))))
        for k, out in enumerate(node.outputs):
            position[out] = ("v", index, k)
    outputs = tuple(position[v] if isinstance(v, Var) else _literal_key(v) for v in body.outputs)
    return tuple(map(_type_key, body.inputs)), tuple(nodes), outputs


def _type_key(var: Var) -> tuple:
    return var.type.shape, var.type.dtype.str, var.type.weak


def _literal_key(lit: Lit) -> tuple:
    return "lit", lit.dtype.str, lit.value.tobytes()


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
    lines += [f"# accumulator: {reductions.describe(r, plan.zero_d, plan.columns)}"
              for r in plan.reduces]
    return "\n".join(lines + fuses_lines(source_ops)) + "\n"


def fuses_lines(source_ops) -> list[str]:
    """The header's ``# fuses:`` block: each source op with its ``file:line``."""
    lines = ["# fuses:"]
    for op, loc in source_ops:
        where = f"{loc.file}:{loc.line}" if loc is not None else "<unknown>"
        lines.append(f"#   {op:<12} {where}")
    return lines
