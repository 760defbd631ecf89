"""The Numba CUDA backend: a ``fused`` node -> ``@cuda.jit`` source -> a launchable kernel.

Generated source is written to ``<cache_dir>/cuda/<key>.py`` (atomically; the key hashes the
source, which holds no names, shapes or source lines) and imported as a module registered in
``sys.modules``, so Numba's ``cache=True`` can keep compiled code across processes. Sizes are
kernel arguments; launch configurations come from the iteration space and the device.

``CudaKernel.ptx(cc)`` compiles the kernel to PTX for a compute capability without a GPU, and
``ptx_report(kernel)`` assembles that PTX with ``ptxas -v`` (registers, shared memory, spills).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import types
from pathlib import Path

import numpy as np

from .. import config
from ..ir import Node
from . import cuda_launch, cuda_reduce, source_cache
from .cuda_emit import generate_body, kernel_signature
from .cuda_plan import CudaPlan, plan_cuda

__all__ = ["CudaKernel", "build_cuda_kernel", "load_cuda_module", "ptx_report", "ptxas_path"]

PACKAGE = "fusejit_cuda_kernels"
HEADER = ["import math", "", "import numpy as np", "from numba import cuda", "",
          "from fusejit.codegen.cuda_prelude import *  # noqa: F403", "", ""]
_modules: dict[str, types.ModuleType] = {}
_lock = threading.Lock()


def _numpy_compat() -> None:
    """numba-cuda 0.30 reads ``np.row_stack`` when it lowers array code, and NumPy 2.5 removed
    that alias of ``np.vstack``: every CUDA kernel then failed to compile and each signature
    ran eagerly (seen on the H200 machine's NumPy 2.5.2). The alias is put back."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


_numpy_compat()


class CudaKernel:
    """One kernel: the shared module plus this node's shapes and launch rule.

    ``launch(inputs, outputs, stream)`` runs it on device arrays of exactly the node's shapes
    (0-d arrays arrive as shape-(1,) views). ``sizes`` are the kernel's size arguments.
    """

    def __init__(self, name, key, source, source_ops, module, *, sizes, config_rule,
                 in_types, out_types, kind):
        self.name, self.key, self.source, self.source_ops = name, key, source, source_ops
        self.module, self.sizes, self.config_rule = module, tuple(sizes), config_rule
        self.in_types, self.out_types, self.kind = tuple(in_types), tuple(out_types), kind
        self._launch = cuda_launch.Launcher(module.kernel)

    def __repr__(self):
        return f"CudaKernel({self.name}, kind={self.kind}, key={self.key})"

    def launch(self, inputs, outputs, stream=0) -> None:
        blocks, threads = self.config_rule()
        self._launch(blocks, threads, stream, (*self.sizes, *inputs, *outputs))

    def argtypes(self) -> tuple:
        """Numba argument types for ahead-of-time PTX: inputs of any layout, C outputs."""
        from numba import types as nbtypes
        from numba.np.numpy_support import from_dtype
        sizes = [nbtypes.int64] * len(self.sizes)
        ins = [nbtypes.Array(from_dtype(t.dtype), max(t.ndim, 1), "A") for t in self.in_types]
        outs = [nbtypes.Array(from_dtype(t.dtype), max(t.ndim, 1), "C") for t in self.out_types]
        return tuple(sizes + ins + outs)

    def ptx(self, cc=(9, 0)) -> str:
        from numba import cuda
        function = getattr(self.module.kernel, "py_func", self.module.kernel)
        ptx, _ = cuda.compile_ptx(function, self.argtypes(), cc=cc)
        return ptx


def build_cuda_kernel(node: Node) -> CudaKernel:
    """Generate, cache and import the CUDA kernel for a ``fused`` node."""
    if node.op != "fused":
        raise ValueError(f"build_cuda_kernel takes a fused node, got {node.op!r}")
    body = node.attr["body"]
    plan = plan_cuda(body)
    file_source = kernel_file(plan)
    key = source_cache.source_key(file_source)
    module = load_cuda_module(key, file_source)
    source_ops = [(n.op, n.loc) for n in body.nodes]
    name = node.attr.get("name") or "kernel"
    header = _header(name, plan, key, source_ops)
    rule = functools.partial(_config_for, plan)
    return CudaKernel(name, key, header + file_source, source_ops, module,
                      sizes=plan.space, config_rule=rule,
                      in_types=[v.type for v in node.inputs],
                      out_types=[v.type for v in node.outputs], kind=plan.kind)


def kernel_file(plan: CudaPlan) -> str:
    """The structural module source: what the key hashes."""
    lines = [f"# fusejit CUDA kernel (generated): kind={plan.kind} rank={plan.rank} "
             f"axes={list(plan.axes)}", f"# prelude {prelude_hash()}"] + HEADER
    lines += ["@cuda.jit(cache=True)", kernel_signature(plan)] + generate_body(plan)
    return "\n".join(lines) + "\n"


def _config_for(plan: CudaPlan) -> tuple[int, int]:
    if plan.kind == "elementwise":
        return cuda_launch.elementwise_config(int(np.prod(plan.space)))
    rows = int(np.prod([plan.space[d] for d in plan.kept])) if plan.kept else 1
    cols = int(np.prod([plan.space[d] for d in plan.axes]))
    return cuda_launch.rows_config(rows, cols)


def _header(name, plan: CudaPlan, key, source_ops) -> str:
    space = "x".join(str(n) for n in plan.space)
    lines = [f"# kernel {name}  target=cuda  kind={plan.kind}  space=[{space}]  key={key}"]
    if plan.kind == "rows":
        lines.append(f"# one block per row: reduced dims {list(plan.axes)}, "
                     f"{len(plan.reduces)} phase(s)")
        lines += [f"# accumulator: {cuda_reduce.describe(n)}" for n in plan.reduces]
    else:
        lines.append("# grid-stride loop over the flat iteration space")
    lines.append("# fuses:")
    for op, loc in source_ops:
        where = f"{loc.file}:{loc.line}" if loc is not None else "<unknown>"
        lines.append(f"#   {op:<12} {where}")
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=1)
def prelude_hash() -> str:
    # Numba's disk cache tracks only the kernel file: a prelude change must change the key.
    text = (Path(__file__).parent / "cuda_prelude.py").read_bytes()
    return hashlib.sha256(text).hexdigest()[:12]


# -- modules ------------------------------------------------------------------------------------
def cuda_dir() -> Path:
    return source_cache.usable_dir(config.cache_dir() / "cuda")


def load_cuda_module(key: str, source: str) -> types.ModuleType:
    with _lock:
        module = _modules.get(key)
        if module is None:
            path = source_cache.ensure_file(cuda_dir() / f"{key}.py", source)
            module = source_cache.import_file(PACKAGE, f"{PACKAGE}.k_{key}", path, source)
            source_cache.guard_numba_cache(module, key)   # before a first launch loads them
            _modules[key] = module
        return module


# -- ptxas --------------------------------------------------------------------------------------
def ptxas_path() -> str | None:
    """ptxas from the nvidia-cuda-nvcc wheel (matches Numba's NVVM), else CUDA_HOME or PATH."""
    candidates = []
    try:
        import nvidia.cuda_nvcc as nvcc
        candidates += [Path(p) / "bin" / "ptxas" for p in nvcc.__path__]
    except ImportError:
        pass
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        candidates.append(Path(home) / "bin" / "ptxas")
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    return shutil.which("ptxas")


def ptx_report(kernel: CudaKernel, cc=(9, 0)) -> str:
    """The kernel's PTX assembled by ``ptxas -arch=sm_XY -v``: the resource report text
    (registers, shared memory, spill stores/loads). Raises RuntimeError on a ptxas error."""
    ptxas = ptxas_path()
    if ptxas is None:
        raise RuntimeError("ptxas not found (install numba-cuda[cu12] or set CUDA_HOME)")
    arch = f"sm_{cc[0]}{cc[1]}"
    with tempfile.TemporaryDirectory(prefix="fusejit-ptx-") as tmp:
        source = Path(tmp) / f"{kernel.key}.ptx"
        source.write_text(kernel.ptx(cc))
        done = subprocess.run([ptxas, f"-arch={arch}", "-v", str(source), "-o",
                               str(Path(tmp) / "out.cubin")], capture_output=True, text=True)
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise RuntimeError(f"ptxas failed for {kernel.name} ({kernel.key}):\n{text}")
    return f"# {kernel.name} ({kernel.key}) ptxas -arch={arch} -v\n{text}\n"
