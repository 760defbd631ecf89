"""Python source for Numba CPU kernels, generated from a ``fused`` node's body.

Sizes are arguments (``n0, n1, ...``), so a kernel is shape-generic: only the rank, the dtypes,
the broadcast pattern of each operand (which dims it reads at index 0) and the scalar body reach
the source. Elementwise kernels loop over the output shape. A reduce kernel loops over its
input's shape with the kept dims outer and the reduced dims inner: *inner* values (the prologue)
are computed per input element, the accumulator lives in a local, and *outer* values (the
reduction's result and the epilogue) are computed once per output element.

Accumulators: f32 ``sum`` accumulates in f64 and rounds once (NumPy's pairwise f32 sum has the
larger error); ``prod`` runs in the native dtype; max/min/argmax/argmin propagate the first NaN
like NumPy; any/all take bools; argmax/argmin over several axes give the flat C-order index.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Lit, Node, Var, ops
from . import reductions
from .kernel import KernelPlan, plan_kernel
from .prelude import VECTOR_NAMES

INDENT = "    "
DECORATOR = '@numba.njit(cache=True, error_model="numpy", fastmath=False{extra})'


def generate_source(body: Graph) -> tuple[str, KernelPlan]:
    """The module source for ``body`` (no names, no shapes, no source lines) and its plan."""
    plan = plan_kernel(body)
    lines = _loop_lines(plan, body)
    params = ", ".join(plan.size_names + plan.input_names + plan.output_names)
    text = [_file_header(plan), "import numba", "import numpy as np", "",
            "from fusejit.codegen.prelude import *  # noqa: F403", "", ""]
    for variant, extra in (("serial", ""), ("parallel", ", parallel=True")):
        if variant == "parallel" and not plan.has_parallel_loop:
            text += ["kernel_parallel = kernel_serial", ""]
            continue
        text.append(DECORATOR.format(extra=extra))
        text.append(f"def kernel_{variant}({params}):")
        loop = "numba.prange" if variant == "parallel" else "range"
        text += [line.replace("$RANGE0", loop).replace("$RANGE", "range") for line in lines]
        text += ["", ""]
    return "\n".join(text).rstrip() + "\n", plan


def _file_header(plan: KernelPlan) -> str:
    dims = " ".join(plan.loop_dims_text())
    return (f"# fusejit kernel (generated): target=cpu kind={plan.kind} "
            f"rank={plan.rank} loops=[{dims}]")


# -- loops --------------------------------------------------------------------------------------
def _loop_lines(plan: KernelPlan, body: Graph) -> list[str]:
    emitter = _Emitter(plan, body)
    if plan.reduce is None:
        inner = emitter.element_lines(emitter.inner_nodes(), emitter.inner_outputs())
        return emitter.nest(list(range(plan.rank)), inner, first=True)
    per_row: list[str] = []
    for number in range(plan.passes):
        per_row += emitter.pass_lines(number)
    return emitter.nest(plan.kept_dims, per_row, first=True)


class _Emitter:
    """Turns body nodes into scalar statements: per element of the space (inner) or once per
    row / output element (outer)."""

    def __init__(self, plan: KernelPlan, body: Graph):
        self.plan, self.body = plan, body
        self.names: dict[Var, str] = {}
        self.outer_loaded: set[int] = set()
        for index, node in enumerate(body.nodes):
            for k, var in enumerate(node.outputs):
                self.names[var] = f"v{index}" if len(node.outputs) == 1 else f"v{index}_{k}"
        self.acc_names = {node: f"acc{k}" for k, node in enumerate(plan.reduces)}

    def nest(self, dims, inner_lines, first) -> list[str]:
        lines, depth = [], 1
        for position, dim in enumerate(dims):
            loop = "$RANGE0" if (first and position == 0) else "$RANGE"
            lines.append(f"{INDENT * depth}for i{dim} in {loop}(n{dim}):")
            depth += 1
        return lines + [INDENT * (depth - 1) + line for line in inner_lines]

    # -- which values a pass computes ---------------------------------------------------------
    def inner_nodes(self) -> list[Node]:
        return [n for n in self.body.nodes
                if n not in self.acc_names and self.plan.region_of[n.outputs[0]] == "inner"]

    def inner_outputs(self, depth: int | None = None) -> list[int]:
        """Positions of inner body outputs (of the given depth; the last pass: the rest)."""
        plan, last = self.plan, self.plan.passes - 1
        return [k for k, var in enumerate(self.body.outputs)
                if isinstance(var, Var) and plan.region_of.get(var, "inner") == "inner"
                and (depth is None or min(plan.depth.get(var, 0), last) == depth)]

    def pass_lines(self, number: int) -> list[str]:
        """One pass over a row: its accumulations and inner stores, then the outer values the
        finished reductions make available."""
        plan = self.plan
        reduces = [r for r in plan.reduces if plan.depth.get(r.inputs[0], 0) == number]
        stores = self.inner_outputs(number)
        wanted = {r.inputs[0] for r in reduces} | {self.body.outputs[k] for k in stores}
        nodes = self._closure(wanted)
        lines = [INDENT + line for r in reduces
                 for line in reductions.init_lines(r, self.acc_names[r])]
        element = self.element_lines(nodes, stores)
        for r in reduces:
            element += [INDENT + line for line in reductions.update_lines(
                r, self.ref(r.inputs[0]), self.acc_names[r])]
        lines += self.nest(plan.reduced_dims, element, first=False)
        for r in reduces:
            lines.append(f"{INDENT}{self.names[r.out]} = "
                         f"{reductions.final_expr(r, self.acc_names[r])}")
        return lines + self.outer_lines(number + 1)

    def _closure(self, wanted: set) -> list[Node]:
        """The inner nodes ``wanted`` values need, in body order (recomputed in each pass:
        the row's inputs are in cache, so recomputing beats a trip through memory)."""
        needed, producer = set(), {v: n for n in self.body.nodes for v in n.outputs}
        stack = [producer[v] for v in wanted if v in producer]
        while stack:
            node = stack.pop()
            if node in needed or node in self.acc_names:
                continue
            if self.plan.region_of[node.outputs[0]] != "inner":
                continue
            needed.add(node)
            stack += [producer[v] for v in node.inputs if isinstance(v, Var) and v in producer]
        return [n for n in self.body.nodes if n in needed]

    # -- statements ---------------------------------------------------------------------------
    def element_lines(self, nodes: list[Node], stores: list[int]) -> list[str]:
        shape, exprs = self.plan.space("inner")
        positions = {var: j for j, var in enumerate(self.body.inputs)}
        used = sorted({positions[v] for n in nodes for v in n.inputs if v in positions}
                      | {positions[self.body.outputs[k]] for k in stores
                         if self.body.outputs[k] in positions}
                      | {positions[r.inputs[0]] for r in self.plan.reduces
                         if r.inputs[0] in positions})
        lines = []
        for j in used:
            var = self.body.inputs[j]
            lines.append(f"{INDENT}x{j} = in{j}[{index_text(var.type.shape, shape, exprs)}]")
            self.names[var] = f"x{j}"
        for node in nodes:
            lines.append(f"{INDENT}{self.names[node.out]} = {self.scalar_expr(node)}")
        for k in stores:
            var = self.body.outputs[k]
            lines.append(f"{INDENT}out{k}[{index_text(var.type.shape, shape, exprs)}] = "
                         f"{self.ref(var)}")
        return lines

    def outer_lines(self, depth: int) -> list[str]:
        """Outer nodes of ``depth`` and the outer outputs they complete."""
        plan = self.plan
        shape, exprs = plan.space("outer")
        lines = []
        for node in self.body.nodes:
            if node in self.acc_names or plan.region_of[node.outputs[0]] != "outer":
                continue
            if plan.depth[node.out] != depth:
                continue
            lines += self._outer_loads(node, shape, exprs)
            lines.append(f"{INDENT}{self.names[node.out]} = {self.scalar_expr(node)}")
        for k, var in enumerate(self.body.outputs):
            if plan.region_of.get(var) == "outer" and plan.depth[var] == depth:
                lines.append(f"{INDENT}out{k}[{index_text(var.type.shape, shape, exprs)}] = "
                             f"{self.ref(var)}")
        return lines

    def _outer_loads(self, node: Node, shape, exprs) -> list[str]:
        lines = []
        for j, var in enumerate(self.body.inputs):
            if var in node.inputs and j not in self.outer_loaded:
                self.outer_loaded.add(j)
                lines.append(f"{INDENT}y{j} = in{j}[{index_text(var.type.shape, shape, exprs)}]")
        for var in node.inputs:
            if var in self.body.inputs:
                self.names[var] = f"y{self.body.inputs.index(var)}"
        return lines

    def ref(self, value) -> str:
        if isinstance(value, Lit):
            return literal(value.value, value.dtype)
        return self.names[value]

    def scalar_expr(self, node: Node) -> str:
        out = node.out.type.dtype
        operands = [self.ref(v) for v in node.inputs]
        if node.op == "cast":
            return cast_expr(operands[0], node.inputs[0].type.dtype, out)
        template = scalar_template(node)
        attrs = node.attr
        value = attrs.get("value")
        fields = {"value": literal(value, out)} if value is not None else {}
        return wrap(template.format(*operands, **fields), out)


def scalar_template(node: Node) -> str:
    """The registry's template, with the vectorizable vecmath function where one exists."""
    dtype = template_dtype(node)
    vector = VECTOR_NAMES.get((node.op, dtype.name))
    if vector is not None:
        return f"{vector}({{0}})"
    template = ops.get(node.op).template(dtype)
    if template is None:
        raise ValueError(f"{node.op} has no scalar template for {dtype}")
    return template


def template_dtype(node: Node) -> np.dtype:
    """Elementwise nodes are homogeneous; ``where``'s last operand carries the loop dtype."""
    return node.inputs[-1].type.dtype if node.inputs else node.out.type.dtype


# -- scalar spelling ----------------------------------------------------------------------------
def ctor(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bool" if dtype == np.bool_ else f"np.{dtype.name}"


def wrap(expr: str, dtype) -> str:
    """Every result is rebuilt in its dtype so that integer math wraps like NumPy's."""
    return f"{ctor(dtype)}({expr})"


def cast_expr(operand: str, source, target) -> str:
    source, target = np.dtype(source), np.dtype(target)
    if target == np.bool_:
        return f"({operand} != 0)"  # float NaN -> True, as NumPy
    if source == np.bool_:
        return f"{ctor(target)}(1 if {operand} else 0)"
    return wrap(operand, target)


def literal(value, dtype) -> str:
    """A typed constant that round-trips exactly (f32 values via their exact f64 repr)."""
    dtype = np.dtype(dtype)
    value = dtype.type(value)
    if dtype == np.bool_:
        return repr(bool(value))
    if dtype.kind in "iu":
        return f"{ctor(dtype)}({int(value)})"
    as_float = float(value)
    if as_float != as_float:
        text = "np.nan"
    elif as_float in (float("inf"), float("-inf")):
        text = "np.inf" if as_float > 0 else "-np.inf"
    else:
        text = repr(as_float)
    return f"{ctor(dtype)}({text})"


def index_text(array_shape, space_shape, space_exprs) -> str:
    """Right-aligned broadcast indexing: a dim of 1 under a larger space dim reads index 0."""
    if not array_shape:
        return "0"
    offset = len(space_shape) - len(array_shape)
    parts = []
    for j, size in enumerate(array_shape):
        dim = offset + j
        broadcast = size == 1 and space_shape[dim] != 1
        parts.append("0" if broadcast else space_exprs[dim])
    return ", ".join(parts)
