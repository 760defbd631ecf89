"""``x[m] op= v`` with a traced boolean mask ``m``, compiled as ``where(m, x op v, x)``.

Python runs it as ``t = x[m]; t op= v; x[m] = t``. The read ``x[m]`` has a data-dependent
shape: it is a host op with a ``shape`` guard, so every new count of True elements would take
another trace path. When the stored value is an elementwise expression of that very read
(plus values that broadcast over its trailing axes), the store is recorded as a ``where`` over
the whole array instead, and the read's guard is dropped: nothing else can reach it.

Dropping the guard is safe only when no live proxy or recorded node still reads the gathered
values. The rewrite therefore applies only to an augmented assignment (the user's frame is at
the ``STORE_SUBSCR`` right after an in-place ``BINARY_OP``: the temporary was never bound to a
name) whose value is the proxy of the read itself, and only when every recorded node that
reads the gathered values belongs to the expression being rewritten. Anything else keeps the
plain ``setitem`` and the guard.
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


def remember_masked_read(tracer, key, result) -> None:
    """Tag the proxy of ``x[m]`` (a single boolean proxy as the key) with what it read."""
    if not isinstance(result, Tracer) or not isinstance(tracer, Tracer):
        return
    items = key if isinstance(key, tuple) else (key,)
    if len(items) != 1 or not isinstance(items[0], Tracer):
        return
    result.masked_read = MaskedRead(items[0].ir_var, tracer.ir_var, result.ir_var)


def masked_update(rec, tracer, key, value) -> Var | None:
    """The new Var of ``tracer`` for ``tracer[key] = value`` as a ``where``, or None."""
    read = value.__dict__.get("masked_read") if isinstance(value, Tracer) else None
    items = key if isinstance(key, tuple) else (key,)
    if (read is None or len(items) != 1 or not isinstance(items[0], Tracer)
            or items[0].ir_var is not read.mask or not _in_augmented_store()):
        return None
    start = next((i for i, n in enumerate(rec.nodes) if read.gathered in n.outputs), None)
    if start is None:
        return None
    producers = {out: node for node in rec.nodes[start + 1:] for out in node.outputs}
    tree: set = set()
    if not _collect(value.ir_var, read.gathered, producers, tree):
        return None
    if not _only_read_by(rec.nodes[start + 1:], {read.gathered} | _outputs(tree), tree):
        return None
    target = tracer.ir_var
    updated = _rebuild(rec, value.ir_var, read, producers, {})
    updated = rec.cast(updated, target.type.dtype)
    mask = _mask_over(rec, read.mask, target.type.ndim)
    result = rec.emit("where", [mask, updated, target])
    rec.guards[:] = [g for g in rec.guards
                     if not (g.var is read.gathered and g.convert == "shape")]
    return result


def _in_augmented_store() -> bool:
    """The user's frame is storing the result of an in-place operator (``x[m] *= v``)."""
    frames = user_frames(2)
    if not frames:
        return False
    frame = frames[0]
    code = list(dis.get_instructions(frame.f_code))
    at = next((i for i, ins in enumerate(code) if ins.offset == frame.f_lasti), None)
    if at is None or at < 3 or code[at].opname != "STORE_SUBSCR":
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
    if node is None or ops.get(node.op).kind != ops.ELEMENTWISE or node.op == "full":
        return False
    tree.add(node)
    return all(_collect(v, gathered, producers, tree) for v in node.inputs)


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
