"""``@cuda.jit`` source for a fused body, from its ``CudaPlan``.

Sizes are arguments (``n0, n1, ...``), so kernels are shape-generic; loops are grid-stride, so
any launch configuration computes the same result. Scalar statements come from the op
registry's templates, with helper names resolved in ``cuda_prelude`` (``rint`` on f32 becomes
``rint_f32``) and every result rebuilt in its dtype so integer math wraps like NumPy's.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir import Graph, Lit, Node, Var, ops
from . import cuda_prelude, cuda_reduce
from .cuda_plan import FULL, OUTER, CudaPlan, needed_nodes
from .numba_cpu import cast_expr, exact_comparison, index_text, literal, template_dtype, wrap

INDENT = "    "
SUFFIXED = {name.rsplit("_", 1)[0] for name in cuda_prelude.__all__
            if name.endswith(("_f32", "_f64"))}
# Numba's CUDA target cannot lower builtin max/min on booleans.
BOOL_TEMPLATES = {"max": "{0} or {1}", "fmax": "{0} or {1}", "min": "{0} and {1}",
                  "fmin": "{0} and {1}", "clamp_lo": "{0} or {1}", "clamp_hi": "{0} and {1}"}
# A float product rounded on its own, as NumPy's: NVVM would contract ``a * b + c`` into one
# FMA (cuda_prelude's ``mul_rn``; matmul accumulation keeps FMA, as BLAS does)
FLOAT_TEMPLATES = {"mul": "mul_rn({0}, {1})"}
_CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(")


def indent(lines: list[str], depth: int = 1) -> list[str]:
    return [INDENT * depth + line for line in lines]


def resolve_helpers(expr: str, dtype) -> str:
    """``rint(x)`` -> ``rint_f32(x)`` where the prelude has a typed variant."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return expr
    suffix = "f32" if dtype == np.float32 else "f64"
    return _CALL.sub(lambda m: f"{m.group(1)}_{suffix}(" if m.group(1) in SUFFIXED
                     else m.group(0), expr)


class Statements:
    """Names body values and spells their scalar statements and indexed loads/stores."""

    def __init__(self, body: Graph):
        self.body = body
        self.names: dict[Var, str] = {}
        self.positions = {var: j for j, var in enumerate(body.inputs)}
        self.fixed: set[Var] = set()   # inputs named by the caller (never loaded)
        for index, node in enumerate(body.nodes):
            for k, var in enumerate(node.outputs):
                self.names[var] = f"v{index}" if len(node.outputs) == 1 else f"v{index}_{k}"

    def ref(self, value) -> str:
        if isinstance(value, Lit):
            return literal(value.value, value.dtype)
        return self.names[value]

    def load(self, var: Var, name: str, shape, exprs) -> str:
        j = self.positions[var]
        self.names[var] = name
        return f"{name} = in{j}[{index_text(var.type.shape, shape, exprs)}]"

    def node_line(self, node: Node) -> str:
        out = node.out.type.dtype
        operands = [self.ref(v) for v in node.inputs]
        if node.op == "cast":
            cast = cast_expr(operands[0], node.inputs[0].type.dtype, out)
            return f"{self.names[node.out]} = {cast}"
        exact = exact_comparison(node, operands)
        if exact is not None:
            return f"{self.names[node.out]} = {wrap(exact, out)}"
        dtype = template_dtype(node)
        template = ops.get(node.op).template(dtype)
        if dtype == np.bool_ and node.op in BOOL_TEMPLATES:
            template = BOOL_TEMPLATES[node.op]
        if np.dtype(dtype).kind == "f" and node.op in FLOAT_TEMPLATES:
            template = FLOAT_TEMPLATES[node.op]
        if template is None:
            raise NotImplementedError(f"{node.op} has no scalar template for {dtype}")
        value = node.attr.get("value")
        fields = {"value": literal(value, out)} if value is not None else {}
        expr = resolve_helpers(template.format(*operands, **fields), dtype)
        return f"{self.names[node.out]} = {wrap(expr, out)}"

    def store(self, k: int, var, shape, exprs) -> str:
        return f"out{k}[{index_text(var.type.shape, shape, exprs)}] = {self.ref(var)}"

    def input_vars(self, nodes) -> list[Var]:
        seen: list[Var] = []
        for node in nodes:
            for value in node.inputs:
                if value in self.positions and value not in self.fixed and value not in seen:
                    seen.append(value)
        return seen


def element_lines(stmts: Statements, nodes, shape, exprs, outputs) -> list[str]:
    """Loads, statements and stores for one element of ``shape`` (``outputs``: (k, var))."""
    lines = [stmts.load(v, f"x{stmts.positions[v]}", shape, exprs)
             for v in stmts.input_vars(nodes)]
    lines += [stmts.node_line(node) for node in nodes]
    return lines + [stmts.store(k, var, shape, exprs) for k, var in outputs]


def unravel_lines(flat: str, dims: list[int]) -> list[str]:
    """C-order multi-index ``i<d>`` for ``dims`` from the flat index ``flat``."""
    if not dims:
        return []
    if len(dims) == 1:
        return [f"i{dims[0]} = {flat}"]
    lines = [f"rest = {flat}"]
    for d in reversed(dims[1:]):
        lines += [f"i{d} = rest % n{d}", f"rest = rest // n{d}"]
    return lines + [f"i{dims[0]} = rest"]


def product(dims: list[int]) -> str:
    return " * ".join(f"n{d}" for d in dims) if dims else "1"


def kernel_signature(plan: CudaPlan) -> str:
    names = ([f"n{d}" for d in range(plan.rank)] + [f"in{j}" for j in range(len(plan.body.inputs))]
             + [f"out{k}" for k in range(len(plan.body.outputs))])
    return f"def kernel({', '.join(names)}):"


def generate_body(plan: CudaPlan) -> list[str]:
    if plan.kind == "elementwise":
        return _elementwise_lines(plan)
    return _RowsEmitter(plan).lines()


def _elementwise_lines(plan: CudaPlan) -> list[str]:
    stmts = Statements(plan.body)
    dims = list(range(plan.rank))
    outputs = list(enumerate(plan.body.outputs))
    inner = unravel_lines("flat", dims)
    inner += element_lines(stmts, plan.body.nodes, plan.space, plan.full_exprs(), outputs)
    head = [f"total = {product(dims)}",
            "for flat in range(cuda.grid(1), total, cuda.gridsize(1)):"]
    return indent(head + indent(inner))


class _RowsEmitter:
    """One block per row: a phase loop per reduction, then the full-shape outputs."""

    def __init__(self, plan: CudaPlan):
        self.plan, self.stmts = plan, Statements(plan.body)
        self.emitted_outer: set[Node] = set()
        # one shared array per accumulator dtype, reused phase after phase (each tree ends
        # with a barrier): one per phase passed the 48 KiB of static shared memory a block
        # may have once ~24 reductions were fused into one kernel
        self.shared = [cuda_reduce.shared_name(node) for node in plan.reduces]

    def lines(self) -> list[str]:
        plan = self.plan
        head = [f"rows = {product(plan.kept)}", f"cols = {product(list(plan.axes))}",
                "tid = cuda.threadIdx.x", "width = cuda.blockDim.x"]
        head += list(dict.fromkeys(line for node, name in zip(plan.reduces, self.shared,
                                                              strict=True)
                                   for line in cuda_reduce.shared_lines(node, name)))
        row = unravel_lines("row", plan.kept) + self._outer_lines(-1)
        for p, node in enumerate(plan.reduces):
            row += self._phase_lines(p, node) + self._outer_lines(p)
        row += self._final_lines()
        loop = ["for row in range(cuda.blockIdx.x, rows, cuda.gridDim.x):"]
        return indent(head + loop + indent(row))

    def _full_loop(self, roots, tail) -> list[str]:
        """A loop over the row's reduced elements computing what ``roots`` need; ``tail()``
        gives the lines that consume them (called after the loads named the inputs)."""
        plan, stmts = self.plan, self.stmts
        nodes = needed_nodes(plan, roots, FULL)
        inner = unravel_lines("col", list(plan.axes))
        inner += element_lines(stmts, nodes, plan.space, plan.full_exprs(), [])
        loaded = stmts.input_vars(nodes)
        inner += [stmts.load(v, f"x{stmts.positions[v]}", plan.space, plan.full_exprs())
                  for v in roots if v in stmts.positions and v not in loaded]
        return ["for col in range(tid, cols, width):"] + indent(inner + tail())

    def _phase_lines(self, p: int, node: Node) -> list[str]:
        acc, value = f"acc{p}", node.inputs[0]
        loop = self._full_loop(
            [value], lambda: cuda_reduce.update_lines(node, acc, self.stmts.ref(value), "col"))
        final = f"{self.stmts.names[node.out]} = {cuda_reduce.final_expr(node, acc)}"
        return (cuda_reduce.init_lines(node, acc) + loop
                + cuda_reduce.tree_lines(node, acc, self.shared[p]) + [final])

    def _outer_lines(self, phase: int) -> list[str]:
        plan, stmts, lines = self.plan, self.stmts, []
        for node in plan.body.nodes:
            if (node.op in ops.REDUCE_OPS or plan.space_of[node.out] != OUTER
                    or plan.ready[node.out] != phase):
                continue
            shape, exprs = plan.outer_space(node.out.type.shape)
            for var in stmts.input_vars([node]):
                lines.append(stmts.load(var, f"y{stmts.positions[var]}_{len(shape)}", shape,
                                        exprs))
            lines.append(stmts.node_line(node))
        return lines

    def _final_lines(self) -> list[str]:
        plan, stmts = self.plan, self.stmts
        full = [(k, v) for k, v in enumerate(plan.body.outputs) if _space(plan, v) == FULL]
        outer = [(k, v) for k, v in enumerate(plan.body.outputs) if _space(plan, v) == OUTER]
        lines = []
        if full:
            stores = [stmts.store(k, v, plan.space, plan.full_exprs()) for k, v in full]
            lines += self._full_loop([v for _, v in full], lambda: stores)
        if outer:
            stores = []
            for k, var in outer:
                shape, exprs = plan.outer_space(var.type.shape)
                stores.append(stmts.store(k, var, shape, exprs))
            lines += ["if tid == 0:"] + indent(stores)
        return lines


def _space(plan: CudaPlan, value) -> str:
    if isinstance(value, Lit):
        return OUTER
    return plan.space_of.get(value, FULL)
