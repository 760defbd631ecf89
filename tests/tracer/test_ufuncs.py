import numpy as np
import pytest
import scipy.special

from .helpers import check

rng = np.random.default_rng(0)
F32 = rng.standard_normal((3, 4)).astype(np.float32)
POS = (np.abs(F32) + 0.5).astype(np.float32)
F64 = rng.standard_normal((4,))
I32 = rng.integers(-5, 5, (3, 4)).astype(np.int32)
B = F32 > 0
UNARY = [np.negative, np.positive, np.abs, np.exp, np.expm1, np.tanh, np.sinh, np.cosh,
         np.sin, np.cos, np.tan, np.arctan, np.sign, np.floor, np.ceil, np.rint, np.isnan,
         np.isinf, np.isfinite, np.square, np.logical_not, scipy.special.erf]
POSITIVE = [np.log, np.log1p, np.log2, np.log10, np.sqrt, np.reciprocal]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.floor_divide, np.remainder,
          np.power, np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2, np.equal,
          np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
          np.logical_and, np.logical_or, np.logical_xor]


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
def test_unary(ufunc):
    check(lambda x: ufunc(x), F32)


@pytest.mark.parametrize("ufunc", POSITIVE, ids=lambda u: u.__name__)
def test_unary_positive_domain(ufunc):
    check(lambda x: ufunc(x), POS)


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("other", [POS[0], 2.5, np.float64(1.5), F64.astype(np.float32)],
                         ids=["f32row", "pyfloat", "f64scalar", "f32vec"])
def test_binary(ufunc, other):
    check(lambda x, y: ufunc(x, y), POS, other)


@pytest.mark.parametrize("ufunc", [np.bitwise_and, np.bitwise_or, np.bitwise_xor],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize("a, b", [(I32, I32[0]), (B, ~B), (I32, 3)], ids=["int", "bool", "lit"])
def test_bitwise(ufunc, a, b):
    check(lambda x, y: ufunc(x, y), a, b)


OPERATORS = [
    lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
    lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x ** 2, lambda x, y: -x,
    lambda x, y: +x, lambda x, y: abs(x), lambda x, y: x < y, lambda x, y: x >= y,
    lambda x, y: x == y, lambda x, y: x != y, lambda x, y: 2 - x, lambda x, y: 1.5 / x,
    lambda x, y: y * x,
]


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("x, y", [
    (POS, F64.astype(np.float32)),            # f32 with f32 broadcast
    (POS, 0.5),                               # f32 with a weak Python float
    (POS, F64),                               # f32 with f64 array -> f64
    (I32 + 6, 2.0),                           # int32 with a Python float -> f64
    (I32 + 6, np.int32(3)),                   # int32 with a NumPy scalar
    (np.array(2.0, np.float32), np.ones((1, 3))),  # 0-d and size-1 dims
])
def test_operators_mixed_dtypes(op, x, y):
    check(op, x, y)


def test_invert():
    check(lambda x, b: (~x, ~b), I32, B)


def test_matmul_operator_and_ufunc():
    check(lambda x, w: (x @ w, np.matmul(x, w), x[0] @ w, x @ w[:, 0]), F32, F32.T.copy())


def test_weak_scalar_arithmetic_stays_python_float():
    tr = check(lambda lr, x: (lr * 2, -lr, 1 - lr, x * lr, np.exp(lr)), 0.25, F32)
    assert [leaf.pyfloat for leaf in tr.out_leaves] == [True, True, True, False, False]
    assert tr.out_leaves[4].scalar and tr.graph.inputs[0].type.weak


def test_generic_scalar_argument():
    tr = check(lambda s, x: (s * x, s + 1), np.float32(2.0), F32)
    assert tr.out_leaves[1].scalar


def test_ufunc_where_kwarg_is_a_host_op_and_with_out_a_masked_write():
    from fusejit.tracer import trace
    tr = trace(lambda x: np.add(x, 1, where=x > 0), (F32,), {})
    assert [n.op for n in tr.graph.nodes] == ["gt", "host"]
    tr = trace(lambda x: np.add(x, 1, where=x > 0, out=x), (F32.copy(),), {})
    assert [n.op for n in tr.graph.nodes] == ["gt", "add", "where"] and not tr.fallback
    # an unmapped ufunc or a method: NumPy's call, and the signature runs eagerly
    for body in (lambda x: np.ldexp(x, 2, where=x > 0, out=x),
                 lambda x: np.add.accumulate(x, out=x)):
        tr = trace(body, (F32.copy(),), {})
        assert "with out= is not traced" in tr.fallback.reason


def test_ufunc_method_is_a_host_op():
    from fusejit.tracer import trace
    tr = trace(lambda x: np.add.accumulate(x * 2) + 1, (F32,), {})
    assert [n.op for n in tr.graph.nodes] == ["mul", "host", "add"]
    assert tr.graph.nodes[1].attr["name"] == "np.add.accumulate"


def test_float_cube_traces_as_the_products_the_kernel_computes():
    # NumPy's x**3 calls powf; the fold pass compiles (x*x)*x, and the trace computes the
    # same, so the first call and every replay agree bit for bit (and with NumPy to 2 ulp).
    import fusejit
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 33)).astype(np.float32) * 10
    x[0, :4] = [np.inf, -np.inf, np.nan, -0.0]
    cube = fusejit.compile(lambda a: a**3)
    first, replay = cube(x), cube(x)
    assert first.dtype == np.float32 and np.array_equal(first, replay, equal_nan=True)
    assert np.array_equal(first, (x * x) * x, equal_nan=True)
    np.testing.assert_array_max_ulp(first[1:], x[1:] ** 3, maxulp=2)
    ints = np.arange(-5, 5)
    assert np.array_equal(cube(ints), ints**3) and cube(ints).dtype == ints.dtype


def _shift_after_updates(m, g):
    m *= 3
    m += g
    m >>= 1               # np.right_shift(m, 1, out=m): no IR op, a host op then a write
    return m.sum()


def _ldexp_into(m, g):
    np.ldexp(g, 2, out=m)
    return m * 2


@pytest.mark.parametrize("fn, m_dtype, eager", [
    (_shift_after_updates, np.int64, False),
    (_ldexp_into, np.float64, False),
    (_ldexp_into, np.float32, True),     # float64 result cast into out: the signature is eager
], ids=["right_shift", "ldexp", "ldexp_cast"])
def test_unmapped_ufunc_with_out_writes_into_its_target(fn, m_dtype, eager):
    from tests.oracle import check_calls
    compiled = check_calls(fn, lambda call: (np.arange(5).astype(m_dtype) * (call + 1),
                                             np.arange(5) + call))
    assert compiled.cache_info()["eager_signatures"] == eager
