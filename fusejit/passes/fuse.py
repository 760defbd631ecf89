"""fuse: greedy grouping of elementwise ops and reductions into ``fused`` kernel nodes.

First, transposes that move the last axis sink below the elementwise ops and reductions
reading them (``sink_permutes``), so that kernels walk memory in order, and splits of an
elementwise result whose pieces all feed elementwise work move to the result's operands
(``sink_splits``), so the producer fuses with the pieces' users. Nodes are
then visited in topological order. An elementwise node joins a producer's group when the
shapes agree; a reduction absorbs its input's elementwise group as a prologue; elementwise
consumers of a reduction at the reduction's output shape join as its epilogue; last, elementwise
kernels over the same space that read a common input merge (horizontal fusion). Views,
injective ops, matmul and host ops stay plain nodes (NumPy views, NumPy copies, BLAS). Every
refused fusion is recorded as a ``Refusal`` with its reason; ``explain`` shows them.

The legality checks are small pure functions in ``fusion_rules``; this module holds the walk
and the rewrite into ``fused`` nodes.
"""
from __future__ import annotations

from ..ir import Graph, Node, Var, ops
from . import fusion_rules as rules
from .fusion_rules import Group, Refusal
from .manager import PassResult, register_pass
from .sink_permutes import sink_permutes
from .sink_splits import sink_splits

# One kernel fuses at most this many ops: Numba's compile time grows linearly with kernel size
# (measured: ~14 s at 1,000 ops), while a chain cut into equal pieces compiles one kernel that
# every piece reuses.
MAX_KERNEL_OPS = 128
# Vector math counts more (``ops.INLINED_MATH_COST``): LLVM's time grows faster than the kernel.
SIZE_LIMIT = (f"kernel size limit ({MAX_KERNEL_OPS} ops, vector math counting "
              f"{ops.INLINED_MATH_COST})")
# Horizontal merging tries the last few open kernels of a shape, not all of them: each try is
# a cycle check that walks the graph back to the candidate, and in an unrolled loop (an LSTM
# over 100 steps: 100 kernels of one shape, each depending on the one before) trying all of
# them was quadratic in kernels times the graph: 30 of a 33 s compile.
HORIZONTAL_WINDOW = 8

__all__ = ["Refusal", "fuse"]


@register_pass("fuse", requires=("dce",), per_target=True)
def fuse(graph: Graph, target: str = "cpu") -> PassResult:
    """``target``: the backend the kernels are for ("cpu" or "cuda"): some ops are faster left
    to NumPy on the CPU (``fusion_rules.SIMD_IN_NUMPY``)."""
    graph, transposes = sink_permutes(graph)
    graph, sunk = sink_splits(graph, target)
    fuser = _Fuser(graph, target)
    for node in graph.nodes:
        fuser.place(node)
    horizontal = fuser.merge_horizontal()
    if target == "cpu":
        fuser.leave_lone_arg_reductions()
    new_graph, kernels = fuser.rewrite()
    return PassResult(new_graph, kernels > 0 or sunk > 0 or transposes > 0,
                      {"kernels": kernels, "horizontal": horizontal, "sunk_splits": sunk,
                       "sunk_transposes": transposes, "refusals": fuser.refusals})


def kernel_cost(nodes) -> int:
    """Size of a kernel body against ``MAX_KERNEL_OPS`` (each op's ``cost`` in the registry)."""
    return sum(ops.get(node.op).cost for node in nodes)


class _Fuser:
    def __init__(self, graph: Graph, target: str):
        self.graph, self.target = graph, target
        self.index = {node: i for i, node in enumerate(graph.nodes)}
        self.producer = graph.producers()
        self.group_of: dict[Node, Group] = {}
        self.refusals: list[Refusal] = []

    # -- the walk -----------------------------------------------------------------------------
    def place(self, node: Node) -> None:
        if node.op in ops.REDUCE_OPS and rules.codegen_dtype_ok(node):
            self._place_reduce(node)
        elif rules.is_fusable_elementwise(node, self.target):
            self._place_elementwise(node)
        elif ops.REGISTRY.get(node.op) is not None and ops.get(node.op).kind == ops.ELEMENTWISE:
            self._refuse(node, rules.unfusable_reason(node, self.target))

    def _place_elementwise(self, node: Node) -> None:
        # Reduce groups first: an elementwise producer group can merge into one as its inner
        # region (RMSNorm's g * x), never the other way round.
        candidates = sorted(self._producer_groups(node), key=lambda g: g.reduce is None)
        for group in candidates:
            reason = self._join_reason(group, node)
            if reason is None:
                group.add(node, rules.region_for(group, node))
                self.group_of[node] = group
                self._merge_siblings(group, node, candidates)
                return
            self._refuse(node, reason)
        self._start(node, None)

    def _place_reduce(self, node: Node) -> None:
        source = node.inputs[0]
        group = self.group_of.get(self.producer.get(source)) if isinstance(source, Var) else None
        if group is not None:
            reason = rules.prologue_reason(group, node)
            if reason is None:
                group.add_reduce(node)
                self.group_of[node] = group
                return
            self._refuse(node, reason)
        elif isinstance(source, Var) and source in self.producer:
            self._refuse(node, rules.producer_reason(self.producer[source], self.target))
        self._start(node, node)

    def _start(self, node: Node, reduce: Node | None) -> None:
        group = Group.start(node, reduce)
        self.group_of[node] = group

    def _producer_groups(self, node: Node) -> list[Group]:
        """Groups producing ``node``'s operands, in operand order; plain producers refuse."""
        groups: list[Group] = []
        for value in node.inputs:
            producer = self.producer.get(value) if isinstance(value, Var) else None
            if producer is None:
                continue
            group = self.group_of.get(producer)
            if group is None:
                self._refuse(node, rules.producer_reason(producer, self.target))
            elif group not in groups:
                groups.append(group)
        return groups

    def _join_reason(self, group: Group, node: Node) -> str | None:
        if kernel_cost(group.nodes) + kernel_cost((node,)) > MAX_KERNEL_OPS:
            return f"{SIZE_LIMIT}: Numba compile time grows with it"
        reason = rules.join_reason(group, node)
        if reason is None:
            reason = self._cycle_reason(group.nodes | {node}, [node])
        return reason

    def _merge_siblings(self, group: Group, node: Node, candidates: list[Group]) -> None:
        """``node``'s other producer groups of the same shape join too, when legal."""
        region = group.region[node.out]
        for other in candidates:
            if other is group:
                continue
            reason = rules.merge_reason(group, other, region)
            if kernel_cost(group.nodes) + kernel_cost(other.nodes) > MAX_KERNEL_OPS:
                reason = SIZE_LIMIT
            if reason is None:
                union = group.nodes | other.nodes
                reason = self._cycle_reason(union, sorted(union, key=self.index.get))
            if reason is not None:
                continue  # already recorded as a refusal for ``node`` if it matters
            group.absorb(other, region)
            for member in other.nodes:
                self.group_of[member] = group

    def merge_horizontal(self) -> int:
        """Horizontal (sibling) fusion: independent kernels over the same iteration space that
        read a common input become one kernel with several outputs, so the input is read once
        and one loop runs instead of two: elementwise kernels, and reductions over the same
        axes (``x.sum(-1)`` and ``x.max(-1)``: one pass, two accumulators). Returns how many
        merges were made."""
        merges, open_groups = 0, {}   # horizontal key -> groups merged so far, in order
        for group in self._groups():
            key = rules.horizontal_key(group)
            if key is None:
                continue
            candidates = open_groups.setdefault(key, [])
            target = next((c for c in candidates[-HORIZONTAL_WINDOW:]
                           if self._horizontal_ok(c, group)), None)
            if target is None:
                candidates.append(group)
                continue
            if group.reduce is None:
                target.absorb(group, "inner")
            else:
                target.absorb_reductions(group, self.index)
            for member in group.nodes:
                self.group_of[member] = target
            merges += 1
        return merges

    def leave_lone_arg_reductions(self) -> None:
        """An argmax/argmin with nothing fused into it runs through NumPy where NumPy's SIMD
        loop is faster (``rules.numpy_arg_reduction_faster``)."""
        for node, group in list(self.group_of.items()):
            if group.nodes == {node} and rules.numpy_arg_reduction_faster(node):
                del self.group_of[node]
                self._refuse(node, rules.NUMPY_ARG_REDUCTION)

    def _groups(self) -> list[Group]:
        groups, seen = [], set()
        for node in self.graph.nodes:
            group = self.group_of.get(node)
            if group is not None and id(group) not in seen:
                seen.add(id(group))
                groups.append(group)
        return groups

    def _horizontal_ok(self, group: Group, other: Group) -> bool:
        """Siblings share an input Var; the merged kernel must stay within the size limit and
        acyclic (neither may depend on the other through a node outside both)."""
        if not rules.shared_inputs(group, other):
            return False
        if kernel_cost(group.nodes) + kernel_cost(other.nodes) > MAX_KERNEL_OPS:
            reason = SIZE_LIMIT
        elif group.reduce is not None and rules.sibling_reason(group, other) is not None:
            return False   # chained, not siblings: placing the reader refused it with a reason
        else:
            union = group.nodes | other.nodes
            reason = self._cycle_reason(union, sorted(union, key=self.index.get))
        if reason is not None:
            self._refuse(min(other.nodes, key=self.index.get), f"horizontal: {reason}")
        return reason is None

    def _cycle_reason(self, members: set[Node], new_nodes: list[Node]) -> str | None:
        """A node may join only if no operand produced outside depends on the group."""
        first = min(self.index[m] for m in members)
        for member in new_nodes:
            for value in member.inputs:
                producer = self.producer.get(value) if isinstance(value, Var) else None
                if producer is None or producer in members:
                    continue
                if rules.depends_on(producer, members, self.producer, self.index,
                                    self.group_of, first):
                    return f"would create a cycle through {producer.op}"
        return None

    def _refuse(self, node: Node, reason: str) -> None:
        refusal = Refusal(node.loc, node.op, reason)
        if refusal not in self.refusals:
            self.refusals.append(refusal)

    # -- the rewrite --------------------------------------------------------------------------
    def rewrite(self) -> tuple[Graph, int]:
        units = self._units()
        used_outside = rules.outside_uses(self.graph, self.group_of)
        emitted: list[Node] = []
        replacement: dict[int, Node] = {}
        for unit in rules.schedule(units, self.producer, self.group_of, self.index):
            if isinstance(unit, Group):
                fused = rules.build_fused(unit, len(replacement), used_outside, self.graph,
                                          self.index)
                replacement[id(unit)] = fused
                emitted.append(fused)
            else:
                emitted.append(unit)
        return self.graph.replace(nodes=emitted), len(replacement)

    def _units(self) -> list:
        """Plain nodes and groups, each at the position of its last member."""
        seen, units = set(), []
        for node in reversed(self.graph.nodes):
            unit = self.group_of.get(node, node)
            if id(unit) not in seen:
                seen.add(id(unit))
                units.append(unit)
        return units[::-1]
