"""Kernel description (``KernelPlan``: iteration space, regions, loads, the reduction) and the
callable ``CompiledKernel`` the runtime holds per fused node."""
from __future__ import annotations

import functools
import logging
import math
import os
import threading
from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph, Node, Var, ops
from . import reductions, relayout
from .outline import MIN_ROW
from .placement import MIN_BYTES, empty_apart
from .work import runs_parallel

log = logging.getLogger("fusejit.codegen")


@dataclass
class KernelPlan:
    """How a body maps onto loops. Rank-0 spaces are padded to ``(1,)`` (index ``0``).

    A reduce kernel loops over rows (the kept dims) and, per row, makes ``passes`` passes over
    the row's elements (the reduced dims). Pass ``p`` accumulates the reductions whose input
    has ``depth`` ``p`` (depends on ``p`` chained reductions), then computes the outer values
    of depth ``p + 1``; inner outputs are stored in the pass of their depth, a last pass stores
    those that depend on every reduction (softmax: max | exp, sum | div)."""

    kind: str
    space_shape: tuple[int, ...]            # padded iteration space (reduce: its input)
    n_inputs: int
    n_outputs: int
    reduces: tuple[Node, ...] = ()
    axes: tuple[int, ...] = ()
    keepdims: bool = False
    out_shape: tuple[int, ...] = ()
    region_of: dict = field(default_factory=dict)   # body Var -> "inner" | "outer"
    depth: dict = field(default_factory=dict)       # body Var -> chained reductions below it
    zero_d: bool = False    # a 0-d space (or a 0-d reduction's input), padded to (1,): no loop

    @property
    def reduce(self) -> Node | None:
        return self.reduces[0] if self.reduces else None

    @property
    def rank(self) -> int:
        return len(self.space_shape)

    @property
    def kept_dims(self) -> list[int]:
        return [d for d in range(self.rank) if d not in self.axes]

    @property
    def reduced_dims(self) -> list[int]:
        return list(self.axes)

    @property
    def passes(self) -> int:
        """Passes over each row: one per reduction depth, plus one for late inner stores."""
        if not self.reduces:
            return 1
        accumulating = 1 + max(self.depth[r.inputs[0]] for r in self.reduces)
        late = any(self.region_of[v] == "inner" and self.depth[v] >= accumulating
                   for v in self.depth if v in self.region_of)
        return accumulating + late

    @property
    def columns(self) -> bool:
        """A one-pass reduction that keeps the last axis (a column sum such as ``db =
        d.sum(axis=0)``) loops the reduced dims outside that axis, with one accumulator per
        element of it: the inner loop reads rows contiguously and vectorizes across columns,
        where walking each column down the rows would stride through memory."""
        return (self.reduce is not None and self.passes == 1 and self.rank - 1 in
                self.kept_dims and all(r.op not in ("argmax", "argmin") for r in self.reduces))

    @property
    def outer_kept_dims(self) -> list[int]:
        """Kept dims looped outside the reduced ones (all of them, except under ``columns``)."""
        return self.kept_dims[:-1] if self.columns else self.kept_dims

    @property
    def chunked(self) -> bool:
        """A one-pass reduction over every dim of a space of rank 2 or more (``np.exp(x).mean()``):
        its parallel variant splits dim 0 into chunks that reduce into partials, combined in
        order after the parallel loop. An argmax/argmin only when blocked (its partial index
        is then flat over the whole space; the per-element one counts within the chunk)."""
        return (self.reduce is not None and not self.kept_dims and not self.zero_d
                and self.rank >= 2 and self.passes == 1 and self.reduced_dims[0] == 0
                and all(r.op not in ("argmax", "argmin") or reductions.block_arg(r)
                        for r in self.reduces))

    @property
    def has_parallel_loop(self) -> bool:
        return not self.zero_d and (self.reduce is None or self.columns
                                    or bool(self.outer_kept_dims) or self.chunked)

    @property
    def size_names(self) -> list[str]:
        return [f"n{d}" for d in range(self.rank)]

    @property
    def input_names(self) -> list[str]:
        return [f"in{j}" for j in range(self.n_inputs)]

    @property
    def output_names(self) -> list[str]:
        return [f"out{k}" for k in range(self.n_outputs)]

    def loop_dims_text(self) -> list[str]:
        if self.reduce is None:
            return [f"i{d}" for d in range(self.rank)]
        if self.columns:
            return [f"i{d}" for d in self.outer_kept_dims] + ["|"] + [
                f"i{d}" for d in (*self.axes, self.rank - 1)]
        inner = [f"i{d}" for d in self.axes]
        text = [f"i{d}" for d in self.kept_dims] + ["|"] + inner
        return text + [f"x{self.passes}"] if self.passes > 1 else text

    def space(self, region: str) -> tuple[tuple[int, ...], list[str]]:
        """The shape a region's values live in and the index expression of each of its dims."""
        if region == "inner":
            return self.space_shape, [f"i{d}" for d in range(self.rank)]
        if self.keepdims:
            return self.out_shape, ["0" if d in self.axes else f"i{d}" for d in range(self.rank)]
        return self.out_shape, [f"i{d}" for d in self.kept_dims]

    def output_region(self, var: Var) -> str:
        return self.region_of[var]


def plan_kernel(body: Graph) -> KernelPlan:
    reduces = tuple(node for node in body.nodes if node.op in ops.REDUCE_OPS)
    if reduces:
        plan = _reduce_plan(body, reduces)
    else:
        shape = np.broadcast_shapes(*(v.type.shape for n in body.nodes for v in n.outputs))
        plan = KernelPlan("elementwise", tuple(shape) or (1,), len(body.inputs),
                          len(body.outputs), zero_d=not shape)
    _assign_regions(plan, body)
    return plan


def _reduce_plan(body: Graph, reduces: tuple[Node, ...]) -> KernelPlan:
    first = reduces[0]
    shape = first.inputs[0].type.shape
    attrs = first.attr
    for other in reduces[1:]:
        if other.attr != attrs or other.inputs[0].type.shape != shape:
            raise ValueError(f"{body.name}: the reductions of one kernel must share their "
                             f"input shape, axes and keepdims")
        if other.op in ("argmax", "argmin") or first.op in ("argmax", "argmin"):
            raise ValueError(f"{body.name}: argmax/argmin must be a kernel's one reduction")
    axes, keepdims = tuple(attrs["axes"]), bool(attrs["keepdims"])
    zero_d = not shape
    if zero_d:  # a 0-d reduction: pad to (1,) and reduce that dim away
        shape, axes, keepdims = (1,), (0,), False
    return KernelPlan("reduce", tuple(shape), len(body.inputs), len(body.outputs), reduces,
                      axes, keepdims, first.out.type.shape, zero_d=zero_d)


def _assign_regions(plan: KernelPlan, body: Graph) -> None:
    """Outer: reductions and values computed from them (and inputs) at the output shape;
    inner: values per element of the space, including those read back from outer ones and
    any value that reads an inner one (even when a reduced dim of size 1 makes the shapes
    equal). Depth: how many chained reductions a value depends on."""
    outer_shape = plan.out_shape
    for var in body.inputs:
        plan.depth[var] = 0
    for node in body.nodes:
        below = max((plan.depth[v] for v in node.inputs if isinstance(v, Var)), default=0)
        reads_outer = any(plan.region_of.get(v) == "outer" for v in node.inputs)
        reads_inner = any(plan.region_of.get(v) == "inner" for v in node.inputs)
        if node in plan.reduces:
            region, below = "outer", below + 1
        elif reads_outer and not reads_inner and node.out.type.shape == outer_shape:
            region = "outer"
        else:
            region = "inner"
        if region == "inner" and reads_outer and not _broadcasts_back(plan, node):
            raise ValueError(f"{body.name}: {node.op} reads a reduction result at full extent "
                             f"but the reduction does not keep its dims")
        for var in node.outputs:
            plan.region_of[var], plan.depth[var] = region, below


def _broadcasts_back(plan: KernelPlan, node: Node) -> bool:
    """An inner node may read outer values only when they keep the reduced dims (one value
    per row, broadcast over it)."""
    return plan.keepdims and len(plan.out_shape) == plan.rank


def padded(shape) -> tuple[int, ...]:
    return tuple(shape) or (1,)


class CompiledKernel:
    """One fused node's kernel: a shared compiled module plus this node's shapes.

    ``__call__(*inputs, out=None, parallel=None)`` returns a tuple of arrays; ``out`` may give
    preallocated outputs (the runtime's arena: a tuple of arrays, or a list whose None entries
    are allocated here);
    ``parallel=None`` picks the ``prange`` variant when the kernel's estimated serial time
    pays for waking the threads (``work.runs_parallel``). The row variant runs first; it
    declines (returns False) when an operand's last axis is not unit-stride, and the strided
    variant runs instead (``numba_cpu``), or the row variant on C-ordered copies of inputs
    laid out by columns (``relayout``). An output written in place (``in_place``: pairs of
    output and input positions) is that input's array, whatever ``out`` holds for it.
    """

    def __init__(self, name, key, source, source_ops, module, plan: KernelPlan, node: Node,
                 in_place=()):
        self.name, self.key, self.source, self.source_ops = name, key, source, source_ops
        self.module, self.plan = module, plan
        self.out_types = tuple(v.type for v in node.outputs)
        self.in_shapes = tuple(v.type.shape for v in node.inputs)
        self.sizes = tuple(int(d) for d in plan.space_shape)
        self._parallel = runs_parallel(plan, node.attr["body"])
        self._out_specs = tuple((t.shape or (1,), t.shape, t.dtype) for t in self.out_types)
        self._allocs = tuple((padded, dtype) for padded, _, dtype in self._out_specs)
        self._zero_d_out = any(not shape for _, shape, _ in self._out_specs)
        self.in_place = dict(in_place)   # output position -> input position
        serial, parallel = _row_variants(module, plan, self.sizes)
        parallel = one_at_a_time(parallel, serial)
        self._variants = {
            False: (serial, self._declined(serial, module.strided_serial, _COPY[False])),
            True: (parallel, self._declined(parallel, one_at_a_time(
                module.strided_parallel, module.strided_serial), _COPY[True]))}

    def __repr__(self):
        return f"CompiledKernel({self.name}, key={self.key})"

    def __call__(self, *inputs, out=None, parallel=None):
        # The replay hot path: every allocation and check here is paid on each call
        # (measured: 2.6 us of Python around a 2 us kernel before this was trimmed).
        shapes = self.in_shapes
        if len(inputs) != len(shapes):
            raise TypeError(f"{self.name} takes {len(shapes)} inputs, got {len(inputs)}")
        arrays = [x if type(x) is np.ndarray and x.shape == shape and x.ndim
                  else _as_kernel_array(x, shape)
                  for x, shape in zip(inputs, shapes, strict=False)]  # lengths checked above
        if out is not None:
            outs = out if type(out) is tuple else self._complete(out, arrays)
            views = [o.reshape(padded(o.shape)) if o is not None and o.ndim == 0 else o
                     for o in outs]
        elif self._zero_d_out:
            views = [np.empty(shape, dtype) for shape, dtype in self._allocs]
            outs = tuple(v if shape else v.reshape(()) for v, (_, shape, _) in
                         zip(views, self._out_specs, strict=True))
        else:
            outs = views = tuple([None if k in self.in_place else
                                  empty_apart(shape, dtype, arrays)
                                  for k, (shape, dtype) in enumerate(self._allocs)])
        if self.in_place:
            outs, views = self._take_over(arrays, outs, views)
        rows, strided = self._variants[self._parallel if parallel is None else bool(parallel)]
        if not rows(*self.sizes, *arrays, *views):
            strided(*self.sizes, *arrays, *views)
        return outs

    def _declined(self, rows, strided, copy):
        """What runs when the row variant declines: the row variant again on copies of the
        inputs laid out by columns (``relayout``), if that leaves every operand's rows
        unit-stride; else the strided variant. Same arguments as the variants."""
        first, stop = len(self.sizes), len(self.sizes) + len(self.in_shapes)
        if self.in_place:   # an input is also an output: copying it would lose the write
            return strided

        def run(*args):
            if all(map(relayout.unit_rows, args[stop:])):
                inputs = relayout.copied_by_rows(args[first:stop], copy)
                if inputs is not None and rows(*args[:first], *inputs, *args[stop:]):
                    return True
            return strided(*args)
        return run

    def _take_over(self, arrays, outs, views) -> tuple[tuple, list]:
        """In-place outputs become their input arrays and leave the kernel's parameters."""
        over = self.in_place
        outs = tuple(arrays[over[k]] if k in over else o for k, o in enumerate(outs))
        return outs, [v for k, v in enumerate(views) if k not in over]

    def _complete(self, out, arrays) -> tuple:
        """``out`` (a list) with a new array for each None (an output the caller will see)."""
        return tuple(empty_apart(shape, dtype, arrays) if o is None and k not in self.in_place
                     else o for k, (o, (_, shape, dtype)) in enumerate(zip(out, self._out_specs,
                                                                           strict=True)))

    @functools.cached_property
    def fast_call(self):
        """``__call__`` for the replay hot path, generated for this kernel's shapes: each input
        checked with one comparison, the sizes literals, the variant chosen once. Arguments it
        does not expect (a 0-d input, ``out`` as a list) take ``__call__``'s general path."""
        return _specialize(self)


def _row_variants(module, plan: KernelPlan, sizes: tuple[int, ...]) -> tuple:
    """The serial and parallel row variants for ``sizes``: where the module outlines its row
    loops (``outline``), ``short_*`` for rows shorter than ``MIN_ROW``, which run the loops
    inline (a call per short row costs more than its loop); Numba compiles only those called."""
    if hasattr(module, "short_serial") and sizes[plan.rank - 1] < MIN_ROW:
        return module.short_serial, module.short_parallel
    return module.kernel_serial, module.kernel_parallel


# Held while a prange variant runs. Numba's workqueue threading layer (its default where
# neither OpenMP nor TBB is installed) aborts the process when two threads enter parallel
# regions at once; with OpenMP, two regions at once only oversubscribe the cores.
_PARALLEL_REGION = threading.Lock()
_parallel_ran = False


def _new_region_lock() -> None:
    """A forked child gets a free lock (one another thread held would leave it serial for
    good), unless the parent ran a prange variant: GNU OpenMP kills a child that enters a
    parallel region after that ("fork() called from a process already using GNU OpenMP"), so
    the child's lock stays taken and its kernels run their serial variants."""
    global _PARALLEL_REGION
    _PARALLEL_REGION = threading.Lock()
    if _parallel_ran:
        _PARALLEL_REGION.acquire()


os.register_at_fork(after_in_child=_new_region_lock)


# Set when Numba cannot load a threading layer (``NUMBA_THREADING_LAYER=tbb`` without TBB):
# every prange variant raises before it runs, so all kernels run serially from then on.
_serial_only = False


def one_at_a_time(parallel, serial):
    """``parallel`` while no other thread runs a prange variant, else ``serial`` (the same
    arguments, the same results)."""
    def run(*args):
        global _parallel_ran
        if _serial_only or not _PARALLEL_REGION.acquire(blocking=False):
            return serial(*args)
        _parallel_ran = True
        try:
            return parallel(*args)
        except ValueError as exc:
            if not _no_threading_layer(exc):
                raise
            return serial(*args)
        finally:
            _PARALLEL_REGION.release()
    return run


_COPY = {False: relayout.copy_serial,
         True: one_at_a_time(relayout.copy_parallel, relayout.copy_serial)}


def _no_threading_layer(exc: ValueError) -> bool:
    """Whether Numba refused to launch its threads (the parallel variant ran nothing); if so,
    prange variants are off for the process, with one warning naming Numba's reason."""
    global _serial_only
    if not str(exc).startswith("No threading layer could be loaded"):
        return False
    if not _serial_only:
        _serial_only = True
        hint = " ".join(str(exc).split())
        log.warning("Numba could not start its threads (NUMBA_THREADING_LAYER=%s: %s); "
                    "fused kernels run on one core in this process",
                    os.environ.get("NUMBA_THREADING_LAYER", "default"), hint)
    return True


def _allocation_lines(kernel: CompiledKernel, outs: list[str], inputs: str, names) -> list[str]:
    """``fast_call``'s ``out`` branches but the last: allocate, or unpack a tuple of outputs,
    a list (the arena's views of a step whose other outputs the caller sees) completed into
    one first. A 0-d output is stored through a (1,) view of it."""
    calls, zero_d = {}, set()
    for k, (name, (alloc, shape, dtype)) in enumerate(zip(outs, kernel._out_specs,
                                                          strict=True)):
        if k not in kernel.in_place:   # one stored over its input: nothing to allocate
            names[f"dtype_{name}"] = dtype
            large = math.prod(alloc) * np.dtype(dtype).itemsize >= MIN_BYTES
            calls[name] = f"apart({alloc!r}, dtype_{name}, {inputs})" if large else \
                f"empty({alloc!r}, dtype_{name})"
            if not shape:
                zero_d.add(name)
    results = [f"{o}.reshape(())" if o in zero_d else o for o in outs]
    completed = [f"out[{k}]" if o not in calls else f"out[{k}] if out[{k}] is not None else "
                 f"{calls[o]}{'.reshape(())' if o in zero_d else ''}" for k, o in enumerate(outs)]
    lines = ["    if out is None:"]
    lines += [f"        {name} = {calls.get(name, 'None')}" for name in outs]
    lines += [f"        result = ({', '.join(results)},)",
              "    elif type(out) is tuple or type(out) is list:",
              "        if type(out) is list:",
              f"            out = ({', '.join(completed)},)",
              f"        ({', '.join(outs)},) = result = out"]
    lines += [f"        {o} = {o}.reshape((1,))" for o in outs if o in zero_d]
    return lines


def _as_kernel_array(value, shape) -> np.ndarray:
    """An input as the kernel takes it: a 0-d one padded to (1,) (a literal operand comes
    padded already, ``runtime.program.lower``)."""
    array = np.asarray(value)
    if array.shape == (1,) and not shape:
        return array
    if array.shape != tuple(shape):
        raise ValueError(f"kernel input has shape {array.shape}, expected {tuple(shape)}")
    return array.reshape(1) if array.ndim == 0 else array


def _specialize(kernel: CompiledKernel):
    """Source and namespace of ``fast_call``; e.g. for ``tanh(x * y + z)`` on (4, 5), (4, 1), ()::

        def fast_call(in0, in1, in2, out=None):
            if out is None:
                o0 = empty((4, 5), dtype_o0)
                result = (o0,)
            elif type(out) is tuple or type(out) is list:
                if type(out) is list:
                    out = (out[0] if out[0] is not None else empty((4, 5), dtype_o0),)
                (o0,) = result = out
            else:
                return kernel(in0, in1, in2, out=out)
            if type(in0) is not ndarray or in0.shape != (4, 5): in0 = coerce(in0, (4, 5))
            if type(in1) is not ndarray or in1.shape != (4, 1): in1 = coerce(in1, (4, 1))
            if type(in2) is ndarray and in2.shape == (): in2 = in2.reshape(1)
            if type(in2) is not ndarray or in2.shape != (1,): in2 = coerce(in2, ())
            if not rows(4, 5, in0, in1, in2, o0):
                strided(4, 5, in0, in1, in2, o0)
            return result

    An output of ``placement.MIN_BYTES`` or more is ``apart(shape, dtype_o0, (in0, ...))``,
    placed apart from the inputs that are ndarrays.
    """
    inputs = [f"in{j}" for j in range(len(kernel.in_shapes))]
    outs = [f"o{k}" for k in range(len(kernel.out_types))]
    names = dict(ndarray=np.ndarray, empty=np.empty, apart=empty_apart, coerce=_as_kernel_array,
                 kernel=kernel)
    names["rows"], names["strided"] = kernel._variants[kernel._parallel]
    leading = "".join(name + ", " for name in inputs)   # none for np.zeros_like's kernel
    lines = [f"def fast_call({leading}out=None):"]
    lines += _allocation_lines(kernel, outs, f"({leading})", names)
    lines += ["    else:", f"        return kernel({leading}out=out)"]
    for name, shape in zip(inputs, kernel.in_shapes, strict=True):
        shape = tuple(shape)
        check = f"type({name}) is not ndarray or {name}.shape != {shape or (1,)!r}"
        if not shape:   # most often another step's 0-d result: padded to (1,) here
            lines += [f"    if type({name}) is ndarray and {name}.shape == (): "
                      f"{name} = {name}.reshape(1)"]
        lines.append(f"    if {check}: {name} = coerce({name}, {shape!r})")
    if kernel.in_place:  # the outputs written in place are their input arrays
        results = [f"in{kernel.in_place[k]}" if k in kernel.in_place else o
                   for k, o in enumerate(outs)]
        lines.append(f"    result = ({', '.join(results)},)")
    params = [o for k, o in enumerate(outs) if k not in kernel.in_place]
    call = ", ".join([str(n) for n in kernel.sizes] + inputs + params)
    lines += [f"    if not rows({call}):", f"        strided({call})", "    return result"]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<fusejit call of {kernel.name}>", "exec"), names)  # noqa: S102
    return names["fast_call"]
