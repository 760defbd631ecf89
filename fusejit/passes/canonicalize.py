"""canonicalize: forward identity ops to their input and put literal operands last.

Identity forwarding never changes what a caller can observe (see ``rewrite.Context``): a
``copy`` or ``cast`` that is (a view of) a graph output stays, because eager NumPy returned a
fresh array there.
"""
from __future__ import annotations

from ..ir import Lit, Node, TensorType, Var, ops
from .manager import PassResult, register_pass
from .rewrite import rewrite, same_type
from .sink_permutes import moves_last_axis

# max/min/fmax/fmin pick an operand on ties, so on floats their order shows in the sign of 0.
_ORDER_SENSITIVE_ON_FLOATS = frozenset({"max", "min", "fmax", "fmin"})


def forward_same_type(node: Node, ctx):
    """``op(x) → x`` when the op keeps x's shape and dtype (and is an identity then)."""
    return node.inputs[0] if same_type(node.inputs[0], node.out) else None


def forward_copy(node: Node, ctx):
    """``copy(x) → x``, but for a C-ordered copy of a transpose that moves the last axis
    (``x.T.copy()``): the copy fixes the layout of what is computed from it, which the
    transpose alone would let ``sink_permutes`` lay out as x is. An F-ordered copy of two or
    more axes is such a copy of x's transpose, transposed back (an F-ordered view)."""
    if node.attr.get("order") == "F":
        return _fortran_copy(node)
    if node.attr.get("order") == "C" and _transposed(node.inputs[0], ctx):
        return None
    return forward_same_type(node, ctx)


def _transposed(value, ctx, depth: int = 6) -> bool:
    """``value`` is a transpose that moves the last axis, or elementwise work on one (the
    values ``sink_permutes`` may compute untransposed), ``depth`` producers up at most."""
    source = ctx.producer(value)
    if source is None or depth == 0:
        return False
    if source.op == "permute":
        return moves_last_axis(source.attr["perm"])
    opdef = ops.REGISTRY.get(source.op)
    return opdef is not None and opdef.kind == ops.ELEMENTWISE and any(
        isinstance(v, Var) and v.type.shape == value.type.shape and _transposed(v, ctx, depth - 1)
        for v in source.inputs)


def _fortran_copy(node: Node):
    (x,), shape = node.inputs, node.out.type.shape
    attrs = {k: v for k, v in node.attr.items() if k != "order"}
    if len(shape) < 2:       # one axis: C order is F order
        return node.replace(attrs=attrs)
    perm = tuple(reversed(range(len(shape))))
    flipped = [Var(TensorType(shape[::-1], node.out.type.dtype), node.out.hint) for _ in "ab"]
    return (Node("permute", (x,), (flipped[0],), {"perm": perm}, node.loc),
            Node("copy", (flipped[0],), (flipped[1],), {**attrs, "order": "C"}, node.loc),
            Node("permute", (flipped[1],), node.outputs, {"perm": perm}, node.loc))


def forward_identity_perm(node: Node, ctx):
    perm = node.attr["perm"]
    return node.inputs[0] if tuple(perm) == tuple(range(len(perm))) else None


def literal_last(node: Node, ctx):
    """``c ∘ x → x ∘ c`` for commutative ∘, so rules match one operand order."""
    if node.op not in ops.REGISTRY or not ops.get(node.op).commutative:
        return None
    if len(node.inputs) != 2 or not isinstance(node.inputs[0], Lit):
        return None
    lit, other = node.inputs
    if not isinstance(other, Var):
        return None
    if node.op in _ORDER_SENSITIVE_ON_FLOATS and lit.dtype.kind == "f":
        return None
    return node.replace(inputs=(other, lit))


RULES = (
    ("cast_same_dtype", "cast", forward_same_type),          # cast(x: T, T) → x
    ("reshape_same_shape", "reshape", forward_same_type),    # reshape(x: s, s) → x
    ("broadcast_same_shape", "broadcast", forward_same_type),  # broadcast(x: s, s) → x
    ("expand_dims_none", "expand_dims", forward_same_type),  # expand_dims(x, ()) → x
    ("squeeze_none", "squeeze", forward_same_type),          # squeeze(x, ()) → x
    ("permute_identity", "permute", forward_identity_perm),  # permute(x, (0..n-1)) → x
    ("copy_internal", "copy", forward_copy),                 # copy(x) → x unless it is returned
    ("literal_last", "*", literal_last),                     # c ∘ x → x ∘ c  (∘ commutative)
)


@register_pass("canonicalize")
def canonicalize(graph) -> PassResult:
    new_graph, fired = rewrite(graph, RULES)
    return PassResult(new_graph, bool(fired), dict(sorted(fired.items())))
