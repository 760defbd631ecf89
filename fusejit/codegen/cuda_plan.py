"""How a ``fused`` body maps onto a CUDA grid.

Two shapes of kernel cover every body the fuse pass builds:

- ``elementwise``: no reduction; one grid-stride loop over the flat iteration space.
- ``rows``: one or more reductions over the same input shape and axes (a plain reduction with
  prologue/epilogue, or a *row-persistent* group such as softmax or layernorm). One block owns
  one *row* (one output element of the reductions) at a time; its threads stride over the
  row's reduced elements once per reduction (a *phase*), combine their partial results with a
  shared-memory tree, and every thread then holds the row's value. Values are either ``full``
  (one per input element, recomputed inside each phase loop that needs them) or ``outer``
  (one per row, held in registers). A final loop writes the full-shape outputs.

Bodies outside these shapes raise ``NotImplementedError`` so the runtime can fall back.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph, Lit, Node, Var, ops

FULL, OUTER = "full", "outer"


@dataclass
class CudaPlan:
    kind: str                               # "elementwise" | "rows"
    body: Graph
    space: tuple[int, ...]                  # the full iteration space (padded: never 0-d)
    axes: tuple[int, ...] = ()              # reduced dims (rows)
    reduces: list[Node] = field(default_factory=list)
    space_of: dict = field(default_factory=dict)   # Var -> FULL | OUTER
    ready: dict = field(default_factory=dict)      # outer Var -> phase after which it exists

    @property
    def rank(self) -> int:
        return len(self.space)

    @property
    def kept(self) -> list[int]:
        return [d for d in range(self.rank) if d not in self.axes]

    @property
    def keep_shape(self) -> tuple[int, ...]:
        return tuple(1 if d in self.axes else n for d, n in enumerate(self.space))

    @property
    def drop_shape(self) -> tuple[int, ...]:
        return tuple(self.space[d] for d in self.kept)

    def outer_space(self, shape) -> tuple[tuple[int, ...], list[str]]:
        """The space (and index expressions) an outer value of ``shape`` lives in."""
        if tuple(shape) == self.drop_shape:
            return self.drop_shape, [f"i{d}" for d in self.kept]
        if tuple(shape) == self.keep_shape:
            return self.keep_shape, ["0" if d in self.axes else f"i{d}" for d in range(self.rank)]
        raise NotImplementedError(f"outer value of shape {shape} in a row kernel over "
                                  f"{self.space} reducing {self.axes}")

    def full_exprs(self) -> list[str]:
        return [f"i{d}" for d in range(self.rank)]


def plan_cuda(body: Graph) -> CudaPlan:
    reduces = [node for node in body.nodes if node.op in ops.REDUCE_OPS]
    if not reduces:
        shapes = [v.type.shape for n in body.nodes for v in n.outputs]
        space = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        plan = CudaPlan("elementwise", body, space or (1,))
        plan.space_of = {v: FULL for n in body.nodes for v in n.outputs}
        return plan
    return _rows_plan(body, reduces)


def _rows_plan(body: Graph, reduces: list[Node]) -> CudaPlan:
    first = reduces[0]
    shape, axes = first.inputs[0].type.shape, tuple(first.attr["axes"])
    for node in reduces[1:]:
        if node.inputs[0].type.shape != shape or tuple(node.attr["axes"]) != axes:
            raise NotImplementedError("reductions over different spaces in one kernel")
    plan = CudaPlan("rows", body, tuple(shape) or (1,), axes if shape else (0,), reduces)
    drop = tuple(shape[d] for d in range(len(shape)) if d not in axes)
    for node in body.nodes:
        full = node.op not in ops.REDUCE_OPS and node.out.type.shape == tuple(shape) != drop
        plan.space_of.update({v: FULL if full else OUTER for v in node.outputs})
    _check_operands(plan)
    _assign_ready(plan)
    return plan


def _check_operands(plan: CudaPlan) -> None:
    """Full nodes may read outer values only as per-row broadcasts; outer nodes never read
    full values (their shape could not hold them)."""
    for node in plan.body.nodes:
        space = plan.space_of[node.outputs[0]]
        for value in node.inputs:
            if not isinstance(value, Var) or value not in plan.space_of:
                continue
            if space == OUTER and node.op not in ops.REDUCE_OPS and plan.space_of[value] == FULL:
                raise NotImplementedError(f"{node.op}: per-row value computed from a full one")
            if space == FULL and plan.space_of[value] == OUTER:
                _check_row_broadcast(plan, value)


def _check_row_broadcast(plan: CudaPlan, value: Var) -> None:
    shape = value.type.shape
    aligned = (1,) * (plan.rank - len(shape)) + tuple(shape)
    for d, size in enumerate(aligned):
        wanted = 1 if d in plan.axes else plan.space[d]
        if size != wanted and not (size == 1 and wanted == 1):
            raise NotImplementedError(f"value of shape {shape} is not a per-row broadcast "
                                      f"over {plan.space} reducing {plan.axes}")


def _assign_ready(plan: CudaPlan) -> None:
    """An outer value exists after the latest reduction it depends on (-1: from the start);
    a full value needed by reduction ``p`` may only depend on earlier reductions."""
    phase_of = {node.out: p for p, node in enumerate(plan.reduces)}
    ready: dict[Var, int] = {}
    for node in plan.body.nodes:
        deps = [ready[v] for v in node.inputs if isinstance(v, Var) and v in ready]
        level = max(deps, default=-1)
        if node.out in phase_of:
            if level >= phase_of[node.out]:
                raise NotImplementedError(f"{node.op} depends on a later reduction")
            level = phase_of[node.out]
        for var in node.outputs:
            ready[var] = level
    plan.ready = ready


def needed_nodes(plan: CudaPlan, roots, space=FULL) -> list[Node]:
    """Body nodes of ``space`` that ``roots`` transitively need, in body order."""
    producer = plan.body.producers()
    wanted: set[Node] = set()
    stack = [v for v in roots if isinstance(v, Var)]
    while stack:
        var = stack.pop()
        node = producer.get(var)
        if node is None or node in wanted or plan.space_of[var] != space:
            continue
        wanted.add(node)
        stack.extend(v for v in node.inputs if isinstance(v, Var))
    return [node for node in plan.body.nodes if node in wanted]


def is_literal(value) -> bool:
    return isinstance(value, Lit)
