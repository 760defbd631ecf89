"""fold: literal arithmetic and algebraic identities, one rule per line, run to a fixpoint.

Every identity is exact in IEEE arithmetic and keeps the output type (the surviving operand must
have the node's shape and dtype, so broadcasting is never lost). ``x + 0.0 → x`` is *not* one:
``-0.0 + 0.0`` is ``+0.0``.
"""
from __future__ import annotations

import numpy as np

from ..ir import Lit, Node, SizeLit, TensorType, Var, ops
from .manager import PassResult, register_pass
from .rewrite import is_view, rewrite, same_type


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


def is_real_one(value) -> bool:
    """1 of a real type: NumPy's complex multiply and divide by 1 are not the identity
    (``inf`` and ``-0.0`` parts give ``nan`` and ``+0.0``)."""
    return is_one(value) and value.dtype.kind != "c"


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


def cube(node: Node, ctx):
    """x**3 → (x*x)*x. Not bit-exact: two products round twice (< 1.3 ulp from the exact cube)
    and NumPy's pow is not exact either; they differ by at most 2 ulp (float32, measured on
    10^5 values: 70% equal, 3 at 2 ulp). Issue 3 accepts that for a pow call that stops the
    loop vectorizer. Infinities, zeros and NaN give NumPy's results."""
    x, exponent = node.inputs
    if not (_is_float_lit(exponent, 3) and x.type.dtype.kind == "f"):
        return None
    square_node = _temp("mul", (x, x), node)
    return square_node, node.replace(op="mul", inputs=(square_node.out, x))


def square_root(node: Node, ctx):
    """x**0.5 → sqrt(x): bit-exact wherever NumPy's own power uses sqrt for 0.5 (NumPy 2 does:
    power(-0.0, 0.5) = -0.0 and power(-inf, 0.5) = nan, checked at import). Otherwise C pow's
    special cases are kept: where(x == -inf, inf, sqrt(x) + 0.0) (+0.0 turns -0.0 into +0.0)."""
    x, exponent = node.inputs
    if not (_is_float_lit(exponent, 0.5) and x.type.dtype.kind == "f"):
        return None
    if _numpy_power_half_is_sqrt(x.type.dtype) and not node.out.type.weak:
        return node.replace(op="sqrt", inputs=(x,))   # a Python float's ``**`` is C pow
    dtype = x.type.dtype
    root = _temp("sqrt", (x,), node)
    plus_zero = _temp("add", (root.out, Lit(0.0, dtype)), node)
    is_minus_inf = _temp("eq", (x, Lit(-np.inf, dtype)), node, np.bool_)
    return root, plus_zero, is_minus_inf, node.replace(
        op="where", inputs=(is_minus_inf.out, Lit(np.inf, dtype), plus_zero.out))


def div_by_power_of_two(node: Node, ctx):
    """x / c → x * (1/c) when c = ±2**k and 1/c is representable: both sides are the exact
    quotient rounded once, so the result is bit-identical (subnormals included). Any other
    c would round 1/c first: never folded, and neither is an element count (``SizeLit``): its
    kernel divides by an argument, which serves every length."""
    x, divisor = node.inputs
    if not isinstance(divisor, Lit) or isinstance(divisor, SizeLit) or divisor.dtype.kind != "f":
        return None
    with np.errstate(all="ignore"):
        inverse = np.reciprocal(divisor.value)
        exact = (np.isfinite(divisor.value) and divisor.value != 0 and np.isfinite(inverse)
                 and abs(float(np.frexp(divisor.value)[0])) == 0.5
                 and inverse * divisor.value == 1)
    if not exact:
        return None
    return node.replace(op="mul", inputs=(x, Lit(inverse, divisor.dtype)))


def _is_float_lit(value, number) -> bool:
    return isinstance(value, Lit) and value.dtype.kind == "f" and value.value == number


def _temp(op: str, inputs, node: Node, dtype=None) -> Node:
    """A new node at ``node``'s location, with ``node``'s shape (and dtype unless given)."""
    out_type = node.out.type
    out = Var(TensorType(out_type.shape, dtype or out_type.dtype))
    return Node(op, inputs, (out,), {}, node.loc)


def _numpy_power_half_is_sqrt(dtype) -> bool:
    return _POWER_HALF_IS_SQRT.get(np.dtype(dtype).name, False)


def _probe_power_half() -> dict[str, bool]:
    result = {}
    for dtype in (np.float32, np.float64):
        probe = np.array([-0.0, -np.inf, np.inf, 2.0, 3.0, 1e-300, -1.0, np.nan], dtype)
        with np.errstate(all="ignore"):
            want, got = np.sqrt(probe), np.power(probe, dtype(0.5))
        result[np.dtype(dtype).name] = want.tobytes() == got.tobytes()
    return result


_POWER_HALF_IS_SQRT = _probe_power_half()


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
    if x.type.dtype.kind in "fc" and node.out.type.dtype.kind in "iu":
        return None   # NumPy's NaN and out-of-range results depend on the float type converted
    if inner.out.type.dtype.kind in "fc" and node.out.type.dtype.kind in "iu" and \
            not is_exact_cast(x.type.dtype, node.out.type.dtype):
        return None   # uint32 -> float64 -> int8 saturates or is invalid; uint32 -> int8 wraps
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


def setitem_repeated(node: Node, ctx):
    """``x[k] += v`` writes through the view ``x[k]``, then Python stores the view back: the
    second write of the same value at the same key writes nothing new."""
    inner = ctx.producer(node.inputs[0])
    if inner is None or inner.op != "setitem" or inner.attrs != node.attrs or \
            inner.inputs[1:] != node.inputs[1:]:
        return None
    return inner.out


def whole_setitem(node: Node, ctx):
    """``m[:] = 0.9 * m + g`` replaces every element with a value computed in the body: the
    result is that value (the write-back into ``m``, or the kernel storing into ``m``,
    ``in_place_updates``, makes it the caller's array). Not for a value that is an input, a
    view or an opaque NumPy result: those may share memory with what the write changes."""
    if len(node.inputs) != 2:   # index arrays: not a basic key
        return None
    target, value = node.inputs
    source = ctx.producer(value)
    if source is None or is_view(source) or source.op in ("host", "setitem", "scatter_add") \
            or not same_type(target, value):
        return None
    return value if _covers(node.attr["key"], target.type.shape) else None


def _covers(key: tuple, shape: tuple) -> bool:
    """Whether the basic index ``key`` selects every element of an array of ``shape``."""
    tags = [item[0] for item in key]
    dims = len(key) - tags.count("ellipsis")
    if tags.count("ellipsis") > 1 or set(tags) - {"slice", "ellipsis"} or dims > len(shape):
        return False
    split = tags.index("ellipsis") if "ellipsis" in tags else len(key)
    leading, trailing = key[:split], key[split + 1:]
    sizes = list(shape[:len(leading)]) + list(shape[len(shape) - len(trailing):])
    return all(item[1] in (None, 0) and item[3] in (None, 1) and (item[2] is None or
               item[2] >= size) for item, size in zip(leading + trailing, sizes, strict=True))


RULES = (
    ("literal", "*", fold_literal),                          # f(c1, …, cn) → c  (0-d results)
    ("mul_one", "mul", forward_if(1, is_real_one)),          # x * 1 → x  (not complex)
    ("one_mul", "mul", forward_if(0, is_real_one)),          # 1 * x → x
    ("sub_zero", "sub", forward_if(1, is_plus_zero)),        # x - (+0) → x  (-0 - 0 = -0)
    ("add_zero", "add", forward_if(1, is_additive_identity)),  # x + (-0.0) → x; ints: x + 0
    ("zero_add", "add", forward_if(0, is_additive_identity)),  # (-0.0) + x → x; ints: 0 + x
    ("div_one", "div", forward_if(1, is_real_one)),          # x / 1 → x  (not complex)
    ("pow_one", "pow", forward_if(1, is_one)),               # x ** 1 → x
    ("pow_two", "pow", square),                              # x ** 2 → x * x  (NumPy: square)
    ("pow_three", "pow", cube),                              # x ** 3 → (x * x) * x  (≤ 2 ulp)
    ("pow_half", "pow", square_root),                        # x ** 0.5 → sqrt(x)  (NumPy: sqrt)
    ("div_pow2", "div", div_by_power_of_two),                # x / 2**k → x * 2**-k  (exact)
    ("neg_neg", "neg", neg_neg),                             # -(-x) → x
    ("cast_cast", "cast", cast_cast),                        # cast(cast(x, B), C) → cast(x, C)
    ("permute_permute", "permute", permute_permute),         # (x^p)^q → x^(p∘q)
    ("reshape_reshape", "reshape", reshape_of_reshape),      # reshape(reshape(x, s), t) → …(x, t)
    ("squeeze_reshape", "squeeze", reshape_of_reshape),      # squeeze(reshape(x, s)) → reshape
    ("expand_dims_reshape", "expand_dims", reshape_of_reshape),  # expand_dims(reshape) → reshape
    ("setitem_setitem", "setitem", setitem_repeated),        # set(set(x, v, k), v, k) → inner
    ("whole_setitem", "setitem", whole_setitem),             # set(x, v, [:]) → v  (v computed)
)


@register_pass("fold")
def fold(graph) -> PassResult:
    new_graph, fired = rewrite(graph, RULES)
    return PassResult(new_graph, bool(fired), dict(sorted(fired.items())))
