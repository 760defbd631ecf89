"""Values whose shape depends on the data (``x[x > 0]``, ``np.nonzero``), guarded where read.

Such a value comes from a host op (``host.record_host``). Code compiled for the traced shape
must never see another one, so a ``shape`` guard would make each new count of selected elements
trace another path. That guard is needed only where something depends on the shape: a kernel,
a view or a BLAS call planned for it, or Python looking at it (``len(t)``, ``t.shape``, a loop
over it). NumPy itself needs no fixed shape.

So the recorder keeps the set of *dynamic* Vars: each data-dependent result, and each result of
a host op or an elementwise op that reads one and is not 0-d. While tracing, an array function,
method or index applied to a dynamic value is recorded as that NumPy call (a host op), so
``x[m].sum()``, ``np.mean(x[m] ** 2)`` and ``x[m][:3]`` run as NumPy runs them. When the trace
ends (:func:`settle`), each elementwise node that reads a dynamic value becomes a host op of its
NumPy reference (the masked stores of ``masked.py`` rewrite such nodes while tracing, so they
are recorded as they are until then), and a dynamic value that anything else reads, or whose
shape Python looked at, gets a ``shape`` guard. A replay with another count of True elements
takes the same path and gets NumPy's answer for it, or NumPy's error (``x[m].max()`` of no
element) from the user's line.

On the CUDA target (``Recorder.shapes_vary`` False) every data-dependent shape is guarded.
"""
from __future__ import annotations

from ..ir import Lit, Node, Var, ops
from .guards import GuardRecord, check_count
from .tracer import Tracer

# The kinds of dynamic Vars (``Recorder.dynamic``): made by a data-dependent op, computed from
# one by NumPy, or made by another host op, whose shape NumPy decides (``np.bincount(x)``).
ROOT, DATA, HOST = "root", "data", "host"


def is_dynamic(rec, item) -> bool:
    """``item`` is a proxy of a data-dependent value of ``rec``'s trace."""
    return (isinstance(item, Tracer) and item.__dict__.get("recorder") is rec
            and item.__dict__.get("link") is None
            and rec.dynamic.get(item.__dict__.get("_var")) in (ROOT, DATA))


def reads_dynamic(rec, args, kwargs) -> bool:
    """An argument of a call (at any depth of lists, tuples and dicts) is data-dependent."""
    return rec is not None and bool(rec.dynamic) and any(
        is_dynamic(rec, leaf) for leaf in call_leaves((args, kwargs)))


def call_leaves(item):
    """The items of a call's arguments, inside lists, tuples and dicts."""
    if type(item) in (list, tuple):
        for x in item:
            yield from call_leaves(x)
    elif type(item) is dict:
        for x in item.values():
            yield from call_leaves(x)
    else:
        yield item


# Ops that NumPy runs at replay whatever the shapes (``ops.py``: injective ops run through
# NumPy on the host): ``x[m] = v`` stores the values it is given, or raises NumPy's error. The
# result has the target's shape.
STORES = ("setitem", "scatter_add")


def note_host_results(rec, outs, data_dependent: bool) -> None:
    """A host op's results: data-dependent ones are roots, shape guarded only where read
    (``settle``); the others' shapes, NumPy's too, are guarded where Python reads them."""
    for var in outs:
        if var.type.ndim > 0:
            if data_dependent:
                rec.dynamic[var] = ROOT
            else:
                rec.dynamic.setdefault(var, HOST)


def propagate(rec, node: Node) -> None:
    """A node just recorded: its non-0-d outputs are data-dependent if it reads such a value
    and is a host op or an elementwise op (which ``settle`` turns into one), or is a store
    into such a target; a host op or store reading another host result makes one too."""
    if node.op in STORES:
        reads = node.inputs[:1]
    elif node.op == "host" or _elementwise(node):
        reads = node.inputs
    else:
        return
    kinds = {rec.dynamic.get(v) for v in reads if isinstance(v, Var)}
    if kinds & {ROOT, DATA}:
        kind = DATA
    elif HOST in kinds and not _elementwise(node):
        kind = HOST
    else:
        return
    for v in node.outputs:
        if v.type.ndim > 0:
            rec.dynamic.setdefault(v, kind)


def _elementwise(node: Node) -> bool:
    return node.op != "full" and ops.get(node.op).kind == ops.ELEMENTWISE


def settle(rec) -> None:
    """At the end of the trace: a dynamic value whose shape Python looked at, or a
    data-dependent one that something planned for its traced shape reads, gets a shape guard
    (``record_host`` records none for them); elementwise readers of the data-dependent values
    that stay unguarded become host ops."""
    if not rec.dynamic:
        return
    pinned = _pinned(rec)
    varying = {v for v, kind in rec.dynamic.items() if kind == ROOT and v not in pinned}
    for index, node in enumerate(rec.nodes):
        reads = node.inputs[:1] if node.op in STORES else node.inputs
        if not any(isinstance(v, Var) and v in varying for v in reads):
            continue
        if _elementwise(node):
            rec.nodes[index] = as_host(node)
        elif node.op == "host":   # may raise where eager NumPy does (dce.may_raise)
            rec.nodes[index] = node.replace(attrs={**node.attr, "varies": True})
        varying.update(v for v in node.outputs if v.type.ndim > 0 and v not in pinned)
    producers = {v: (index, node) for index, node in enumerate(rec.nodes)
                 for v in node.outputs}
    pinned -= {g.var for g in rec.guards if g.convert == "shape"}
    for var in sorted(pinned, key=lambda v: producers[v][0]):   # in the order they are made
        rec.guards.append(GuardRecord(var, "shape", var.type.shape, producers[var][1].loc))
    check_count(rec)


def _pinned(rec) -> set:
    """The dynamic values whose traced shape something relies on: Python looked at it (or
    converted the value: ``float(v)``, ``v.tolist()``), or, for a data-dependent one, a node
    other than a host op, an elementwise op or a store reads it. (A kernel or view given
    another host result's shape than traced raises, and the call traces again.)"""
    dynamic = rec.dynamic
    pinned = {v for v in dynamic if v in rec.shape_seen}
    pinned.update(g.var for g in rec.guards if g.var in dynamic)
    for node in rec.nodes:
        basic_store = node.op in STORES and len(node.inputs) == 2   # ``v[:2] = w``: a slice
        if node.op == "host" or _elementwise(node) or node.op in STORES and not basic_store:
            continue                                                # planned for the shape
        pinned.update(v for v in node.inputs
                      if isinstance(v, Var) and dynamic.get(v) in (ROOT, DATA))
    return pinned


def as_host(node: Node) -> Node:
    """An elementwise node as a host op of its NumPy reference. Its inputs already have the
    op's dtype (elementwise ops are homogeneous), literals as NumPy scalars of that dtype, so
    NumPy computes in the node's dtype."""
    opdef = ops.get(node.op)
    operands = list(dict.fromkeys(v for v in node.inputs if isinstance(v, Var)))
    args = tuple(("__operand__", operands.index(v)) if isinstance(v, Var) else _literal(v)
                 for v in node.inputs)
    kwargs = tuple(sorted(node.attr.items()))
    spec = (("__tuple__", *args), ("__dict__", *kwargs))
    attrs = {"fn": opdef.impl, "name": node.op, "spec": spec, "nout": len(node.outputs),
             "elementwise": True, "varies": True}
    return Node("host", tuple(operands), node.outputs, attrs, node.loc)


def _literal(lit: Lit):
    return lit.value
