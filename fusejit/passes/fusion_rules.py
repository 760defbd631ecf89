"""Pure helpers of the fuse pass: groups, legality rules with their refusal reasons, the
dependency check that keeps the kernel graph acyclic, scheduling and building ``fused`` nodes."""
from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph, Loc, Node, SizeLit, Var, ops

FULL_EXTENT = "no row-persistent kernel for a reduction broadcast back over its rows"
CODEGEN_KINDS = "biuf"


@dataclass(frozen=True)
class Refusal:
    """A fusion the pass declined: where, which consumer op, and why."""

    loc: Loc | None
    op: str
    reason: str

    def __str__(self):
        where = self.loc.short() if self.loc is not None else "<unknown>"
        return f"{where}: {self.op}: {self.reason}"


@dataclass(eq=False)
class Group:
    """Nodes becoming one kernel. ``shape``: the iteration space (a reduce group: the
    reductions' input); ``region``: each member output is ``inner`` (per element of ``shape``)
    or ``outer`` (a reduction's result and what is computed from it, per output element).

    A group may hold several reductions over the same axes of the same space (softmax's max and
    sum, layernorm's mean and variance) and inner values computed from outer ones (broadcast
    back over the row): codegen runs such a *row-persistent* kernel as several passes over each
    row, in dependency order (``codegen/kernel.py``)."""

    shape: tuple[int, ...]
    nodes: set[Node] = field(default_factory=set)
    reduces: list[Node] = field(default_factory=list)
    region: dict[Var, str] = field(default_factory=dict)

    @staticmethod
    def start(node: Node, reduce: Node | None) -> Group:
        if reduce is None:
            group = Group(node.out.type.shape)
            group.add(node, "inner")
        else:
            group = Group(reduce.inputs[0].type.shape)
            group.add_reduce(reduce)
        return group

    @property
    def reduce(self) -> Node | None:
        """The first reduction (its axes and keepdims are every reduction's)."""
        return self.reduces[0] if self.reduces else None

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.reduce.out.type.shape

    @property
    def is_row_persistent(self) -> bool:
        """Several passes per row: outer values read back inner (every chained reduction reads
        one; independent reductions merged side by side share one pass)."""
        return any(self.region[node.outputs[0]] == "inner" and any(
            self.region.get(v) == "outer" for v in node.inputs if isinstance(v, Var))
            for node in self.nodes)

    def add(self, node: Node, region: str) -> None:
        self.nodes.add(node)
        self.region.update({var: region for var in node.outputs})

    def add_reduce(self, node: Node) -> None:
        self.reduces.append(node)
        self.add(node, "outer")

    def absorb(self, other: Group, region: str) -> None:
        for node in other.nodes:
            self.add(node, region)

    def absorb_reductions(self, other: Group, index) -> None:
        """A sibling reduce group over the same space and axes: its nodes keep their regions,
        and each reduction is accumulated in the same pass as those of its depth."""
        self.nodes |= other.nodes
        self.region.update(other.region)
        self.reduces = sorted(self.reduces + other.reduces, key=index.get)


# -- what may be fused --------------------------------------------------------------------------
def codegen_dtype_ok(node: Node) -> bool:
    dtypes = [v.type.dtype for v in (*node.inputs, *node.outputs)]
    if any(d.kind not in CODEGEN_KINDS or d == np.float16 for d in dtypes):
        return False
    return not (node.op in ("sum", "prod") and node.inputs[0].type.dtype == np.bool_)


def template_dtype(node: Node):
    return node.inputs[-1].type.dtype if node.inputs else node.out.type.dtype


# On the CPU a kernel computes these with one scalar libm call per element (``vecmath`` has no
# vectorizable version), while NumPy has SIMD loops for them where it dispatches its AVX-512
# ones (SVML). Measured over 2M elements on Zen 4 (AVX-512), a one-op kernel ran slower than
# the NumPy ufunc by 7x (float32 sin, cos), 8-20x (float32 sinh, cosh, tan, arctan, arctan2,
# log10), 4x (float32 log2, power) and 2-6x (the float64 ones). Left out of kernels they run as
# NumPy's ufunc, never slower than eager, at the price of one pass over memory. float64 sin
# and cos are not listed: NumPy's loops for them are scalar libm (17 ns per element), and an
# elementwise kernel runs vecmath's (1.4 ns, falling back to libm past |x| = 2**26). float32
# sin and cos stay with NumPy's AVX-512 loops (0.5-0.8 ns per element against 1.2 for
# vecmath's, which evaluates them in float64).
NUMPY_AVX512_LOOPS = {
    **{op: ("float32", "float64") for op in (
        "tan", "sinh", "cosh", "arctan", "arctan2", "log2", "log10", "pow")},
    "sin": ("float32",), "cos": ("float32",),
}


def numpy_simd_loops(cpu_features: dict, machine: str) -> dict:
    """The ops NumPy runs faster than a kernel on this machine: ``NUMPY_AVX512_LOOPS`` where
    NumPy dispatches its AVX-512 loops, none on an x86 CPU without them (there NumPy's loops
    for these ops are scalar libm, or float32 sin/cos at 1.9 ns per element: on the AVX2 EPYC,
    2M float32/float64 elements, ``op(x) + 1`` fused ran 1.4x (float32 sin, cos), 1.1x (float32
    log10) and 1.6-2.3x (the rest) faster than the NumPy ufunc plus a kernel), and the table
    elsewhere (not measured: NumPy's ufunc is never slower than eager)."""
    x86 = machine.lower() in ("x86_64", "amd64", "i386", "i686", "x86")
    if x86 and not cpu_features.get("AVX512_SKX", False):
        return {}
    return NUMPY_AVX512_LOOPS


def _host_simd_loops() -> dict:
    from numpy._core._multiarray_umath import __cpu_features__
    return numpy_simd_loops(__cpu_features__, platform.machine())


SIMD_IN_NUMPY = _host_simd_loops()


# A kernel holding just an argmax/argmin, over 2048x1024 on Zen 4 (AVX-512), against NumPy's
# own loop: over every axis 0.9-1.0x (blocks in chunks of rows over two threads, against
# NumPy's one: both at memory speed); over the last axis 0.8-0.9x for int32, int64 and
# float32, 1.5x for float64 (NumPy's float64 loop is the slow one); over a leading axis 1.1-2x
# (NumPy strides down the columns). With an elementwise prologue fused in, the kernel wins
# everywhere (1.8-14x): that saves a pass over memory.
NUMPY_ARG_REDUCTION = ("NumPy's SIMD loop is faster than a kernel's for an argmax/argmin with "
                       "nothing fused into it: runs through NumPy")


def numpy_arg_reduction_faster(node: Node) -> bool:
    if node.op not in ("argmax", "argmin"):
        return False
    rank, axes = node.inputs[0].type.ndim, set(node.attr["axes"])
    every_axis = axes >= set(range(rank))
    return every_axis or (rank - 1 in axes and node.inputs[0].type.dtype != np.float64)


def is_fusable_elementwise(node: Node, target: str) -> bool:
    opdef = ops.REGISTRY.get(node.op)
    if opdef is None or opdef.kind != ops.ELEMENTWISE or not codegen_dtype_ok(node):
        return False
    if target == "cpu" and _numpy_loop_faster(node):
        return False
    return opdef.template(template_dtype(node)) is not None


def _numpy_loop_faster(node: Node) -> bool:
    return str(node.out.type.dtype) in SIMD_IN_NUMPY.get(node.op, ())


def unfusable_reason(node: Node, target: str) -> str:
    if not codegen_dtype_ok(node):
        dtypes = sorted({str(v.type.dtype) for v in (*node.inputs, *node.outputs)})
        return f"no kernel codegen for dtype {', '.join(dtypes)}"
    if target == "cpu" and _numpy_loop_faster(node):
        return (f"NumPy's SIMD loop for {node.op} on {node.out.type.dtype} is faster than a "
                f"kernel's: runs as a NumPy ufunc")
    return f"no scalar template for {node.op} on {template_dtype(node)}"


def producer_reason(producer: Node, target: str) -> str:
    opdef = ops.REGISTRY.get(producer.op)
    kind = opdef.kind if opdef is not None else ops.OPAQUE
    if kind == ops.MATMUL:
        return "producer is an opaque matmul (BLAS call)"
    if kind == ops.VIEW:
        return f"producer is a view ({producer.op}), run as a NumPy view"
    if kind == ops.INJECTIVE:
        return f"producer {producer.op} is injective (runs through NumPy)"
    if kind in (ops.ELEMENTWISE, ops.REDUCE):
        return f"producer {producer.op} is not fusable ({unfusable_reason(producer, target)})"
    return f"producer {producer.op} is opaque (host call)"


def _shape_text(value: Var, node: Node) -> str:
    return f"different shape ({value.type} vs {node.out.type})"


def join_reason(group: Group, node: Node) -> str | None:
    """Why ``node`` may not join ``group`` (``None``: it may), ignoring cycles."""
    in_group = [v for v in node.inputs if isinstance(v, Var) and v in group.region]
    regions = {group.region[v] for v in in_group}
    shape = node.out.type.shape
    if group.reduce is None or regions == {"inner"}:
        return None if shape == group.shape else _shape_text(in_group[0], node)
    if regions == {"outer"} and shape == group.out_shape:
        return None
    if shape == group.shape:
        return row_persistent_reason(group)
    if regions == {"outer"}:
        return _shape_text(in_group[0], node)
    return "mixes values from before and after the reduction"


def row_persistent_reason(group: Group) -> str | None:
    """Whether reduction results may be broadcast back over the rows they reduced (``None``:
    they may). Rows must be the trailing axes, so that each row is contiguous and stays in
    cache between the kernel's passes, and results must keep their dims to broadcast back."""
    reduce = group.reduce
    axes, rank = tuple(reduce.attr["axes"]), len(group.shape)
    if not axes or axes != tuple(range(rank - len(axes), rank)):
        return f"{FULL_EXTENT}: reduces axes {axes}, not the trailing ones"
    if not reduce.attr["keepdims"]:
        return f"{FULL_EXTENT}: the reduction drops its axes (keepdims=False)"
    if reduce.op in ("argmax", "argmin"):
        return f"{FULL_EXTENT}: {reduce.op} results are indices, not row statistics"
    return None


def region_for(group: Group, node: Node) -> str:
    in_group = [v for v in node.inputs if isinstance(v, Var) and v in group.region]
    if not any(group.region[v] == "outer" for v in in_group):
        return "inner"
    if group.reduce is not None and node.out.type.shape == group.out_shape:
        return "outer"
    return "inner"  # broadcast back over the row: a later pass of a row-persistent kernel


def prologue_reason(group: Group, reduce: Node) -> str | None:
    """Why a reduction may not join the group producing its input (``None``: it may)."""
    value = reduce.inputs[0]
    if group.reduce is not None and group.region.get(value) == "outer":
        return "reduces a value of the kernel's output space (another iteration space)"
    if group.shape != value.type.shape:
        return _shape_text(value, reduce)
    if group.reduce is None:
        return None
    first = group.reduce
    if reduce.attr != first.attr:
        return (f"reduces axes {reduce.attr['axes']} keepdims={reduce.attr['keepdims']}, the "
                f"kernel's {first.op} reduces {first.attr['axes']} "
                f"keepdims={first.attr['keepdims']}")
    if reduce.op in ("argmax", "argmin"):
        return f"{reduce.op} is not chained into a row-persistent kernel"
    return row_persistent_reason(group)


def merge_reason(group: Group, other: Group, region: str) -> str | None:
    """Whether a second producer group of a node may merge into the group the node joined.
    Only into the inner region: outer values live in the output's index space."""
    if other.reduce is not None:
        return "one reduction per kernel"
    if region != "inner" or other.shape != group.shape:
        return "different shape"
    return None


def horizontal_key(group: Group) -> tuple | None:
    """Groups that may merge side by side share this key: elementwise groups over one space,
    or reduce groups over one space and the same axes (not argmax/argmin, whose kernel holds
    one reduction). None: the group merges with none."""
    if group.reduce is None:
        return ("elementwise", group.shape)
    if any(r.op in ("argmax", "argmin") for r in group.reduces):
        return None
    return ("reduce", group.shape, repr(sorted(group.reduce.attr.items())))


def sibling_reason(group: Group, other: Group) -> str | None:
    """Why two reduce groups over one space and axes may not merge side by side (``None``:
    they may). One may read the other's results where it combines results (an epilogue such
    as ``x.sum(-1) + x.max(-1)``); reading them per element of the rows, or into a reduction
    (batch-norm's variance reads its mean), chains them: a row-persistent kernel, which
    placing the reader has refused unless ``row_persistent_reason`` allows it."""
    for reader, source in ((group, other), (other, group)):
        for node in reader.nodes:
            read = [v for v in node.inputs if isinstance(v, Var) and v in source.region]
            if not read:
                continue
            if any(source.region[v] != "outer" for v in read):
                return "reads per-element values of the other kernel"
            if reader.region[node.outputs[0]] != "outer" or node in reader.reduces:
                reason = row_persistent_reason(group)
                if reason is not None:
                    return reason
    return None


def shared_inputs(group: Group, other: Group) -> bool:
    """Whether two groups read a common Var produced outside both (or a graph input)."""
    def reads(g: Group) -> set[Var]:
        return {v for n in g.nodes for v in n.inputs
                if isinstance(v, Var) and v not in g.region}
    return not reads(group).isdisjoint(reads(other))


# -- dependencies and scheduling ----------------------------------------------------------------
def depends_on(start: Node, members: set[Node], producer, index, group_of, first: int) -> bool:
    """Whether ``start``'s unit (its group, or itself) transitively depends on ``members``.
    Walks whole groups, so a cycle through another kernel is seen too."""
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node in members:
            return True
        if node in seen:
            continue
        unit = group_of.get(node)
        unit_nodes = unit.nodes if unit is not None else {node}
        seen.update(unit_nodes)
        if max(index[n] for n in unit_nodes) < first:
            continue
        for member in unit_nodes:
            stack.extend(producer[v] for v in member.inputs
                         if isinstance(v, Var) and v in producer)
    return False


def outside_uses(graph: Graph, group_of) -> set[Var]:
    """Group values read by another unit or returned: they become kernel outputs."""
    producer = graph.producers()
    used = {v for v in graph.outputs if isinstance(v, Var)}
    for node in graph.nodes:
        for value in node.inputs:
            source = producer.get(value) if isinstance(value, Var) else None
            home = group_of.get(source) if source is not None else None
            if home is not None and group_of.get(node) is not home:
                used.add(value)
    return used


def schedule(units: list, producer, group_of, index) -> list:
    """Units in an order where every operand is defined first (the unit graph is acyclic)."""
    order, done = [], set()

    def visit(unit):
        if id(unit) in done:
            return
        done.add(id(unit))
        members = unit.nodes if isinstance(unit, Group) else (unit,)
        for member in sorted(members, key=index.get):
            for value in member.inputs:
                source = producer.get(value) if isinstance(value, Var) else None
                if source is not None and group_of.get(source, source) is not unit:
                    visit(group_of.get(source, source))
        order.append(unit)

    for unit in units:
        visit(unit)
    return order


# -- building the fused node --------------------------------------------------------------------
def build_fused(group: Group, number: int, used_outside: set[Var], graph: Graph,
                index) -> Node:
    members = sorted(group.nodes, key=index.get)
    inputs: list = []   # Vars, then element counts: arguments, not source text
    for member in members:
        for value in member.inputs:
            if isinstance(value, Var) and value not in group.region and value not in inputs:
                inputs.append(value)
    inputs += list(dict.fromkeys(v for m in members for v in m.inputs if isinstance(v, SizeLit)))
    outputs = [v for m in members for v in m.outputs if v in used_outside]
    anchor = group.reduces[-1] if group.reduces else members[-1]
    name = f"k{number}_{anchor.op}_{_scope(anchor.loc, graph.name)}"
    body = _body(name, members, inputs, outputs)
    kind = "elementwise" if group.reduce is None else (
        "row" if group.is_row_persistent else "reduce")
    return Node("fused", inputs, outputs, {"body": body, "kind": kind, "name": name},
                anchor.loc)


def _body(name: str, members: list[Node], inputs: list[Var], outputs: list[Var]) -> Graph:
    """The kernel's own graph, on fresh Vars (names belong to the printer)."""
    fresh = {v: Var(v.type, getattr(v, "hint", None)) for v in inputs}
    nodes = []
    for member in members:
        operands = [fresh.get(v, v) if isinstance(v, (Var, SizeLit)) else v
                    for v in member.inputs]
        results = [Var(v.type) for v in member.outputs]
        fresh.update(zip(member.outputs, results, strict=True))
        nodes.append(member.replace(inputs=operands, outputs=results))
    return Graph(name, [fresh[v] for v in inputs], nodes, [fresh[v] for v in outputs])


def _scope(loc: Loc | None, fallback: str) -> str:
    """The innermost named function of the location's scope: a generator expression,
    comprehension or lambda (``<genexpr>``) is named by the function around it."""
    parts = [p for p in (loc.scope.split("/") if loc is not None and loc.scope else ())
             if not p.startswith("<")]
    return re.sub(r"\W", "_", parts[-1] if parts else fallback) or "main"
