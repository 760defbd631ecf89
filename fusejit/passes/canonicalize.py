"""canonicalize: forward identity ops to their input and put literal operands last.

Identity forwarding never changes what a caller can observe (see ``rewrite.Context``): a
``copy`` or ``cast`` that is (a view of) a graph output stays, because eager NumPy returned a
fresh array there.
"""
from __future__ import annotations

from ..ir import Lit, Node, Var, ops
from .manager import PassResult, register_pass
from .rewrite import rewrite, same_type

# max/min/fmax/fmin pick an operand on ties, so on floats their order shows in the sign of 0.
_ORDER_SENSITIVE_ON_FLOATS = frozenset({"max", "min", "fmax", "fmin"})


def forward_same_type(node: Node, ctx):
    """``op(x) → x`` when the op keeps x's shape and dtype (and is an identity then)."""
    return node.inputs[0] if same_type(node.inputs[0], node.out) else None


def forward_copy(node: Node, ctx):
    """``copy(x) → x``, but for a C-ordered copy of a transpose that moves the last axis
    (``x.T.copy()``): the copy fixes the layout of what is computed from it, which the
    transpose alone would let ``sink_permutes`` lay out as x is."""
    source = ctx.producer(node.inputs[0])
    if node.attr.get("order") == "C" and source is not None and source.op == "permute":
        perm = source.attr["perm"]
        if len(perm) >= 2 and perm[-1] != len(perm) - 1:
            return None
    return forward_same_type(node, ctx)


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
