"""``x[m] op= v`` and ``x[m] = f(x[m])`` with a traced boolean mask ``m``, compiled as
``where(m, x op v, x)`` and ``where(m, f(x), x)``.

Python runs the first as ``t = x[m]; t op= v; x[m] = t``. The read ``x[m]`` has a
data-dependent shape: it is a host op with a ``shape`` guard, so every new count of True
elements would take another trace path. When the stored value is an elementwise expression of
that very read (plus values that broadcast over its trailing axes), the store is recorded as a
``where`` over the whole array instead, and the read's guard is dropped: nothing else can reach
it.

Dropping the guard is safe only when nothing still reads the gathered values: no recorded
node outside the expression, and no live proxy whose shape Python could still look at. So the
rewrite applies to an augmented assignment (the user's frame is at the ``STORE_SUBSCR`` right
after an in-place ``BINARY_OP``: the temporary was never bound to a name), and to a plain store
of a value the statement computed (not a name: ``x[m] = -x[m]``, ``x[x > 0] = np.sqrt(x[x >
0])``) when the read and every value between it and the stored one are already dead. The
plain store is checked again when the trace ends (``check_masked_stores``): a node recorded
later that reads those values, or a proxy of them still alive, puts the guard back.
"""
from __future__ import annotations

import dis
from dataclasses import dataclass

from ..ir import Lit, Var, ops
from .loc import user_frames
from .tracer import Tracer


@dataclass(frozen=True)
class MaskedRead:
    """What ``x[m]`` read: the mask's Var, ``x``'s Var then, and the gathered Var."""

    mask: Var
    base: Var
    gathered: Var


@dataclass(frozen=True)
class MaskedStore:
    """A plain store rewritten as a ``where``: its dropped guards, and the values (the read,
    the expression's nodes) that nothing may read afterwards."""

    guards: tuple
    values: frozenset
    tree: frozenset


def remember_masked_read(tracer, key, result) -> None:
    """Tag the proxy of ``x[m]`` (a single boolean proxy as the key) with what it read."""
    if not isinstance(result, Tracer) or not isinstance(tracer, Tracer):
        return
    items = key if isinstance(key, tuple) else (key,)
    if len(items) != 1 or not isinstance(items[0], Tracer):
        return
    result.masked_read = MaskedRead(items[0].ir_var, tracer.ir_var, result.ir_var)
    result.recorder.masked_reads[result.ir_var] = result.masked_read


def masked_update(rec, tracer, key, value) -> Var | None:
    """The new Var of ``tracer`` for ``tracer[key] = value`` as a ``where``, or None."""
    items = key if isinstance(key, tuple) else (key,)
    if not isinstance(value, Tracer) or len(items) != 1 or not isinstance(items[0], Tracer):
        return None
    mask = items[0].ir_var
    read = value.__dict__.get("masked_read")
    plain = read is None or read.mask is not mask or not _in_augmented_store()
    if plain:
        read = _read_in(rec, value.ir_var, mask) if _stores_a_new_value() else None
    if read is None:
        return None
    start = next((i for i, n in enumerate(rec.nodes) if read.gathered in n.outputs), None)
    if start is None:
        return None
    producers = {out: node for node in rec.nodes[start + 1:] for out in node.outputs}
    tree: set = set()
    if not _collect(value.ir_var, read.gathered, producers, tree):
        return None
    values = {read.gathered} | _outputs(tree)
    if not _only_read_by(rec.nodes[start + 1:], values, tree):
        return None
    if plain and not _unseen(rec, read, tracer, values - {value.ir_var}):
        return None
    target = tracer.ir_var
    updated = _rebuild(rec, value.ir_var, read, producers, {})
    updated = rec.cast(updated, target.type.dtype)
    result = rec.emit("where", [_mask_over(rec, mask, target.type.ndim), updated, target])
    dropped = tuple(g for g in rec.guards if g.var is read.gathered and g.convert == "shape")
    rec.guards[:] = [g for g in rec.guards if g not in dropped]
    if plain:
        rec.masked.append(MaskedStore(dropped, frozenset(values), frozenset(tree)))
    return result


def _unseen(rec, read, tracer, partials) -> bool:
    """A plain store may drop the read's guard: it reads an array of the target's shape (the
    ``where`` spreads it over the target, not the selected values), Python never looked at the
    count (``len(t)``, ``t.size``, in a helper or an earlier statement), and the read and the
    partial results are dead (a named one could still be looked at)."""
    if read.base.type.shape != tracer.ir_var.type.shape:
        return False
    if rec.shape_seen & ({read.gathered} | partials):
        return False
    return all(rec.proxies.get(v) is None for v in partials)


def check_masked_stores(rec) -> None:
    """At the end of the trace: a plain masked store whose values were read afterwards (by a
    node, or through a proxy still alive: returned, kept in a list) keeps its guards."""
    for store in rec.masked:
        alive = any(rec.proxies.get(v) is not None for v in store.values)
        seen = rec.shape_seen & store.values
        if alive or seen or not _only_read_by(rec.nodes, store.values, store.tree):
            rec.guards.extend(store.guards)


def _store_site() -> tuple[list, int | None]:
    """The user's frame's instructions and the index of its current one, a ``STORE_SUBSCR``
    (else None)."""
    frames = user_frames(2)
    if not frames:
        return [], None
    frame = frames[0]
    code = list(dis.get_instructions(frame.f_code))
    at = next((i for i, ins in enumerate(code) if ins.offset == frame.f_lasti), None)
    return code, at if at is not None and code[at].opname == "STORE_SUBSCR" else None


def _stores_a_new_value() -> bool:
    """The user's frame is at a ``STORE_SUBSCR`` whose value an operator or a call computed in
    the statement (``x[m] = -x[m]``), not a name or a copy of one (``x[m] = t``,
    ``y = x[m] = ...``)."""
    code, at = _store_site()
    if at is None:
        return False
    depth, index = 0, at - 1
    while index >= 0 and depth < 2:    # back over the target and the key
        ins = code[index]
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return False
        depth += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT
                                  else None, jump=False)
        index -= 1
    if depth != 2 or index < 0:
        return False
    producer = code[index]
    if producer.opname == "BINARY_OP":
        return not producer.argrepr.endswith("=")
    return producer.opname.startswith(("UNARY_", "BINARY_", "CALL"))


def _read_in(rec, var, mask) -> MaskedRead | None:
    """A masked read ``x[m']`` of ``m``'s mask (or one computed the same way) that ``var``'s
    elementwise expression reads."""
    reads = rec.masked_reads
    if not reads:
        return None
    producers = {out: node for node in rec.nodes for out in node.outputs}
    stack, seen = [var], set()
    while stack:
        value = stack.pop()
        if not isinstance(value, Var) or value in seen:
            continue
        seen.add(value)
        read = reads.get(value)
        if read is not None:
            return read if _same_value(read.mask, mask, producers) else None
        node = producers.get(value)
        if node is not None and ops.get(node.op).kind == ops.ELEMENTWISE:
            stack.extend(node.inputs)
    return None


def _same_value(a, b, producers) -> bool:
    """``a`` and ``b`` are one Var, or made by the same op from the same operands."""
    if a is b:
        return True
    if isinstance(a, Lit) or isinstance(b, Lit):
        return isinstance(a, Lit) and isinstance(b, Lit) and a == b
    first, second = producers.get(a), producers.get(b)
    return (first is not None and second is not None and first.op == second.op
            and first.attrs == second.attrs and len(first.inputs) == len(second.inputs)
            and len(first.outputs) == len(second.outputs) == 1
            and all(x is y or (isinstance(x, Lit) and x == y)
                    for x, y in zip(first.inputs, second.inputs, strict=True)))


def _in_augmented_store() -> bool:
    """The user's frame is storing the result of an in-place operator (``x[m] *= v``)."""
    code, at = _store_site()
    if at is None or at < 3:
        return False
    op, *swaps = code[at - 3:at]
    if code[at - 1].opname == "ROT_THREE":      # Python 3.10: INPLACE_MULTIPLY, ROT_THREE
        return code[at - 2].opname.startswith("INPLACE_")
    return (op.opname == "BINARY_OP" and op.argrepr.endswith("=")
            and [s.opname for s in swaps] == ["SWAP", "SWAP"])


def _collect(var, gathered, producers, tree) -> bool:
    """Whether ``var`` is an elementwise expression of ``gathered`` and of values that
    broadcast over its trailing axes; adds the expression's nodes to ``tree``."""
    if var is gathered or isinstance(var, Lit) or var.type.ndim < gathered.type.ndim:
        return True
    node = producers.get(var)
    if node is None or ops.get(node.op).kind != ops.ELEMENTWISE or node.op == "full" or \
            not _fusable(node):
        return False
    tree.add(node)
    return all(_collect(v, gathered, producers, tree) for v in node.inputs)


def _fusable(node) -> bool:
    """A kernel computes the op: NumPy's, on the host, would run on every element, and may
    raise or warn for those the mask leaves out (``2 ** x[x >= 0]`` of an int ``x``)."""
    dtype = next((v.type.dtype for v in node.inputs), None)
    return dtype is None or ops.get(node.op).template(dtype) is not None


def _outputs(nodes) -> set:
    return {out for node in nodes for out in node.outputs}


def _only_read_by(nodes, values, tree) -> bool:
    return all(node in tree or not any(isinstance(v, Var) and v in values for v in node.inputs)
               for node in nodes)


def _rebuild(rec, var, read, producers, done):
    """``var`` recomputed over the whole array: the gathered values become ``x`` itself."""
    if var is read.gathered:
        return read.base
    node = producers.get(var)
    if isinstance(var, Lit) or node is None or var.type.ndim < read.gathered.type.ndim:
        return var
    if var not in done:
        inputs = [_rebuild(rec, v, read, producers, done) for v in node.inputs]
        done[var] = rec.emit(node.op, inputs, node.attrs, weak=var.type.weak)
    return done[var]


def _mask_over(rec, mask: Var, ndim: int) -> Var:
    """The mask with trailing unit axes, so it broadcasts over ``x``'s remaining axes."""
    if mask.type.ndim == ndim:
        return mask
    shape = tuple(mask.type.shape) + (1,) * (ndim - mask.type.ndim)
    return rec.emit("reshape", [mask], {"shape": shape})
