"""The CUDA runtime: an optimized graph lowered to device steps.

``lower_cuda(graph, guards)`` turns each node into a step over device arrays: a generated
kernel (``fused`` nodes; ``matmul`` as a tiled kernel, with a following elementwise kernel fused
into its store), a device view (views: a new shape/strides over the same memory, computed once
here), launches into a buffer (pad, concatenate, setitem, gather: ``codegen/cuda_index.py``),
or a host round-trip (other injective and opaque ops, and whatever the CUDA code generator
declines: copy to the host, NumPy's reference, copy back; the kernel list says so).

``CudaProgram.run(inputs)`` copies NumPy inputs to the device once per call, launches every
kernel on one stream, and returns device arrays when any input was one, else NumPy copies.
Intermediates live in one device arena planned here (aligned first fit over step lifetimes)
and reused across calls; results the caller can see get fresh buffers from a pool
(``codegen/cuda_pool.py``: the memory of results that died is taken again).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..codegen import cuda_arrays as arrays
from ..codegen.cuda_index import build_cuda_injective, copy_kernel, copy_node
from ..codegen.cuda_matmul import build_cuda_matmul, epilogue_fits, matmul_supported
from ..codegen.numba_cuda import build_cuda_kernel
from ..ir import Graph, Lit, Node, TensorType, Var
from ..ir.interpret import run_node
from ..passes.rewrite import is_view
from .program import GuardFailed, _place_checks, host_call

ALIGN = 256


def cuda_usable() -> bool:
    """A real GPU (``numba.cuda.is_available()``), not the simulator."""
    from . import gpu
    return gpu.cuda_available() and not simulator_active()


def simulator_active() -> bool:
    return arrays.simulator_active()


@dataclass
class HostStepInfo:
    """A node run on the host: listed with the kernels so that dumps show the round-trip."""

    name: str
    node: Node
    reason: str = ""
    key: str = "host"
    kind: str = "host"

    @property
    def source_ops(self):
        return [(self.node.op, self.node.loc)]

    @property
    def source(self) -> str:
        return (f"# {self.name}  target=cuda  kind=host round-trip: copy to host, "
                f"NumPy reference (fusejit.ir.ops.evaluate), copy back\n# why: {self.reason}\n")


@dataclass
class Step:
    kind: str                    # "kernel" | "view" | "host"
    reads: tuple                 # Vars (and Lits) read
    writes: tuple                # Vars written
    node: Node
    kernel: object = None        # CudaKernel for "kernel"
    layouts: list = field(default_factory=list)   # "view": (root Var, layout) per output


class CudaProgram:
    writes = caller_writes = frozenset()   # every write goes into a copy (``Program``'s may not)
    donated = MappingProxyType({})          # no kernel stores into the caller's arrays

    def __init__(self, graph: Graph, steps: list[Step], kernels: list, checks: dict,
                 arena_offsets: dict, arena_bytes: int, roots: dict):
        self.graph, self.steps, self.kernels, self.checks = graph, steps, kernels, checks
        self.arena_offsets, self.arena_bytes, self.roots = arena_offsets, arena_bytes, roots
        self._arena, self._arena_views, self._stream = None, {}, None
        self._literals: dict = {}   # Lit -> its device copy
        self._lock = threading.Lock()
        self._last_read = _last_reads(steps, graph)
        self._view_node = {var: step.node for step in steps   # host steps too (x[::-1])
                           if step.kind == "view" or is_view(step.node) for var in step.writes}
        self._shared = _host_shared(graph, self._view_node)
        self._checked = [k for k in kernels if hasattr(k, "check")]   # device index bounds
        self._settled = True   # the last call ran to its end

    # -- the call -------------------------------------------------------------------------
    def run(self, inputs) -> list:
        with self._lock:
            stream = self._ensure_device()
            arrays.recycle()
            self._reset_checks(stream)
            on_device = any(arrays.is_device_array(x) for x in inputs)
            env = {var: self._to_device(x, var, stream)
                   for var, x in zip(self.graph.inputs, inputs, strict=True)}
            self._check(-1, env, stream)
            for index, step in enumerate(self.steps):
                self._run_step(step, env, stream)
                self._check(index, env, stream)
                for var in self._last_read.get(index, ()):
                    env.pop(var, None)
            results = self._results(env, inputs, on_device, stream)   # synchronized
            self._settled = True
            for kernel in self._checked:
                kernel.check()     # an index out of range: the call traces again, NumPy raises
            return results

    def _reset_checks(self, stream) -> None:
        """Clear the index flags; after a call that raised midway, once its queued kernels
        are done (one of them could set a flag after the reset)."""
        if not self._checked:
            return
        if not self._settled:
            stream.synchronize()
        self._settled = False
        for kernel in self._checked:
            kernel.reset()

    def _ensure_device(self):
        from numba import cuda
        if self._stream is None:
            self._stream = cuda.stream()
            if self.arena_bytes:
                self._arena = arrays.empty((self.arena_bytes,), np.uint8, self._stream)
        return self._stream

    def _to_device(self, value, var: Var, stream):
        if not arrays.is_device_array(value):
            return arrays.upload(np.asarray(value, var.type.dtype), stream)
        value = arrays.as_numba(value)
        return value if arrays.is_c_contiguous(value) else self._copy(value, var, stream)

    def _copy(self, value, var: Var, stream):
        kernel = copy_kernel(var.type)
        out = arrays.empty(var.type.shape, var.type.dtype, stream)
        kernel.launch([arrays.padded(value)], [arrays.padded(out)], stream)
        return out

    def _run_step(self, step: Step, env, stream) -> None:
        if step.kind == "view":
            for var, (root, layout) in zip(step.writes, step.layouts, strict=True):
                env[var] = arrays.view(env[root], *layout, var.type.dtype)
        elif step.kind == "kernel":
            outs = [self._buffer(var, stream) for var in step.writes]
            ins = [arrays.padded(self._value(v, env, stream)) for v in step.reads]
            step.kernel.launch(ins, [arrays.padded(o) for o in outs], stream)
            env.update(zip(step.writes, outs, strict=True))
        else:
            host = [self._host_value(v, env, stream) for v in step.reads]
            results = run_node(step.node, host)
            env.update({var: arrays.upload(np.asarray(r, var.type.dtype), stream)
                        for var, r in zip(step.writes, results, strict=True)})

    def _buffer(self, var: Var, stream):
        offset = self.arena_offsets.get(var)
        if offset is None:
            return arrays.empty(var.type.shape, var.type.dtype, stream)
        view = self._arena_views.get(var)
        if view is None:
            shape, strides, _ = arrays.root_layout(var.type)
            view = arrays.view(self._arena, shape, strides, offset, var.type.dtype)
            self._arena_views[var] = view
        return view

    def _value(self, value, env, stream):
        if isinstance(value, Lit):   # a kernel's literal operand (a mean's count): sent once
            device = self._literals.get(value)
            if device is None:
                device = self._literals[value] = arrays.upload(np.asarray(value.value), stream)
            return device
        return env[value]

    def _host_value(self, value, env, stream) -> np.ndarray:
        if isinstance(value, Lit):
            return np.asarray(value.value)
        array = arrays.download(env[value], stream)
        stream.synchronize()
        # a 0-d array went up as shape (1,) (``np.ascontiguousarray``): an index must be 0-d
        return array.reshape(value.type.shape) if array.shape != value.type.shape else array

    def _check(self, index: int, env, stream) -> None:
        for guard in self.checks.get(index, ()):
            if not guard.holds(self._host_value(guard.slot, env, stream)):
                raise GuardFailed(guard)

    def _results(self, env, inputs, on_device: bool, stream) -> list:
        positions = {var: j for j, var in enumerate(self.graph.inputs)}
        if not on_device:
            made = {var: inputs[j] for var, j in positions.items()}
            results = [self._host_result(value, env, made, stream)
                       for value in self.graph.outputs]
            stream.synchronize()
            return results
        results = []
        for value in self.graph.outputs:
            if isinstance(value, Var) and value in positions and \
                    arrays.is_device_array(inputs[positions[value]]):
                results.append(inputs[positions[value]])
            else:
                result = self._value(value, env, stream)
                if isinstance(value, Var) and tuple(result.shape) != value.type.shape:
                    result = result.reshape(value.type.shape)   # a 0-d array went up (1,)
                results.append(result)
        stream.synchronize()
        return results

    def _host_result(self, value, env, made: dict, stream):
        """A result on the host, sharing memory as NumPy's does: a view of an argument is that
        view of the caller's array, a view of another result a view of its one download, and a
        result returned twice one object (each came back from the device as its own copy)."""
        if not isinstance(value, Var):
            return self._host_value(value, env, stream)
        if value not in made:
            node = self._view_node.get(value)
            if node is not None and node.inputs[0] in self._shared:
                base = self._host_result(node.inputs[0], env, made, stream)
                made.update(zip(node.outputs, host_call(node)(base), strict=True))
            else:
                made[value] = self._host_value(value, env, stream)
        return made[value]

    @staticmethod
    def write_back(target, value) -> None:
        """Replay an in-place update of an argument (host or device) with ``value``."""
        from .device import copy_into
        copy_into(target, value)


def _host_shared(graph: Graph, view_node: dict) -> set:
    """Vars whose memory NumPy's results share with the caller's: the arguments, the results,
    and views of those; views among them are taken on the host from the caller's arguments
    and the downloaded results."""
    shared = set(graph.inputs) | {v for v in graph.outputs if isinstance(v, Var)}
    for node in {id(n): n for n in view_node.values()}.values():   # in program order
        if isinstance(node.inputs[0], Var) and node.inputs[0] in shared:
            shared.update(node.outputs)
    return shared


def write_into(target, value) -> None:
    """``value`` (a host or device array of ``target``'s shape) into the device array
    ``target``: one transfer where the target is C-contiguous, else the generated copy kernel,
    which stores through the target's strides. CUDA transfers contiguous buffers only, and
    Numba's own assignment refuses negative strides and strided host sources (both seen on an
    H200: ``d[:, ::2] += 1`` and ``d[::-1] += 1`` raised on every call)."""
    target = arrays.as_numba(target)
    if arrays.is_c_contiguous(target):
        if arrays.is_device_array(value) and not arrays.is_c_contiguous(value):
            value = arrays.download(value, 0)
        target.copy_to_device(np.ascontiguousarray(value) if isinstance(value, np.ndarray)
                              else value)
        return
    if not arrays.is_device_array(value):
        value = arrays.upload(np.asarray(value, target.dtype), 0)
    kernel = copy_kernel(TensorType(tuple(target.shape), np.dtype(target.dtype)))
    kernel.launch([arrays.padded(arrays.as_numba(value))], [arrays.padded(target)], 0)


def _last_reads(steps: list[Step], graph: Graph) -> dict[int, list[Var]]:
    """Step index -> Vars nothing reads afterwards (dropped from the environment)."""
    last: dict[Var, int] = {}
    for index, step in enumerate(steps):
        for var in (*step.reads, *step.writes, *(root for root, _ in step.layouts)):
            if isinstance(var, Var):
                last[var] = index
    keep = {v for v in graph.outputs if isinstance(v, Var)}
    result: dict[int, list[Var]] = {}
    for var, index in last.items():
        if var not in keep:
            result.setdefault(index, []).append(var)
    return result


def lower_cuda(graph: Graph, guards=()) -> CudaProgram:
    """Lower an optimized graph to a CudaProgram (kernels are generated and imported here)."""
    return _Lowering(graph).program(guards)


class _Lowering:
    def __init__(self, graph: Graph):
        self.graph, self.steps, self.kernels = graph, [], []
        self.roots = {var: (var, arrays.root_layout(var.type)) for var in graph.inputs}
        self.epilogue_of: dict[Node, Node] = {}
        outputs = {v for v in graph.outputs if isinstance(v, Var)}
        users = graph.users()
        for node in graph.nodes:
            consumers = users.get(node.out, []) if len(node.outputs) == 1 else []
            if (node.op == "matmul" and matmul_supported(node) and node.out not in outputs
                    and len(consumers) == 1 and epilogue_fits(node, consumers[0])
                    and list(consumers[0].inputs).count(node.out) == 1):
                self.epilogue_of[consumers[0]] = node

    def program(self, guards) -> CudaProgram:
        deferred = set(self.epilogue_of.values())
        for node in self.graph.nodes:
            if node in deferred:
                continue
            if node in self.epilogue_of:
                self._matmul(self.epilogue_of[node], node)
            elif node.op == "fused":
                self._built(node, build_cuda_kernel)
            elif node.op == "matmul" and matmul_supported(node):
                self._matmul(node, None)
            elif is_view(node):
                self._view(node)
            else:
                self._built(node, build_cuda_injective)
        raw = [(None, step.reads, step.writes, step.node) for step in self.steps]
        checks = _place_checks(guards, tuple(self.graph.outputs), raw)
        offsets, size = self._arena()
        return CudaProgram(self.graph, self.steps, self.kernels, checks, offsets, size,
                           self.roots)

    def _kernel_step(self, kernel, reads, writes, node) -> None:
        self.kernels.append(kernel)
        self.steps.append(Step("kernel", tuple(reads), tuple(writes), node, kernel))
        for var in writes:
            self.roots[var] = (var, arrays.root_layout(var.type))

    def _built(self, node: Node, build) -> None:
        """``build(node)``'s kernel as a step, or a host step where it declines: fused nodes
        (``build_cuda_kernel``), pad/concatenate/setitem/gather as launches
        (``build_cuda_injective``)."""
        try:
            kernel = build(node)
        except NotImplementedError as exc:
            self._host(node, str(exc))
            return
        self._kernel_step(kernel, node.inputs, node.outputs, node)

    def _matmul(self, node: Node, epilogue: Node | None) -> None:
        kernel = build_cuda_matmul(node, epilogue)
        if epilogue is None:
            self._kernel_step(kernel, node.inputs, node.outputs, node)
            return
        extra = [v for v in epilogue.inputs if v is not node.out]
        self._kernel_step(kernel, [*node.inputs, *extra], epilogue.outputs, epilogue)

    def _view(self, node: Node) -> None:
        source = node.inputs[0]
        if not isinstance(source, Var) or len(node.inputs) != 1:
            self._host(node, "view of a literal")
            return
        try:
            layouts = self._layouts(node, source)
        except arrays.NeedsCopy as exc:
            if node.op != "reshape":
                self._host(node, str(exc))
                return
            copy = copy_node(source)
            self._kernel_step(build_cuda_kernel(copy), copy.inputs, copy.outputs, copy)
            layouts = self._layouts(node, copy.out)
        for var, item in zip(node.outputs, layouts, strict=True):
            self.roots[var] = item
        self.steps.append(Step("view", tuple({root: None for root, _ in layouts}),
                               tuple(node.outputs), node, layouts=layouts))

    def _layouts(self, node: Node, source: Var) -> list:
        root, layout = self.roots[source]
        found = arrays.view_layouts(node, layout, root.type.nbytes, source.type.dtype)
        return [(root, item) for item in found]

    def _host(self, node: Node, reason: str) -> None:
        name = f"host_{node.attr.get('name') or node.op}"
        self.kernels.append(HostStepInfo(name, node, reason=reason))
        self.steps.append(Step("host", tuple(node.inputs), tuple(node.outputs), node))
        for var in node.outputs:
            self.roots[var] = (var, arrays.root_layout(var.type))

    def _arena(self) -> tuple[dict, int]:
        """Aligned first fit over step lifetimes of kernel-written buffers the caller never
        sees; a view's read keeps its root buffer alive."""
        exposed = {self.roots[v][0] for v in self.graph.outputs
                   if isinstance(v, Var) and v in self.roots}
        spans: dict[Var, list[int]] = {}
        for index, step in enumerate(self.steps):
            for var in step.reads:
                root = self.roots.get(var, (None,))[0] if isinstance(var, Var) else None
                if root in spans:
                    spans[root][1] = index
            if step.kind == "kernel":
                spans.update({v: [index, index] for v in step.writes if v not in exposed})
        return arena_offsets(spans)


def arena_offsets(spans: dict) -> tuple[dict, int]:
    """Each buffer the lowest ``ALIGN``-aligned offset overlapping no buffer live with it."""
    offsets: dict[Var, int] = {}
    padded = {var: -(-max(var.type.nbytes, 1) // ALIGN) * ALIGN for var in spans}
    for var, (start, end) in sorted(spans.items(), key=lambda item: (item[1][0], item[0].uid)):
        busy = sorted((offsets[o], offsets[o] + padded[o]) for o, (s, e) in spans.items()
                      if o in offsets and s <= end and start <= e)
        offset = 0
        for low, high in busy:
            if offset + padded[var] <= low:
                break
            offset = max(offset, high)
        offsets[var] = offset
    return offsets, max((offsets[v] + padded[v] for v in offsets), default=0)


__all__ = ["CudaProgram", "arena_offsets", "cuda_usable", "lower_cuda", "simulator_active"]
