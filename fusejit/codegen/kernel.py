"""Kernel description (``KernelPlan``: iteration space, regions, loads, the reduction) and the
callable ``CompiledKernel`` the runtime holds per fused node."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph, Node, Var, ops

PARALLEL_MIN_ELEMENTS = 2 ** 18  # below this, prange's thread start-up costs more than it saves


@dataclass
class KernelPlan:
    """How a body maps onto loops. Rank-0 spaces are padded to ``(1,)`` (index ``0``)."""

    kind: str
    space_shape: tuple[int, ...]            # padded iteration space (reduce: its input)
    n_inputs: int
    n_outputs: int
    reduce: Node | None = None
    axes: tuple[int, ...] = ()
    keepdims: bool = False
    out_shape: tuple[int, ...] = ()
    regions: dict = field(default_factory=lambda: {"inner": [], "outer": []})
    loads: dict = field(default_factory=lambda: {"inner": [], "outer": []})
    region_of: dict = field(default_factory=dict)

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
    def has_parallel_loop(self) -> bool:
        return self.reduce is None or bool(self.kept_dims)

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
        return [f"i{d}" for d in self.kept_dims] + ["|"] + [f"i{d}" for d in self.axes]

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
    reduces = [node for node in body.nodes if node.op in ops.REDUCE_OPS]
    if len(reduces) > 1:
        raise ValueError(f"{body.name}: a kernel holds one reduction, found {len(reduces)}")
    if reduces:
        plan = _reduce_plan(body, reduces[0])
    else:
        shape = np.broadcast_shapes(*(v.type.shape for n in body.nodes for v in n.outputs))
        plan = KernelPlan("elementwise", tuple(shape) or (1,), len(body.inputs),
                          len(body.outputs))
    _assign_regions(plan, body)
    return plan


def _reduce_plan(body: Graph, node: Node) -> KernelPlan:
    shape = node.inputs[0].type.shape
    attrs = node.attr
    axes, keepdims = tuple(attrs["axes"]), bool(attrs["keepdims"])
    if not shape:  # a 0-d reduction: pad to (1,) and reduce that dim away
        shape, axes, keepdims = (1,), (0,), False
    return KernelPlan("reduce", tuple(shape), len(body.inputs), len(body.outputs), node,
                      axes, keepdims, node.out.type.shape)


def _assign_regions(plan: KernelPlan, body: Graph) -> None:
    """Outer: the reduction and everything after it; inner: the rest."""
    after: set[Var] = set()
    for node in body.nodes:
        is_outer = node is plan.reduce or any(v in after for v in node.inputs)
        region = "outer" if is_outer else "inner"
        if is_outer:
            after.update(node.outputs)
        plan.regions[region].append(node)
        plan.region_of.update({var: region for var in node.outputs})
    positions = {var: j for j, var in enumerate(body.inputs)}
    for region in ("inner", "outer"):
        used = {positions[v] for n in plan.regions[region] if n is not plan.reduce
                for v in n.inputs if v in positions}
        plan.loads[region] = sorted(used)
    if plan.reduce is not None and plan.reduce.inputs[0] in positions:
        plan.loads["inner"] = sorted(set(plan.loads["inner"]) | {positions[plan.reduce.inputs[0]]})


def padded(shape) -> tuple[int, ...]:
    return tuple(shape) or (1,)


class CompiledKernel:
    """One fused node's kernel: a shared compiled module plus this node's shapes.

    ``__call__(*inputs, out=None, parallel=None)`` returns a tuple of arrays; ``out`` may give
    preallocated outputs (the runtime's arena); ``parallel=None`` picks the ``prange`` variant
    when the iteration space has at least ``PARALLEL_MIN_ELEMENTS`` elements.
    """

    def __init__(self, name, key, source, source_ops, module, plan: KernelPlan, node: Node):
        self.name, self.key, self.source, self.source_ops = name, key, source, source_ops
        self.module, self.plan = module, plan
        self.out_types = tuple(v.type for v in node.outputs)
        self.in_shapes = tuple(v.type.shape for v in node.inputs)
        self.sizes = tuple(int(d) for d in plan.space_shape)

    def __repr__(self):
        return f"CompiledKernel({self.name}, key={self.key})"

    def __call__(self, *inputs, out=None, parallel=None):
        if len(inputs) != len(self.in_shapes):
            raise TypeError(f"{self.name} takes {len(self.in_shapes)} inputs, got {len(inputs)}")
        arrays = [_as_kernel_array(x, shape) for x, shape in zip(inputs, self.in_shapes,
                                                                  strict=True)]
        outs = out if out is not None else tuple(
            np.empty(t.shape, t.dtype) for t in self.out_types)
        views = [o.reshape(padded(o.shape)) if o.ndim == 0 else o for o in outs]
        self._function(parallel)(*self.sizes, *arrays, *views)
        return tuple(outs)

    def _function(self, parallel):
        if parallel is None:
            parallel = int(np.prod(self.sizes)) >= PARALLEL_MIN_ELEMENTS
        return self.module.kernel_parallel if parallel else self.module.kernel_serial


def _as_kernel_array(value, shape) -> np.ndarray:
    array = np.asarray(value)
    if array.shape != tuple(shape):
        raise ValueError(f"kernel input has shape {array.shape}, expected {tuple(shape)}")
    return array.reshape(1) if array.ndim == 0 else array
