"""``explain()`` and ``ir()``: what the compiler did with one signature, in words."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..codegen.concat import ConcatLoop
from ..ir import Graph, Node, ops, print_graph
from ..ir.types import SUPPORTED_DTYPES as SUPPORTED
from ..passes import DEFAULT_PIPELINE, run_pipeline
from ..passes.plan_memory import eager_peak_bytes, peak_without
from ..tracer import pystate
from .entries import CompiledEntry

STAGES = ("traced", "optimized", "kernels", "source", "memory") + DEFAULT_PIPELINE


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str
    source_ops: tuple          # ((op, loc), ...)
    bytes_read: int
    bytes_written: int
    intermediates: int         # values computed in registers, never materialized

    def summary(self) -> str:
        """The kernel's name, kind and counts, then its ops under each source line, in order:
        ``    model.py:23 (block/layer_norm)  sum cast mul``."""
        count = len(self.source_ops)
        lines = [f"{self.name}  [{self.kind}] fuses {count} op{'s' * (count != 1)}, "
                 f"{self.intermediates} never materialized:"]
        runs: list[tuple[object, list[str]]] = []
        for op, loc in self.source_ops:
            if not runs or runs[-1][0] != loc:
                runs.append((loc, []))
            runs[-1][1].append(op)
        lines += [f"    {_loc(loc)}  {' '.join(names)}" for loc, names in runs]
        return "\n".join(lines)


@dataclass(frozen=True)
class HostCall:
    op: str
    loc: object
    what: str                  # "BLAS call", "NumPy view", "NumPy copy"


@dataclass
class Explanation:
    function: str
    signature: str
    status: str                            # "compiled" | "eager" | "raises" | "none"
    reason: str = ""
    kernels: list[KernelInfo] = field(default_factory=list)
    blas_calls: list[HostCall] = field(default_factory=list)
    host_ops: list[HostCall] = field(default_factory=list)
    views: int = 0
    refusals: list = field(default_factory=list)
    memory: dict = field(default_factory=dict)
    constants: list = field(default_factory=list)    # "f32[3,3] constant used at f.py:4"
    notes: tuple = ()
    cache: dict = field(default_factory=dict)
    paths: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"fusejit.explain: {self.function}({self.signature})"]
        if self.status == "eager":
            lines.append(f"status: runs eagerly (NumPy) -- {self.reason}")
        elif self.status == "raises":
            lines.append(f"status: tracing raised {self.reason}; a call with these arguments "
                         "raises it too, and nothing is cached for them")
        elif self.status == "none":
            lines.append(f"status: not compiled -- {self.reason}")
        else:
            lines.append(f"status: compiled -- {len(self.paths)} trace path(s); path 0 has "
                         f"{len(self.kernels)} kernels, {len(self.blas_calls)} BLAS calls, "
                         f"{len(self.host_ops)} host ops, {self.views} views")
            if self.reason:
                lines.append(f"  calls matching no path run eagerly: {self.reason}")
            lines += _section("trace paths", self.paths)
            lines += _section("kernels", [k.summary() for k in self.kernels])
            lines += _section("BLAS calls", [f"{c.op} at {_loc(c.loc)}" for c in self.blas_calls])
            lines += _section("host ops (NumPy)",
                              [f"{c.op} at {_loc(c.loc)}" for c in self.host_ops])
            lines += _section("refused fusions", [_refusal(r) for r in self.refusals])
            lines += _section("memory", [_memory(self.memory)] if self.memory else [])
            lines += _section(CONSTANTS_TITLE, self.constants)
        lines += _section("notes", list(self.notes))
        cache = ", ".join(f"{k}={v}" for k, v in sorted(self.cache.items())
                          if not isinstance(v, float))
        lines.append(f"cache: {cache}")
        return "\n".join(lines) + "\n"


NOTHING_YET = "nothing is compiled for this signature yet"
TRACES_AGAIN = "the next call traces again"
CONSTANTS_TITLE = ("constants (arrays NumPy computed while tracing from no traced value, such "
                   "as np.tril(np.ones(...)); replays reuse them)")


def _section(title, rows):
    return [f"{title}:"] + [f"  {row}" for row in rows] if rows else []


def _loc(loc) -> str:
    return loc.short() if loc is not None else "?"


def _refusal(refusal) -> str:
    return f"{refusal.op} at {_loc(refusal.loc)}: {refusal.reason}"


def _memory(memory) -> str:
    peak, eager = memory.get("peak_bytes", 0), memory.get("eager_peak_bytes", 0)
    text = f"peak intermediates {_mb(peak)} (eager NumPy: {_mb(eager)})"
    count = memory.get("in_place", 0)
    if count:
        text += f"; {count} kernel output(s) written over an input that dies there"
    count = memory.get("into_arguments", 0)
    if count:
        text += f"; {count} argument update(s) stored by their kernel into the caller's array"
    return text


def _mb(n) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def primary(tree):
    """The path that dumps and summaries describe: the first one traced."""
    return tree.paths[0] if tree.paths else tree.eager


def explain_error(compiled, exc: Exception, signature: str) -> Explanation:
    """Tracing these arguments raised (NumPy's error, or an unsupported call)."""
    return Explanation(compiled.__qualname__, signature, "raises",
                       f"{type(exc).__name__}: {exc}", notes=tuple(getattr(exc, "__notes__", ())),
                       cache=compiled.cache_info())


def explain_entry(compiled, tree, signature="") -> Explanation:
    cache = compiled.cache_info()
    entry = primary(tree)
    if entry is None:  # another thread is tracing it, a trace changed Python state
        #                (``TraceTree.retried``), or compiling its trace raised
        status = f"{TRACES_AGAIN} -- {tree.retried}" if tree.retried else NOTHING_YET
        return Explanation(compiled.__qualname__, signature, "none", status, cache=cache)
    if not isinstance(entry, CompiledEntry):
        return Explanation(compiled.__qualname__, signature, "eager", _eager_reason(entry),
                           cache=cache)
    result = _explain_path(compiled, entry, cache)
    result.paths = [_path_text(i, path) for i, path in enumerate(tree.paths)]
    if tree.eager is not None:
        result.reason = _eager_reason(tree.eager)
    return result


def _path_text(index, path) -> str:
    guards = getattr(path.trace, "guards", ())
    lines = [f"path {index}: {len(guards)} guards, {path.hits} replays"]
    for guard, repeats in _runs(guards):
        code = f"  `{guard.loc.code}`" if guard.loc is not None and guard.loc.code else ""
        times = f" (x{repeats})" if repeats > 1 else ""
        call = guard.convert if not isinstance(guard.convert, str) else f"{guard.convert}()"
        lines.append(f"    {call} == {guard.expected!r}{times} at "
                     f"{_loc(guard.loc)}{code}")
    trace = path.trace
    lines += [f"    {read.label} == {pystate.shown(read.value)}, as traced (read again before "
              "each replay)" for read in (*trace.plain_reads, *trace.attribute_reads)]
    names = [trace.leaf_names[leaf] if leaf < len(trace.leaf_names) else f"argument {leaf}"
             for leaf, _ in trace.layouts or ()]
    names += [trace.captures[j].description for j, _ in trace.capture_layouts]
    kept = [layout for _, layout in trace.layouts or ()] + \
        [layout for _, layout in trace.capture_layouts]
    for name, layout in zip(names, kept, strict=True):
        strides = "C-contiguous" if layout == "C" else f"strides {layout}"
        lines.append(f"    {name} {strides}, as traced (a reshape was a view or a copy by "
                     f"its layout)")
    arguments = len(trace.arg_leaves)
    for position, order in path.orders:
        axes = ", ".join(map(str, order))
        if position >= arguments:   # a captured array
            name, taken = trace.captures[position - arguments].description, ""
        else:
            leaf = trace.arg_leaves[position]
            name = trace.leaf_names[leaf] if leaf < len(trace.leaf_names) else \
                f"argument {leaf}"
            taken = name
        lines.append(f"    {name} taken in memory order, as {taken}.transpose({axes}) "
                     "(laid out otherwise than C-ordered)")
    return "\n".join(lines)


def _runs(guards):
    """Consecutive identical guards (a loop's condition holding N times) print as one line."""
    runs: list[list] = []
    for guard in guards:
        same = runs and (runs[-1][0].convert, runs[-1][0].expected, runs[-1][0].loc) == (
            guard.convert, guard.expected, guard.loc)
        if same:
            runs[-1][1] += 1
        else:
            runs.append([guard, 1])
    return runs


def _explain_path(compiled, entry, cache) -> Explanation:
    graph = entry.pipeline.graph
    signature = ", ".join(f"{v.hint or '?'}: {v.type}" for v in entry.trace.graph.inputs)
    result = Explanation(compiled.__qualname__, signature, "compiled", cache=cache)
    program = entry.program
    runs = set(getattr(program, "graph", graph).nodes)
    loops = _concat_loops(program)
    for node in graph.nodes:
        if node in loops:   # codegen/concat.py: a generated copy loop, not NumPy's
            result.kernels.append(loop_info(loops[node]))
            continue
        _classify(node, result, deferred=node not in runs or node in program.caller_writes,
                  in_place=node in program.writes)
    result.refusals = list(entry.pipeline.stats.get("fuse", {}).get("refusals", []))
    memory = entry.pipeline.stats.get("plan_memory", {})
    result.memory = {k: memory[k] for k in ("peak_bytes", "eager_peak_bytes") if k in memory}
    result.memory["in_place"] = len(memory.get("in_place", ()))
    donated, writes = getattr(program, "donated", None), getattr(program, "writes", None)
    if donated:
        result.memory["into_arguments"] = len(donated)
    stacked = {stack.node.outputs[0]: tuple(stack.rows)
               for stack in getattr(program, "stacks", ())}
    if donated or writes or stacked:   # stored into the caller's arrays or a result's rows
        result.memory["peak_bytes"] = peak_without(program.graph, writes, donated or {},
                                                   stacked)
        result.memory["eager_peak_bytes"] = eager_peak_bytes(program.graph, writes)
    result.constants = [f"{c.type} {c.description}" for c in entry.trace.captures
                        if c.source and c.source[0] == "const"]
    return result


def _eager_reason(entry) -> str:
    where = f" at {_loc(entry.loc)}" if getattr(entry, "loc", None) is not None else ""
    return f"{entry.reason}{where}"


def _classify(node: Node, result: Explanation, deferred=False, in_place=False) -> None:
    if node.op == "fused":
        result.kernels.append(kernel_info(node))
        return
    kind = ops.get(node.op).kind
    if node.op == "host":
        name = node.attr.get("name", "host")
        if node.attr.get("elementwise"):   # tracer/dynamic.py
            name += " (of a data-dependent shape)"
        result.host_ops.append(HostCall(name, node.loc, "NumPy call"))
    elif kind == ops.MATMUL:
        result.blas_calls.append(HostCall(node.op, node.loc, "BLAS call"))
    elif kind == ops.VIEW:
        result.views += 1
    elif deferred:  # runtime/deferred_writes.py, or in_place_writes into an argument
        result.host_ops.append(HostCall(f"{node.op} (in place, into the caller's array)",
                                        node.loc, "NumPy write"))
    elif in_place:  # passes/in_place_writes.py: into a buffer of the program's own
        result.host_ops.append(HostCall(f"{node.op} (in place)", node.loc, "NumPy write"))
    else:
        result.host_ops.append(HostCall(node.op, node.loc, "NumPy copy"))


def kernel_info(node: Node) -> KernelInfo:
    body: Graph = node.attr["body"]
    kept = set(body.outputs)
    intermediates = sum(1 for n in body.nodes for v in n.outputs if v not in kept)
    return KernelInfo(node.attr.get("name", "kernel"), node.attr.get("kind", "?"),
                      tuple((n.op, n.loc) for n in body.nodes),
                      sum(v.type.nbytes for v in node.inputs if hasattr(v, "uid")),
                      sum(v.type.nbytes for v in node.outputs), intermediates)


def _concat_loops(program) -> dict[Node, ConcatLoop]:
    """The concatenate nodes the program runs as copy loops (``codegen/concat.py``)."""
    return {k.node: k for k in program.kernels if isinstance(k, ConcatLoop)}


def loop_info(loop: ConcatLoop) -> KernelInfo:
    node = loop.node
    return KernelInfo(loop.name, loop.kind, ((node.op, node.loc),),
                      sum(v.type.nbytes for v in node.inputs), node.out.type.nbytes, 0)


def stage_text(tree, stage: str) -> str:
    entry = primary(tree)
    if entry is None:
        return f"# {NOTHING_YET}\n"
    if not isinstance(entry, CompiledEntry):
        if stage == "traced" and hasattr(entry, "graph"):
            return print_graph(entry.graph)
        return f"# this signature runs eagerly: {_eager_reason(entry)}\n"
    if stage == "traced":
        return print_graph(entry.trace.graph)
    if stage == "optimized":
        return print_graph(entry.pipeline.graph)
    if stage == "kernels":
        return kernels_text(entry)
    if stage == "source":
        return "\n\n".join(k.source for k in entry.program.kernels) + "\n"
    if stage == "memory":
        return _memory_text(entry)
    if stage in DEFAULT_PIPELINE:
        return print_graph(run_pipeline(entry.graph, target=entry.pipeline.target,
                                        stop_after=stage).graph)
    raise ValueError(f"unknown stage {stage!r}; choose from {', '.join(STAGES)}")


def kernels_text(entry) -> str:
    blocks = []
    loops = _concat_loops(entry.program)
    for node in entry.pipeline.graph.nodes:
        if node.op != "fused" and node not in loops:
            continue
        info = loop_info(loops[node]) if node in loops else kernel_info(node)
        header = [f"# kernel {info.name} [{info.kind}] target=cpu",
                  f"#   reads {info.bytes_read} B, writes {info.bytes_written} B, "
                  f"{info.intermediates} intermediates never materialized"]
        header += [f"#   {op:<12} {_loc(loc)}" for op, loc in info.source_ops]
        body = (f"# a copy loop (codegen/concat.py), {len(node.inputs)} inputs along axis "
                f"{node.attr['axis']}: --stage source prints it\n" if node in loops
                else print_graph(node.attr["body"]))
        blocks.append("\n".join(header) + "\n" + body)
    return "\n".join(blocks) if blocks else "# no kernels\n"


def _memory_text(entry) -> str:
    """The memory plan: buffers in schedule order with their lifetimes and arena offsets."""
    from ..ir.printer import Namer
    memory = entry.pipeline.stats.get("plan_memory", {})
    graph, namer = entry.pipeline.graph, Namer()
    for var in graph.inputs:
        namer.bind(var)
    defined = {}
    for index, node in enumerate(graph.nodes):
        for var in node.outputs:
            namer.bind(var)
            defined[var] = index
    arena = entry.program.arena
    lines = [f"peak bytes held (outputs included): {memory.get('peak_bytes', 0)}",
             f"eager NumPy peak estimate: {memory.get('eager_peak_bytes', 0)}",
             f"arena: {arena.size if arena else 0} bytes, reused across calls (per thread)",
             "buffer           type                  live (steps)  offset"]
    last_use, offsets = memory.get("last_use", {}), memory.get("offsets", {})
    for var, start in defined.items():
        if var in offsets:
            lines.append(f"{namer.names[var]:<16} {str(var.type):<21} {start:>4} .. "
                         f"{last_use.get(var, start):<6} {offsets[var]:>8}")
    return "\n".join(lines) + "\n"


def describe_arguments(signature, args, kwargs) -> str:
    """``x: f32[4,8], n_head: 12`` -- for signatures that have no traced graph to show."""
    try:
        bound = signature.bind(*args, **kwargs).arguments
    except TypeError:
        bound = {f"arg{i}": a for i, a in enumerate(args)} | kwargs
    return ", ".join(f"{name}: {_describe(value)}" for name, value in bound.items())


def _describe(value) -> str:
    import numpy as np

    from ..ir.types import TensorType
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype in SUPPORTED:
        return str(TensorType(np.shape(value), value.dtype))
    if isinstance(value, (dict, list, tuple)):
        return f"{type(value).__name__}[{len(value)}]"
    text = repr(value)
    return text if len(text) <= 24 else f"<{type(value).__name__}>"
