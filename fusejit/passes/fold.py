"""fold: literal arithmetic and algebraic identities, one rule per line, run to a fixpoint.

Every identity is exact in IEEE arithmetic and keeps the output type (the surviving operand must
have the node's shape and dtype, so broadcasting is never lost). ``x + 0.0 → x`` is *not* one:
``-0.0 + 0.0`` is ``+0.0``.
"""
from __future__ import annotations

import numpy as np

from ..ir import Lit, Node, ops
from .manager import PassResult, register_pass
from .rewrite import rewrite, same_type


def fold_literal(node: Node, ctx):
    """An elementwise node of literals with a 0-d result becomes that literal (NumPy computes
    it in the node's dtype, so the value is exactly what eager NumPy gives)."""
    if node.op not in ops.REGISTRY or ops.get(node.op).kind != ops.ELEMENTWISE:
        return None
    if len(node.outputs) != 1 or node.out.type.shape != ():
        return None
    if not all(isinstance(v, Lit) for v in node.inputs):
        return None
    with np.errstate(all="ignore"):
        (result,) = ops.evaluate(node.op, [v.value for v in node.inputs], node.attrs)
    return Lit(result, result.dtype) if result.dtype == node.out.type.dtype else None


def is_one(value) -> bool:
    return isinstance(value, Lit) and value.value == 1


def is_two(value) -> bool:
    return isinstance(value, Lit) and value.value == 2


def is_plus_zero(value) -> bool:
    return isinstance(value, Lit) and value.value == 0 and not _negative_zero(value)


def is_additive_identity(value) -> bool:
    """-0.0 for floats (x + -0.0 == x for every x, -0.0 included); 0 / False otherwise."""
    if not isinstance(value, Lit) or value.value != 0:
        return False
    return value.dtype.kind not in "fc" or _negative_zero(value)


def _negative_zero(lit: Lit) -> bool:
    return lit.dtype.kind == "f" and bool(np.signbit(lit.value))


def forward_if(literal_at: int, test):
    """Rule: forward the other operand when operand ``literal_at`` passes ``test``."""
    def rule(node: Node, ctx):
        other = node.inputs[1 - literal_at]
        if test(node.inputs[literal_at]) and same_type(other, node.out):
            return other
        return None
    return rule


def square(node: Node, ctx):
    x, exponent = node.inputs
    return node.replace(op="mul", inputs=(x, x)) if is_two(exponent) else None


def neg_neg(node: Node, ctx):
    inner = ctx.producer(node.inputs[0])
    return inner.inputs[0] if inner is not None and inner.op == "neg" else None


def is_exact_cast(source, target) -> bool:
    """Every value of dtype ``source`` is representable in ``target``."""
    source, target = np.dtype(source), np.dtype(target)
    if source == np.bool_ or source == target:
        return True
    if source.kind in "iu" and target.kind == "f":
        value_bits = source.itemsize * 8 - (source.kind == "i")
        return value_bits <= np.finfo(target).nmant + 1
    if source.kind == "f" and target.kind != "f":
        return False
    return bool(np.can_cast(source, target, "safe"))


def cast_cast(node: Node, ctx):
    inner = ctx.producer(node.inputs[0])
    if inner is None or inner.op != "cast":
        return None
    (x,) = inner.inputs
    if not is_exact_cast(x.type.dtype, inner.out.type.dtype):
        return None
    if x.type.dtype == node.out.type.dtype and ctx.may_forward(node, x):
        return x
    return node.replace(inputs=(x,))


def permute_permute(node: Node, ctx):
    inner = ctx.producer(node.inputs[0])
    if inner is None or inner.op != "permute":
        return None
    (x,), first = inner.inputs, inner.attr["perm"]
    perm = tuple(first[axis] for axis in node.attr["perm"])
    if perm == tuple(range(len(perm))):
        return x
    return node.replace(inputs=(x,), attrs={"perm": perm})


def reshape_of_reshape(node: Node, ctx):
    """reshape/squeeze/expand_dims of a reshape is one reshape of the original value."""
    inner = ctx.producer(node.inputs[0])
    if inner is None or inner.op != "reshape":
        return None
    (x,) = inner.inputs
    if same_type(x, node.out):
        return x
    return Node("reshape", (x,), node.outputs, {"shape": node.out.type.shape}, node.loc)


RULES = (
    ("literal", "*", fold_literal),                          # f(c1, …, cn) → c  (0-d results)
    ("mul_one", "mul", forward_if(1, is_one)),               # x * 1 → x
    ("one_mul", "mul", forward_if(0, is_one)),               # 1 * x → x
    ("sub_zero", "sub", forward_if(1, is_plus_zero)),        # x - (+0) → x  (-0 - 0 = -0)
    ("add_zero", "add", forward_if(1, is_additive_identity)),  # x + (-0.0) → x; ints: x + 0
    ("zero_add", "add", forward_if(0, is_additive_identity)),  # (-0.0) + x → x; ints: 0 + x
    ("div_one", "div", forward_if(1, is_one)),               # x / 1 → x
    ("pow_one", "pow", forward_if(1, is_one)),               # x ** 1 → x
    ("pow_two", "pow", square),                              # x ** 2 → x * x  (NumPy: square)
    ("neg_neg", "neg", neg_neg),                             # -(-x) → x
    ("cast_cast", "cast", cast_cast),                        # cast(cast(x, B), C) → cast(x, C)
    ("permute_permute", "permute", permute_permute),         # (x^p)^q → x^(p∘q)
    ("reshape_reshape", "reshape", reshape_of_reshape),      # reshape(reshape(x, s), t) → …(x, t)
    ("squeeze_reshape", "squeeze", reshape_of_reshape),      # squeeze(reshape(x, s)) → reshape
    ("expand_dims_reshape", "expand_dims", reshape_of_reshape),  # expand_dims(reshape) → reshape
)


@register_pass("fold")
def fold(graph) -> PassResult:
    new_graph, fired = rewrite(graph, RULES)
    return PassResult(new_graph, bool(fired), dict(sorted(fired.items())))
