"""plan_memory: buffer lifetimes over the node schedule, the peak the runtime holds when it frees
each buffer after its last use, and the same figure for eager NumPy on the unfused program.

Views own no memory: they keep their root buffer alive. Graph inputs belong to the caller and
are never freed or counted. Buffers are given offsets in one arena (first fit); two buffers that
are live at the same step never overlap, except that an elementwise kernel writes its output in
place over an input of the same shape and dtype that dies there (``in_place_outputs``).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Var, ops
from .in_place_writes import in_place_writes
from .manager import PassResult, register_pass
from .rewrite import is_view, view_parents


def last_uses(graph: Graph, writes=frozenset()) -> dict[Var, int]:
    """Each node-defined Var -> the index of the last node that reads it or a view of it;
    ``len(nodes)`` for what the graph returns; its own index when nothing reads it."""
    last = {out: index for index, node in enumerate(graph.nodes) for out in node.outputs}
    parents = view_parents(graph, writes)
    reads = [(index, node.inputs) for index, node in enumerate(graph.nodes)]
    reads.append((len(graph.nodes), graph.outputs))
    for index, values in reads:
        for var in values:
            while isinstance(var, Var) and var in last:  # graph inputs are never freed
                last[var] = max(last[var], index)
                var = parents.get(var)
    return last


def lifetimes(graph: Graph, writes=frozenset()) -> dict[Var, tuple[int, int]]:
    """Each buffer (a non-view node output) -> (defining node index, last use index)."""
    last = last_uses(graph, writes)
    return {out: (index, last[out]) for index, node in enumerate(graph.nodes)
            if not is_view(node) and node not in writes for out in node.outputs}


def peak_bytes(spans: dict[Var, tuple[int, int]]) -> int:
    """The most bytes live at one step; a buffer is live from its definition to its last use."""
    change: dict[int, int] = {}   # step -> bytes allocated there minus bytes freed before it
    for var, (start, end) in spans.items():
        change[start] = change.get(start, 0) + var.type.nbytes
        change[end + 1] = change.get(end + 1, 0) - var.type.nbytes
    live, peak = 0, 0
    for step in sorted(change):
        live += change[step]
        peak = max(peak, live)
    return peak


def assign_offsets(spans: dict[Var, tuple[int, int]], align: int = 1,
                   donors: dict[Var, Var] | None = None) -> dict[Var, int]:
    """First fit, in order of definition: each buffer takes the lowest offset (a multiple of
    ``align``) that overlaps no buffer live at the same time; an output written in place takes
    its donor's offset (the donor is live up to that step, so nothing else was placed there)."""
    donors = donors or {}
    offsets: dict[Var, int] = {}
    placed: list[tuple[int, int, int, int]] = []   # (start, end, low, high) of placed buffers
    for var, (start, end) in sorted(spans.items(), key=lambda item: (item[1][0], item[0].uid)):
        nbytes = var.type.nbytes
        offset = offsets.get(donors.get(var))
        if offset is None:
            offset = _first_fit(placed, start, end, nbytes, align)
        offsets[var] = offset
        placed.append((start, end, offset, offset + nbytes))
    return offsets


def _first_fit(placed, start: int, end: int, nbytes: int, align: int) -> int:
    busy = sorted((low, high) for s, e, low, high in placed if s <= end and start <= e)
    offset = 0
    for low, high in busy:
        if offset + nbytes <= low:
            break
        offset = max(offset, -(-high // align) * align)
    return offset


# ops whose outputs are new buffers (kernel outputs, BLAS products, concatenations)
FRESH_OPS = ("fused", "matmul", "concatenate")


def in_place_outputs(graph: Graph, writes=frozenset()) -> dict[Var, Var]:
    """Kernel outputs that take over an input's buffer: output -> donor.

    Neither is ``caller_reachable``. The donor is a new buffer of a kernel, matmul or
    concatenate (never an argument), read last by this kernel and only as that one operand,
    with the output's shape and dtype, covering the kernel's whole space. The kernel reads
    each element into a local before it stores the results at that element, and never reads
    it again afterwards (``overwritable``), so it may store over it (``numba_cpu``)."""
    fresh = {v for node in graph.nodes if node.op in FRESH_OPS for v in node.outputs}
    exposed = caller_reachable(graph, writes)
    last = last_uses(graph, writes)
    roots = view_roots(graph, writes)
    donors: dict[Var, Var] = {}
    for index, node in enumerate(graph.nodes):
        space, allowed = overwritable(node.attr["body"]) if node.op == "fused" else (None, ())
        taken = set()
        for k, out in enumerate(node.outputs):
            if out in exposed or k not in allowed:
                continue
            donor = next((v for v in node.inputs if isinstance(v, Var) and v in fresh
                          and v not in taken
                          and v not in exposed and last[v] == index
                          and v.type.shape == out.type.shape == space and out.type.ndim
                          and v.type.dtype == out.type.dtype and read_once(node, v, roots)),
                         None)
            if donor is not None:
                donors[out] = donor
                taken.add(donor)
    return donors


def caller_reachable(graph: Graph, writes=frozenset()) -> set[Var]:
    """Buffers the caller may see: what the graph returns, what is handed to an opaque NumPy
    call (which may keep a view of it), and the bases of views of either."""
    parents = view_parents(graph, writes)
    values = [*graph.outputs] + [v for node in graph.nodes if node.op == "host"
                                 for v in node.inputs]
    reachable = set()
    for value in values:
        while isinstance(value, Var) and value not in reachable:
            reachable.add(value)
            value = parents.get(value)
    return reachable


def overwritable(body: Graph) -> tuple[tuple | None, set[int]]:
    """A kernel's iteration space, and the positions of its outputs that may be stored over
    an input covering that space.

    Elementwise: every output, unless the kernel may run twice (``ops.RANGE_LIMITED_OPS``:
    its second run reads its inputs again). An output smaller than the space is stored more
    than once, so the caller's shape check leaves it out. Row-persistent reduction (softmax,
    layernorm): the outputs that depend on every reduction, which its last pass over each
    row stores after the earlier passes have read the row for the last time; not with an
    argmax/argmin, whose blocks are scanned again after their stores."""
    reduces = [node for node in body.nodes if node.op in ops.REDUCE_OPS]
    if not reduces:
        if any(node.op in ops.RANGE_LIMITED_OPS for node in body.nodes):
            return None, set()
        return tuple(np.broadcast_shapes(*(v.type.shape for n in body.nodes
                                           for v in n.outputs))), set(range(len(body.outputs)))
    if any(node.op in ("argmax", "argmin") for node in reduces):
        return None, set()
    below = _reductions_below(body)
    return tuple(reduces[0].inputs[0].type.shape), {
        k for k, out in enumerate(body.outputs)
        if isinstance(out, Var) and below.get(out, set()) >= set(reduces)}


def _reductions_below(body: Graph) -> dict[Var, set[Node]]:
    """The reductions each body value depends on."""
    below: dict[Var, set[Node]] = {}
    for node in body.nodes:
        found = set().union(*(below.get(v, set()) for v in node.inputs if isinstance(v, Var)))
        if node.op in ops.REDUCE_OPS:
            found = found | {node}
        for out in node.outputs:
            below[out] = found
    return below


def view_roots(graph: Graph, writes=frozenset()) -> dict[Var, Var]:
    parents = view_parents(graph, writes)
    roots = {}
    for var in parents:
        root = var
        while root in parents:
            root = parents[root]
        roots[var] = root
    return roots


def read_once(node: Node, donor: Var, roots: dict[Var, Var]) -> bool:
    """The kernel reads the donor's memory through this one operand (no view of it too)."""
    return sum(v is donor or roots.get(v) is donor for v in node.inputs) == 1


def unfused(graph: Graph) -> Graph:
    """The graph with every fused node replaced by its body's nodes (the eager program)."""
    nodes: list[Node] = []
    for node in graph.nodes:
        nodes += _inline(node) if node.op == "fused" else [node]
    return graph.replace(nodes=nodes)


def _inline(fused: Node) -> list[Node]:
    """The body's nodes on the fused node's operands; each body output is defined under the
    fused node's output Var (by a ``copy`` when no body node defines it, or defines it twice)."""
    body = unfused(fused.attr["body"])
    defined = {out for node in body.nodes for out in node.outputs}
    claimed: dict[Var, Var] = {}
    for inner, outer in zip(body.outputs, fused.outputs, strict=True):
        if isinstance(inner, Var) and inner in defined and inner not in claimed:
            claimed[inner] = outer
    rename: dict = dict(zip(body.inputs, fused.inputs, strict=True))
    nodes = []
    for node in body.nodes:
        outputs = tuple(claimed.get(v) or Var(v.type, v.hint) for v in node.outputs)
        inputs = tuple(rename.get(v, v) if isinstance(v, Var) else v for v in node.inputs)
        rename.update(zip(node.outputs, outputs, strict=True))
        nodes.append(node.replace(inputs=inputs, outputs=outputs))
    for inner, outer in zip(body.outputs, fused.outputs, strict=True):
        if claimed.get(inner) is not outer:
            source = rename.get(inner, inner) if isinstance(inner, Var) else inner
            nodes.append(Node("copy", (source,), (outer,), (), fused.loc))
    return nodes


def donated_spans(spans: dict[Var, tuple[int, int]], donors: dict[Var, Var]) -> dict:
    """``spans`` with each donor's buffer counted only until the kernel that takes it over."""
    spans = dict(spans)
    for out, donor in donors.items():
        spans[donor] = (spans[donor][0], spans[out][0] - 1)
    return spans


def eager_peak_bytes(graph: Graph, writes=frozenset()) -> int:
    """``peak_bytes`` of the unfused program as NumPy runs it. ``writes``: the item
    assignments (``a[i] = v``) that write into their target, as NumPy's do, allocating
    nothing (the runtime's ``Program.writes``: into an intermediate, or a caller's array)."""
    return peak_bytes(lifetimes(unfused(graph), writes))


def peak_without(graph: Graph, writes, donated, stacked=None) -> int:
    """``peak_bytes`` when the kernel outputs in ``donated`` are stored into the caller's
    arrays (``in_place_updates``), and the parts in ``stacked`` (a returned concatenation ->
    its parts) into the rows of the result, allocated when the first of them is computed
    (``runtime/stacks.py``), as ``lower`` decides after this pass."""
    spans = {v: span for v, span in lifetimes(graph, writes).items() if v not in donated}
    for result, parts in (stacked or {}).items():
        first = min(spans.pop(part)[0] for part in parts)
        spans[result] = (first, spans[result][1])
    return peak_bytes(donated_spans(spans, in_place_outputs(graph, writes)))


@register_pass("plan_memory")
def plan_memory(graph: Graph) -> PassResult:
    writes = in_place_writes(graph)
    spans = lifetimes(graph, writes)
    donors = in_place_outputs(graph, writes)
    offsets = assign_offsets(spans, donors=donors)
    arena = max((offsets[v] + v.type.nbytes for v in spans), default=0)
    stats = {"last_use": last_uses(graph, writes),
             "peak_bytes": peak_bytes(donated_spans(spans, donors)),
             "eager_peak_bytes": eager_peak_bytes(graph),
             "buffers": len(spans), "offsets": offsets, "arena_bytes": arena,
             "in_place": donors, "writes_in_place": len(writes)}
    return PassResult(graph, False, stats)
