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
        return emitter.nest(list(range(plan.rank)), emitter.region_lines("inner"), first=True)
    kept, reduced = plan.kept_dims, plan.reduced_dims
    inner = emitter.nest(reduced, emitter.region_lines("inner") + emitter.update_lines(),
                         first=False)
    per_output = emitter.init_lines() + inner + emitter.region_lines("outer")
    return emitter.nest(kept, per_output, first=True)


class _Emitter:
    """Turns body nodes into scalar statements for one region (inner or outer)."""

    def __init__(self, plan: KernelPlan, body: Graph):
        self.plan, self.body = plan, body
        self.names: dict[Var, str] = {}
        for index, node in enumerate(body.nodes):
            for k, var in enumerate(node.outputs):
                self.names[var] = f"v{index}" if len(node.outputs) == 1 else f"v{index}_{k}"

    def nest(self, dims, inner_lines, first) -> list[str]:
        lines, depth = [], 1
        for position, dim in enumerate(dims):
            loop = "$RANGE0" if (first and position == 0) else "$RANGE"
            lines.append(f"{INDENT * depth}for i{dim} in {loop}(n{dim}):")
            depth += 1
        return lines + [INDENT * (depth - 1) + line for line in inner_lines]

    def region_lines(self, region: str) -> list[str]:
        plan = self.plan
        shape, exprs = plan.space(region)
        lines = []
        for j in plan.loads[region]:
            var = self.body.inputs[j]
            index = index_text(var.type.shape, shape, exprs)
            prefix = "x" if region == "inner" else "y"
            lines.append(f"{INDENT}{prefix}{j} = in{j}[{index}]")
            self.names[var] = f"{prefix}{j}"
        for node in plan.regions[region]:
            lines += self._node_lines(node)
        for k, var in enumerate(self.body.outputs):
            if plan.output_region(var) == region:
                index = index_text(var.type.shape, shape, exprs)
                lines.append(f"{INDENT}out{k}[{index}] = {self.ref(var)}")
        return lines

    def init_lines(self) -> list[str]:
        return [INDENT + line for line in reductions.init_lines(self.plan.reduce)]

    def update_lines(self) -> list[str]:
        value = self.ref(self.plan.reduce.inputs[0])
        return [INDENT + line for line in reductions.update_lines(self.plan.reduce, value)]

    def ref(self, value) -> str:
        if isinstance(value, Lit):
            return literal(value.value, value.dtype)
        return self.names[value]

    def _node_lines(self, node: Node) -> list[str]:
        name = self.names[node.out]
        if node.op in ops.REDUCE_OPS:
            return [f"{INDENT}{name} = {reductions.final_expr(node)}"]
        return [f"{INDENT}{name} = {self.scalar_expr(node)}"]

    def scalar_expr(self, node: Node) -> str:
        out = node.out.type.dtype
        operands = [self.ref(v) for v in node.inputs]
        if node.op == "cast":
            return cast_expr(operands[0], node.inputs[0].type.dtype, out)
        template = ops.get(node.op).template(template_dtype(node))
        if template is None:
            raise ValueError(f"{node.op} has no scalar template for {template_dtype(node)}")
        attrs = node.attr
        value = attrs.get("value")
        fields = {"value": literal(value, out)} if value is not None else {}
        return wrap(template.format(*operands, **fields), out)


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
