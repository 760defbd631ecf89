"""A Program is an optimized graph lowered to a flat list of steps over numbered slots.

Replay runs each step (a fused kernel, a BLAS call, a NumPy view or a host copy), drops each
intermediate buffer after its last use, then rebuilds the user's result."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..codegen import build_kernel
from ..codegen.concat import build_concat
from ..ir import Graph, Lit, Node, Var, indexing, ops
from ..located import at_line, cast_from_line, drops_imaginary
from ..passes.in_place_updates import caller_donors, last_failure
from ..passes.in_place_writes import in_place_writes
from ..passes.plan_memory import view_parents
from . import stacks
from .arena import ARENA_OPS, Arena, arena_offsets
from .progress import Progress
from .undo import writer


@dataclass(frozen=True)
class Step:
    fn: object                 # callable(*arrays) -> tuple of arrays
    inputs: tuple[int, ...]    # slots read
    outputs: tuple[int, ...]   # slots written
    frees: tuple[int, ...]     # slots whose last use is this step
    node: Node
    in_arena: bool = False     # a kernel whose outputs live in the program's arena


class GuardFailed(Exception):
    """A value the Python body branched on differs from the traced one: another path applies."""


@dataclass(frozen=True)
class GuardCheck:
    slot: int
    convert: object    # "bool" | "int" | "float" | "item" | "tolist" | "shape" | tracer.text's
    expected: object
    loc: object = field(default=None, compare=False)   # the user's line that branched

    def __str__(self):
        call = self.convert if not isinstance(self.convert, str) else f"{self.convert}()"
        where = f" at {self.loc.short()}" if self.loc is not None else ""
        return f"{call} == {self.expected!r}{where}"

    def holds(self, value) -> bool:
        try:
            observed = _convert(value, self.convert)
        except (TypeError, ValueError, OverflowError):  # int(nan): no path was traced for it
            return False
        if not _same(observed, self.expected):
            return False
        warn = None if type(self.convert) is str else getattr(self.convert, "warn", None)
        if warn is not None and self.loc is not None:   # tracer.text.RealPart
            warn(value, self.loc)
        return True


def _same(observed, expected) -> bool:
    """Equal, with NaN equal to NaN (a guard on a NaN loss would otherwise never hold) and
    -0.0 unequal to 0.0 (``math.copysign``, ``str`` tell them apart), and the same inside the
    lists of ``tolist``; a complex value part by part."""
    if isinstance(expected, complex) and isinstance(observed, complex):
        return _same(observed.real, expected.real) and _same(observed.imag, expected.imag)
    if isinstance(expected, float) and isinstance(observed, float):
        if observed == expected:
            return observed != 0.0 or math.copysign(1.0, observed) == math.copysign(1.0, expected)
        return observed != observed and expected != expected
    if isinstance(expected, list) and isinstance(observed, list):
        return len(observed) == len(expected) and all(
            _same(a, b) for a, b in zip(observed, expected, strict=True))
    return observed == expected


def _convert(value, how):
    if not isinstance(how, str):    # tracer.text.TextRead: text of the value, read
        return how(value)
    if how == "shape":
        return tuple(value.shape)
    if how == "tolist":
        return value.tolist()
    if how == "item":
        return value.item()
    return {"bool": bool, "int": int, "float": float}[how](value)


@dataclass
class Program:
    graph: Graph
    steps: list[Step]
    constants: dict[int, np.ndarray]   # slot -> literal value
    n_inputs: int
    n_slots: int
    outputs: tuple[int, ...]
    kernels: list = field(default_factory=list)
    checks: dict = field(default_factory=dict)   # step index (-1: before any) -> [GuardCheck]
    compiled: bool = False                       # set after the first run compiled the kernels
    first_run_seconds: float = 0.0               # that run's: Numba compiles the kernels then
    arena: Arena | None = None                   # intermediates' storage, reused across calls
    deferred: dict = field(default_factory=dict)  # output index -> in-place writes (write_all)
    writes: frozenset = frozenset()    # setitem nodes that write into their target's buffer
    caller_writes: frozenset = frozenset()  # those whose target is the caller's: run under undo
    donated: dict = field(default_factory=dict)  # kernel output -> caller's array stored over
    stacks: tuple = ()                 # returned concatenations whose parts go into rows

    @staticmethod
    def write_back(target, value) -> None:
        """Replay an in-place update of an argument or captured array (unless the program
        wrote the new value into it already)."""
        if not _same_memory(target, value):
            np.copyto(target, value)

    def run(self, inputs) -> list:
        """The outputs. Arithmetic on the host warns no more than a kernel does on replay
        (README): NumPy's floating-point warnings would come from this file's line."""
        quiet = self.__dict__.get("_quiet")
        if quiet is None:
            quiet = self._quiet = any(getattr(step.fn, "warns", False) for step in self.steps)
        if quiet:
            with np.errstate(all="ignore"):
                return self._run(inputs)
        return self._run(inputs)

    def _run(self, inputs) -> list:
        if self.compiled:
            fast = self.__dict__.get("_fast")
            if fast is None:
                fast = self._fast = straight_line(self)
            return fast(inputs)
        slots = self._initial_slots()
        slots[: self.n_inputs] = inputs
        self._run_checked(slots)
        constants = self.constants
        return [np.array(slots[i]) if i in constants else slots[i] for i in self.outputs]

    def _initial_slots(self) -> list:
        template = self.__dict__.get("_template")
        if template is None:  # built once: the slot list with the literals already in place
            template = [None] * self.n_slots
            for slot, value in self.constants.items():
                template[slot] = value
            self._template = template
        return template.copy()

    def _run_checked(self, slots) -> None:
        checks = self.checks
        if -1 in checks:
            _check(checks[-1], slots)
        progress = None if self.compiled else Progress(len(self.steps), self.graph.name)
        started = time.perf_counter()
        try:
            self._run_steps(slots, checks, progress)
        except BaseException:
            if progress is not None:
                progress.close(failed=True)
            raise
        if progress is not None:
            progress.close()
            self.first_run_seconds += time.perf_counter() - started
            self.compiled = True

    def _run_steps(self, slots, checks, progress) -> None:
        for index, step in enumerate(self.steps):
            if step.in_arena:
                results = step.fn(*[slots[i] for i in step.inputs], out=self.arena.views(index))
            else:
                results = step.fn(*[slots[i] for i in step.inputs])
            if progress is not None:
                progress.step(getattr(step.fn, "name", ""))
            for slot, value in zip(step.outputs, results, strict=True):
                slots[slot] = value
            if index in checks:
                _check(checks[index], slots)
            for slot in step.frees:
                slots[slot] = None


def _same_memory(a, b) -> bool:
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    return (a.ctypes.data == b.ctypes.data and a.shape == b.shape and a.strides == b.strides
            and a.dtype == b.dtype)


def straight_line(program: Program):
    """The replay hot path as generated straight-line Python: each slot a local variable, each
    buffer dropped (``del``) right after its last use, each guard checked where its value is
    computed -- no per-step list or loop overhead."""
    names = {"np": np, "arena": program.arena, "GuardFailed": GuardFailed}
    lines = [f"    {_unpack([f's{i}' for i in range(program.n_inputs)])} = inputs"]
    lines += [f"    s{slot} = constant{slot}" for slot in program.constants]
    names.update({f"constant{slot}": value for slot, value in program.constants.items()})
    lines += _guard_lines(program.checks.get(-1, ()), "before", names)
    padded = _shared_scalars(program)
    for index, step in enumerate(program.steps):
        names[f"step{index}"] = getattr(step.fn, "fast_call", step.fn)
        args = [f"p{i}" if (index, j) in padded else f"s{i}" for j, i in enumerate(step.inputs)]
        if step.in_arena:  # a kernel may read no slot at all: np.zeros_like(x) written later
            args.append(f"out=arena.views({index})")
        lines.append(f"    {_unpack([f's{o}' for o in step.outputs])} = "
                     f"step{index}({', '.join(args)})")
        lines += _guard_lines(program.checks.get(index, ()), index, names)
        lines += [f"    p{o} = s{o}.reshape(1) if type(s{o}) is np.ndarray else s{o}"
                  for o in step.outputs if o in padded.values()]
        if step.frees:
            lines.append("    del " + ", ".join(f"s{slot}" for slot in step.frees))
    outputs = ", ".join(f"np.array(s{i})" if i in program.constants else f"s{i}"
                        for i in program.outputs)
    lines.append(f"    return [{outputs}]")
    source = "def replay(inputs):\n" + "\n".join(lines) + "\n"
    exec(compile(source, f"<fusejit replay of {program.graph.name}>", "exec"), names)  # noqa: S102
    return names["replay"]


def _shared_scalars(program: Program) -> dict[tuple[int, int], int]:
    """(step, operand position) -> slot, for a 0-d value a step computes that two or more
    kernels take: padded to the (1,) array kernels take once, not by each of them."""
    produced = {o for step in program.steps for o in step.outputs}
    uses: dict[int, list] = {}
    for index, step in enumerate(program.steps):
        shapes = getattr(step.fn, "in_shapes", None)
        if shapes is None or not hasattr(step.fn, "fast_call"):
            continue
        for j, (slot, shape) in enumerate(zip(step.inputs, shapes, strict=True)):
            if not shape and slot in produced:
                uses.setdefault(slot, []).append((index, j))
    return {use: slot for slot, found in uses.items() if len(found) > 1 for use in found}


def _guard_lines(guards, where, names) -> list[str]:
    """``straight_line``'s checks of the guards on slots computed by step ``where``."""
    lines = []
    for k, guard in enumerate(guards):
        names[f"guard_{where}_{k}"] = guard
        lines += [f"    if not guard_{where}_{k}.holds(s{guard.slot}):",
                  f"        raise GuardFailed(guard_{where}_{k})"]
    return lines


def _unpack(targets: list[str]) -> str:
    return "(" + ", ".join(targets) + ",)" if targets else "()"


def _check(guards, slots) -> None:
    for guard in guards:
        if not guard.holds(slots[guard.slot]):
            raise GuardFailed(guard)


def host_call(node: Node):
    """A node run through NumPy: views stay views, matmul is a BLAS call."""
    fast = _view_call(node)
    if fast is not None:
        return fast
    opdef, attrs = ops.get(node.op), dict(node.attrs)
    impl = opdef.impl
    if node.op == "host" and node.loc is not None:
        return _located_host_call(node, attrs)
    if node.op == "cast" and node.loc is not None and _drops_imaginary(node):
        return _located_cast(node, attrs["dtype"])

    def call(*values):
        result = impl(*values, **attrs)
        return result if isinstance(result, tuple) else (np.asarray(result),)
    call.__name__ = f"host_{node.op}"
    call.warns = opdef.kind in (ops.ELEMENTWISE, ops.REDUCE)   # Program.run quiets it
    return call


def _located_host_call(node: Node, attrs: dict):
    """An opaque NumPy call made from a frame that is the user's line, so that a warning its
    Python code issues (``np.nanmean``: "Mean of empty slice") names that line on every
    replay, as eagerly, and a traceback through it shows it."""
    fn, spec, via = attrs["fn"], attrs["spec"], at_line(node.loc)

    def call(*values):
        args, kwargs = ops.host_arguments(values, spec)
        return ops.host_results(via(fn, args, kwargs))
    call.__name__ = "host_host"
    return call


def _drops_imaginary(node: Node) -> bool:
    return drops_imaginary(node.inputs[0].type.dtype, node.attr["dtype"])


def _located_cast(node: Node, dtype):
    """A complex array cast to a real type, from the node's line (``located.cast_from_line``)
    on every replay, as eagerly."""
    loc = node.loc

    def call(value):
        return (cast_from_line(loc, value, dtype),)
    call.__name__ = "host_cast"
    call.warns = True     # an out-of-range value's "invalid value" is quiet, as in kernels
    return call


def _view_call(node: Node):
    """Views and matmul with everything static decided once, at lowering: they run on every
    replay, and NumPy's Python-level wrappers cost microseconds each."""
    attr, op = node.attr, node.op
    if op in ("reshape", "expand_dims", "squeeze"):
        shape = node.out.type.shape
        return lambda x: (np.asarray(x).reshape(shape),)
    if op == "permute":
        perm = attr["perm"]
        return lambda x: (np.asarray(x).transpose(perm),)
    if op == "getitem":
        key = indexing.decode(attr["key"])
        parts = key if type(key) is tuple else (key,)
        if node.out.type.shape == () and not any(k is Ellipsis for k in parts):
            # NumPy gives a scalar (a copy) for x[0]: a 0-d array copy keeps both the array
            # type and the copy (a view would see a later write-back into x); with an
            # Ellipsis (x[...], x[..., 0]) it gives a 0-d view
            return lambda x: (np.array(np.asarray(x)[key]),)
        return lambda x: (np.asarray(x)[key],)
    if op == "split":
        slices = _split_slices(node)
        return lambda x: tuple(x[s] for s in slices)
    if op == "matmul":
        return _matmul
    if op == "concatenate":
        axis = attr["axis"]
        return lambda *xs, out=None: (np.concatenate(xs, axis, out=out and out[0]),)
    return None


def _matmul(a, b, out=None):
    """A BLAS call; ``out``: the arena view the product is written into (no allocation)."""
    if out is None:
        return (np.asarray(np.matmul(a, b)),)
    return (np.matmul(a, b, out=out[0]),)


def _split_slices(node: Node) -> list[tuple]:
    axis, ndim = node.attr["axis"], node.inputs[0].type.ndim
    bounds, start = [], 0
    for out in node.outputs:
        stop = start + out.type.shape[axis]
        bounds.append((slice(None),) * axis + (slice(start, stop),) + (Ellipsis,) * (ndim > 1))
        start = stop
    return bounds


def lower(graph: Graph, target: str = "cpu", guards=(), written=None, deferred=None) -> Program:
    """``written``: position among the graph's inputs of each caller's array the body updates
    in place -> the Var written back into it (writes on the way there may go straight into
    the array, ``passes.in_place_writes``, and so may the kernel computing it,
    ``passes.in_place_updates``). ``deferred``: the writes the runtime makes after the run
    (``deferred_writes``)."""
    slot_of = {var: i for i, var in enumerate(graph.inputs)}
    constants: dict[int, np.ndarray] = {}
    count = [len(graph.inputs)]

    def slot(value, kernel_operand=False) -> int:
        if isinstance(value, Lit):   # a kernel's (a mean's count) as its padded shape (1,)
            array = np.asarray(value.value)
            constants[count[0]] = array.reshape(1) if kernel_operand else array
        elif value not in slot_of:
            slot_of[value] = count[0]
        else:
            return slot_of[value]
        count[0] += 1
        return count[0] - 1

    raw_steps, kernels = [], []
    writes = in_place_writes(graph, written) if target == "cpu" else frozenset()
    arena_plan = arena_offsets(graph, writes) if target == "cpu" else ({}, 0, {})
    donated = _donated(graph, guards, written, writes, deferred) if target == "cpu" else {}
    in_rows = stacks.find(graph, writes, {**arena_plan[2], **donated}) if target == "cpu" else []
    if in_rows:   # their parts are written into the results, not into the arena
        arena_plan = arena_offsets(graph, writes, {p for s in in_rows for p in s.rows})
    donors = {**arena_plan[2], **donated}
    callers = _callers_arrays(graph, writes)
    starts, stacked = _first_parts(graph, in_rows), {stack.node: stack for stack in in_rows}
    for node in graph.nodes:
        for stack in starts.get(node, ()):
            result = stack.node.outputs[0]
            raw_steps.append((stacks.Allocate(result.type.shape, result.type.dtype), (),
                              (slot(result),), stack.node))
        if node in writes:
            fn = writer(node.op, node.attr["key"], journaled=node in callers)
        elif node in stacked:
            fn = stacks.Stacked(stacked[node].copies)
        else:
            fn = _step_function(node, target, kernels, _in_place_pairs(node, donors))
        operand = node.op == "fused" and target == "cpu"
        inputs = tuple(slot(v, operand) for v in node.inputs)
        if node in stacked:   # the kernels wrote the parts into the result: it passes it on
            inputs = (*inputs, slot(node.outputs[0]))
        else:
            fn, inputs = _into_rows(node, fn, inputs, in_rows, slot)
        raw_steps.append((fn, inputs, tuple(slot(v) for v in node.outputs), node))
    outputs = tuple(slot(v) for v in graph.outputs)
    steps = _attach_frees(raw_steps, set(outputs), len(graph.inputs), set(constants))
    steps, arena = _plan_arena(steps, *arena_plan[:2]) if target == "cpu" else (steps, None)
    checks = _place_checks(guards, outputs, raw_steps)
    return Program(graph, steps, constants, len(graph.inputs), count[0], outputs, kernels,
                   checks, arena=arena, deferred=deferred or {}, writes=writes,
                   caller_writes=frozenset(callers), donated=donated, stacks=tuple(in_rows))


def _first_parts(graph: Graph, in_rows) -> dict[Node, list]:
    """The node computing each stack's first part -> those stacks: their results are
    allocated right before it."""
    order = {node: index for index, node in enumerate(graph.nodes)}
    producers, starts = graph.producers(), {}
    for stack in in_rows:
        first = min((producers[part] for part in stack.rows), key=order.__getitem__)
        starts.setdefault(first, []).append(stack)
    return starts


def _into_rows(node: Node, fn, inputs: tuple, in_rows, slot):
    """A kernel computing parts of stacks writes them into the results (taken as inputs
    after its own)."""
    used, rows = stacks.into_rows(node, in_rows)
    if not used:
        return fn, inputs
    results = tuple(slot(stack.node.outputs[0]) for stack in used)
    return stacks.IntoRows(fn, len(node.outputs), rows, len(used)), (*inputs, *results)


def _donated(graph: Graph, guards, written, writes, deferred) -> dict[Var, Var]:
    """The kernel outputs stored over the caller's array they update (``in_place_updates``):
    only where nothing can fail afterwards, the deferred writes' index checks included."""
    if not written:
        return {}
    producers = {out: index for index, node in enumerate(graph.nodes) for out in node.outputs}
    checked = {producers.get(graph.outputs[guard.output], -1) for guard in guards}
    failure = last_failure(graph, checked)
    if any(len(write.operands) > 1 for writes_ in (deferred or {}).values()
           for write in writes_):
        failure = len(graph.nodes)
    return caller_donors(graph, written, writes, failure)


def _callers_arrays(graph: Graph, writes) -> set[Node]:
    """The writes in ``writes`` whose target's buffer is one of the graph's inputs."""
    parents, inputs = view_parents(graph, writes), set(graph.inputs)
    found = set()
    for node in writes:
        var = node.inputs[0]
        while var in parents:
            var = parents[var]
        if var in inputs:
            found.add(node)
    return found


def _plan_arena(steps: list[Step], offsets: dict[Var, int], size: int):
    """Kernels and matmuls write the outputs that may live in the arena there instead of
    allocating them (a kernel whose other outputs the caller sees allocates only those)."""
    layouts = {}
    for index, step in enumerate(steps):
        outs = step.node.outputs
        if step.node.op in ARENA_OPS and any(v in offsets for v in outs):
            layouts[index] = tuple((offsets[v], v.type.shape, v.type.dtype) if v in offsets
                                   else None for v in outs)
    if not layouts:
        return steps, None
    steps = [replace(step, in_arena=index in layouts) for index, step in enumerate(steps)]
    return steps, Arena(size, layouts)


def _place_checks(guards, outputs, raw_steps) -> dict[int, list[GuardCheck]]:
    """Each guard runs right after the step that computes its value (early exit)."""
    producer = {slot: i for i, (_, _, outs, _) in enumerate(raw_steps) for slot in outs}
    checks: dict[int, list[GuardCheck]] = {}
    for guard in guards:
        slot = outputs[guard.output]
        checks.setdefault(producer.get(slot, -1), []).append(
            GuardCheck(slot, guard.convert, guard.expected, guard.loc))
    return checks


def _in_place_pairs(node: Node, donors: dict[Var, Var]) -> tuple[tuple[int, int], ...]:
    """(output position, input position) for each kernel output written over an input."""
    return tuple((k, next(j for j, v in enumerate(node.inputs) if v is donors[out]))
                 for k, out in enumerate(node.outputs) if out in donors)


def _step_function(node: Node, target: str, kernels: list, in_place=()):
    if node.op == "concatenate" and target == "cpu":
        loop = build_concat(node)
        if loop is not None:
            kernels.append(loop)
            return loop
    if node.op != "fused":
        return host_call(node)
    kernel = build_kernel(node, target=target, in_place=in_place)
    kernels.append(kernel)
    return kernel


def _attach_frees(raw_steps, keep: set[int], n_inputs: int, constants: set[int]) -> list[Step]:
    """Free each intermediate slot right after the step that reads it last."""
    last_use: dict[int, int] = {}
    for index, (_, inputs, outputs, _) in enumerate(raw_steps):
        for s in inputs + outputs:
            last_use[s] = index
    frees: dict[int, list[int]] = {}
    for s, index in last_use.items():
        if s >= n_inputs and s not in keep and s not in constants:
            frees.setdefault(index, []).append(s)
    return [Step(fn, inputs, outputs, tuple(sorted(frees.get(i, ()))), node)
            for i, (fn, inputs, outputs, node) in enumerate(raw_steps)]
