"""Every mapped NumPy function, method and operator, compiled: trace, then replay on new data.

The cases are the tracer's own tables (tests/tracer); here each one goes through the whole
pipeline -- passes, generated kernels, runtime -- and must equal eager NumPy on both calls.
"""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same
from tests.tracer import test_functions as functions
from tests.tracer import test_semantics as semantics
from tests.tracer import test_ufuncs as ufuncs

# Single ops: within a few ulp (vector math); reductions reorder sums.
TOLERANCE = {np.dtype(np.float32): (2e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-14),
             np.dtype(np.float16): (1e-3, 1e-3)}


def perturbed(value):
    """New data of the same type, shape and dtype (floats only: indices and masks stay valid)."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return (value * 1.5 + 0.25).astype(value.dtype)
    return value


def check_compiled(fn, *args):
    compiled = fusejit.compile(fn)
    for call_args in (args, tuple(perturbed(a) for a in args)):
        expected = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in call_args])
        assert_same(expected, compiled(*call_args), TOLERANCE)
    assert compiled.cache_info()["eager_signatures"] == 0, compiled.explain(*args)


@pytest.mark.parametrize("ufunc", ufuncs.UNARY, ids=lambda u: u.__name__)
def test_unary(ufunc):
    check_compiled(lambda x: ufunc(x), ufuncs.F32)


@pytest.mark.parametrize("ufunc", ufuncs.POSITIVE, ids=lambda u: u.__name__)
def test_unary_positive_domain(ufunc):
    check_compiled(lambda x: ufunc(x), ufuncs.POS)


@pytest.mark.parametrize("ufunc", ufuncs.BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("other", [ufuncs.POS[0], 2.5, np.float64(1.5)],
                         ids=["f32row", "pyfloat", "f64scalar"])
def test_binary(ufunc, other):
    check_compiled(lambda x, y: ufunc(x, y), ufuncs.POS, other)


@pytest.mark.parametrize("op", ufuncs.OPERATORS)
@pytest.mark.parametrize("x, y", [(ufuncs.POS, ufuncs.F64), (ufuncs.I32 + 6, 2.0),
                                  (ufuncs.I32 + 6, np.int32(3)),
                                  (np.array(2.0, np.float32), np.ones((1, 3)))])
def test_operators_mixed_dtypes(op, x, y):
    check_compiled(op, x, y)


@pytest.mark.parametrize("fn", functions.REDUCTIONS)
@pytest.mark.parametrize("x", [functions.X, functions.I32, functions.B],
                         ids=["f32", "i32", "bool"])
def test_reductions(fn, x):
    try:
        fn(x)
    except (ValueError, TypeError, np.exceptions.AxisError) as exc:
        with pytest.raises(type(exc)):
            fusejit.compile(fn)(x)
        return
    check_compiled(fn, x)


@pytest.mark.parametrize("fn", functions.MOVEMENT)
def test_movement_and_copies(fn):
    check_compiled(fn, functions.X)


@pytest.mark.parametrize("fn", functions.CONTRACTIONS)
def test_contractions(fn):
    check_compiled(fn, functions.X, functions.rng.standard_normal((4, 6)).astype(np.float32))


@pytest.mark.parametrize("fn", semantics.INDEXING)
def test_indexing(fn):
    check_compiled(fn, semantics.X, np.array([3, 1]))


def test_embedding_gather_and_add_at():
    check_compiled(lambda wte, ids: wte[ids] * 2, semantics.WTE, semantics.IDS)
    check_compiled(lambda x, i, v: np.add.at(x, i, v) or x.sum(), semantics.X.copy(),
                   np.array([0, 2, 0]), np.float32(2.0))


def _shift(x):
    return (x.astype(np.int64) << 2) + (x.astype(np.int64) >> 1)


@pytest.mark.parametrize("fn", [_shift, lambda x: divmod(x, 2.5),
                                lambda x: 3.0 % x + divmod(7, x)[0]],
                         ids=["shifts", "divmod", "rdivmod"])
def test_operators_numpy_arrays_have(fn):
    x = np.arange(1.0, 7.0).reshape(2, 3)
    compiled = fusejit.compile(fn)
    for values in (x, x * 3):
        assert_same(fn(values.copy()), compiled(values))
    assert compiled.cache_info()["eager_calls"] == 0


def _square_in_place(x):
    y = x * 1
    y **= 2
    return y


POWER_OPERANDS = [np.array([True, False]), np.array([3, -2, 0], np.int8),
                  np.array([-0.0, -np.inf, 2.0, np.nan, 4.0], np.float16),
                  np.array([-0.0, -np.inf, 2.0, 4.0], np.float32)]


@pytest.mark.parametrize("fn", [lambda x: x ** 2, lambda x: x ** 0.5, lambda x: x ** -1,
                                lambda x: x ** 3, _square_in_place],
                         ids=["square", "sqrt", "reciprocal", "power", "square_in_place"])
@pytest.mark.parametrize("x", POWER_OPERANDS, ids=lambda x: x.dtype.name)
def test_power_operator_takes_numpys_shortcuts(fn, x):
    # ``array ** 2`` is np.square (bool: int8), ``** 0.5`` np.sqrt and ``** -1`` np.reciprocal
    # for float arrays (float16 -0.0 ** 0.5 is -0.0), as in NumPy's operator.
    compiled = fusejit.compile(fn)
    if x.dtype.kind in "bi" and fn(np.array(2.0)) == 0.5:   # integers to negative powers
        with pytest.raises(ValueError, match="negative integer powers"):
            compiled(x)
        return
    for _ in range(2):
        assert_same(fn(x), compiled(x))


@pytest.mark.parametrize("fn", [lambda x: x.reshape(x.shape), lambda x: x.ravel(),
                                lambda x: x.T, lambda x: np.broadcast_to(x, x.shape),
                                lambda x: (x.ravel(), x * 2)],
                         ids=["reshape", "ravel", "T", "broadcast_to", "with_a_value"])
def test_a_view_the_same_shape_as_its_argument_is_a_new_view_on_every_call(fn):
    # NumPy returns a view: writes through it reach the argument (broadcast_to's is read-only).
    compiled = fusejit.compile(fn)
    for _ in range(2):
        x = np.arange(4.0)
        want, got = fn(x), compiled(x)
        assert_same(want, got)
        want, got = (want[0], got[0]) if isinstance(want, tuple) else (want, got)
        assert got is not x and np.shares_memory(got, x)
        assert got.flags.writeable == want.flags.writeable


@pytest.mark.parametrize("source", [
    "np.sum(x, initial=5.0)", "np.max(x, where=x > 0, initial=-1.0)", "x.sum(axis=1, where=x > 1)",
    "np.reshape(x, (3, 2), order='F') + 1", "x.ravel(order='F') * 2", "x.flatten(order='F')",
    "np.einsum('ij,jk', x, x.T)", "np.einsum('ii->i', x[:, :2]) * 2",
    "np.where(x > 0, np.multiply(x, 2, where=x > 0, out=None), 0.0)"])
def test_options_without_a_kernel_run_as_numpy_host_ops(source):
    fn = eval(f"lambda x: {source}")  # noqa: S307 -- the cases above, as source for their ids
    x = np.arange(6.0).reshape(2, 3) - 2
    compiled = fusejit.compile(fn)
    for values in (x, x * 3):
        assert_same(fn(values.copy()), compiled(values))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 1


@pytest.mark.parametrize("source", [
    "x.round(1) + x", "x.argsort(1)", "x.diagonal() + 1", "x.take([0], 1) * x",
    "x.take(np.array([4, 1])) + 1", "x.cumprod(1)", "x.trace() * 2", "(x * 1j).conj() * 2",
    "x.compress([True, False], axis=0) * 2", "x.view() * 2", "x.view(x.dtype) + x",
    "x.view(np.ndarray) + 1", "x[0].searchsorted(x[1] / 2)", "x.argpartition(1, axis=1)",
    "(x + 10).nonzero()[1] + 1"])
def test_methods_map_to_their_numpy_functions(source):
    fn = eval(f"lambda x: {source}")  # noqa: S307 -- the cases above, as source for their ids
    x = np.arange(6.0).reshape(2, 3) * 1.37
    compiled = fusejit.compile(fn)
    for values in (x, x * 3, x - 1):
        assert_same(fn(values.copy()), compiled(values))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2


def _sort_rows_in_place(x):
    x.sort(axis=1)
    return x[:, 0] * 2


def _partition_made_array(x):
    y = x * 2
    y.partition(1)
    return y


def _fill_made_array(x, value):
    y = np.empty_like(x)
    y.fill(value)
    return y + x


def _view_written_through(x):
    y = x * 2
    z = y.view()
    z[0] = -1.0
    return y, z


def _fill_argument_with_text(x):
    x.fill("1.5")               # NumPy converts the text; it raised UnsupportedError after
    return x * 2                # writing into x


@pytest.mark.parametrize("fn, extra", [(_sort_rows_in_place, ()), (_partition_made_array, ()),
                                       (_fill_made_array, (2.5,)), (_view_written_through, ()),
                                       (_fill_argument_with_text, ())])
def test_methods_that_write_in_place_compile(fn, extra):
    compiled = fusejit.compile(fn)
    for k in range(3):
        x = np.random.default_rng(k).standard_normal((3, 4))
        mine = x.copy()
        assert_same(fn(x, *extra), compiled(mine, *extra))
        assert_same(x, mine)     # the argument sorted in place as eagerly
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2


def test_conj_of_a_real_array_is_the_array_itself():
    def conj_written(x):
        y = x.conj()
        y[0] = 100.0          # NumPy: x.conj() is x for a real x, so this writes x
        return x * 1

    compiled = fusejit.compile(conj_written)
    for k in range(3):
        x, mine = np.arange(3.0) + k, np.arange(3.0) + k
        assert_same(conj_written(x), compiled(mine))
        assert_same(x, mine)


@pytest.mark.parametrize("call, error", [
    (lambda x: x.sort(axis=None), "cannot be interpreted as an integer"),
    (lambda x: x.partition(5), "out of bounds"),
    (lambda x: x.view(np.float64, np.ndarray, 1), "takes from 0 to 2 positional")])
def test_methods_refuse_what_numpys_refuse(call, error):
    compiled = fusejit.compile(call)
    for fn in (call, compiled):
        with pytest.raises((TypeError, ValueError), match=error):
            fn(np.array([3.0, 1.0]))
    frozen = np.array([3.0, 1.0])
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="sort array is read-only"):
        fusejit.compile(lambda x: x.sort())(frozen)


@pytest.mark.parametrize("source", ["x.getfield(np.float64) * 2", "x.item(3) * x",
                                    "x.flags.owndata", "x.view(np.int64) & 1"])
def test_methods_the_tracer_does_not_map_run_eagerly(source):
    fn = eval(f"lambda x: {source}")  # noqa: S307 -- the cases above, as source for their ids
    x = np.arange(6.0).reshape(2, 3) * 1.37
    compiled = fusejit.compile(fn)
    for values in (x, x * 3):
        assert_same(fn(values.copy()), compiled(values))
    assert compiled.cache_info()["eager_signatures"] == 1


def _rounded_scale(x):
    return x * round(x.sum() / 10)          # a Python int: guarded like int(t)


def _rounded_digits(x):
    return x - round(x.max(), 1)            # a NumPy scalar: traced as np.round


def test_round_of_a_traced_scalar_compiles():
    # round() ran the whole signature eagerly; a guard on its int (a traced np.round with
    # digits) keeps it compiled, and another rounded value, NaN included, takes a new trace
    x = np.array([1.25, 3.5, 4.75], np.float32)
    for fn in (_rounded_scale, _rounded_digits):
        compiled = fusejit.compile(fn)
        for values in (x, x + 0.01, x * 3):
            assert_same(fn(values.copy()), compiled(values))
        info = compiled.cache_info()
        assert info["eager_signatures"] == 0 and info["hits"] >= 1, info
    compiled = fusejit.compile(_rounded_scale)
    compiled(x)
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        compiled(np.array([np.nan, 1.0, 2.0], np.float32))
    assert_same(_rounded_scale(x * 3), compiled(x * 3))


@pytest.mark.parametrize("body, values", [
    (lambda x: round(x * 2), np.ones(3)),
    (lambda x: round(x.sum(), 1), np.array([1.25 + 2j, 1])),   # complex: compiled rounded it
    (lambda x: round(x.sum()), np.array([1.25 + 2j, 1])),
    (lambda x: round(x.any(), 1), np.array([True, False]))], ids=["array", "complex-digits",
                                                                   "complex", "bool"])
def test_round_of_what_has_no_round_raises_as_numpy(body, values):
    compiled = fusejit.compile(body)
    for _ in range(2):
        for fn in (body, compiled):
            with pytest.raises(TypeError, match="doesn't define __round__"):
                fn(values)


def _take_into_made(x):
    o = np.zeros(2)
    r = np.take(x, [0, 2], out=o)
    return o * 2, r is o


def _round_method_into_made(x):
    o = np.zeros(3)
    x.round(1, out=o)
    return o + 1


def _take_into_argument(x, o):
    np.take(x, [2, 0], out=o)
    return o * 2


@pytest.mark.parametrize("fn, make", [
    (_take_into_made, lambda k: (np.arange(3.0) + k,)),
    (_round_method_into_made, lambda k: (np.arange(3.0) * 1.234 + k,)),
    (_take_into_argument, lambda k: (np.arange(3.0) + k, np.zeros(2)))])
def test_numpy_calls_run_as_they_are_write_their_out_array(fn, make):
    # a host op given out= wrote into the program's buffer, which the later reads of `o`
    # did not see: replays returned the first call's values
    compiled = fusejit.compile(fn)
    for k in range(3):
        theirs, mine = make(k), make(k)
        assert_same(fn(*theirs), compiled(*mine))
        assert_same(theirs, mine)
    assert compiled.cache_info()["eager_calls"] == 0


def _copy_where(x, m, value):
    y = x * 2
    np.copyto(y, value, where=m)
    return y


def _copy_into_argument(x, src):
    np.copyto(x, src)           # src broadcast over x's rows, float64 cast into float32
    return x.sum()


def _copy_where_into_argument(x, src):
    np.copyto(x, src, where=src > 0)
    return x


@pytest.mark.parametrize("value", [0.0, np.float32(-1.5), np.arange(4.0)],
                         ids=["python-float", "numpy-scalar", "row"])
def test_copyto_with_a_mask_compiles(value):
    compiled = fusejit.compile(_copy_where)
    for k in range(3):
        x = np.random.default_rng(k).standard_normal((3, 4)).astype(np.float32)
        m = x > 0
        assert_same(_copy_where(x, m, value), compiled(x, m, value))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2


@pytest.mark.parametrize("fn", [_copy_into_argument, _copy_where_into_argument])
def test_copyto_into_an_argument_writes_it_back(fn):
    compiled = fusejit.compile(fn)
    for k in range(3):
        x = np.zeros((3, 4), np.float32)
        src = np.random.default_rng(k).standard_normal(4)
        mine = x.copy()
        assert_same(fn(x, src), compiled(mine, src))
        assert_same(x, mine)
    assert compiled.cache_info()["eager_calls"] == 0


@pytest.mark.parametrize("source", [lambda x, lr: x[::-1], lambda x, lr: x,
                                    lambda x, lr: lr, lambda x, lr: x[:, None]],
                         ids=["reversed-view", "broadcast-row", "python-float", "column"])
def test_copyto_into_a_made_array_is_a_new_array(source):
    # the value was the stored array itself: a view of x, or a read-only broadcast
    def filled(x, lr):
        y = np.zeros((3, 3))
        np.copyto(y, source(x, lr))
        return y

    compiled = fusejit.compile(filled)
    for k in range(3):
        x = np.arange(3.0) + k
        want, got = filled(x, 0.5 * k), compiled(x, 0.5 * k)
        assert_same(want, got)
        assert got.flags.writeable and not np.shares_memory(got, x)


def test_copyto_a_python_float_argument_follows_it():
    def fill_with(x, value):
        y = x * 1
        np.copyto(y, value)
        return y

    compiled = fusejit.compile(fill_with)
    for value in (0.5, 2.0, -3.25):
        assert_same(fill_with(np.ones(3), value), compiled(np.ones(3), value))
    assert compiled.cache_info()["eager_calls"] == 0


def test_copyto_refuses_what_numpy_refuses():
    def copy_into(x, src):
        np.copyto(x, src)
        return x

    compiled = fusejit.compile(copy_into)
    ints = np.zeros(3, np.int64)
    for fn in (copy_into, compiled):   # same_kind: float64 into int64 is refused
        with pytest.raises(TypeError, match="Cannot cast"):
            fn(ints.copy(), np.ones(3))
        with pytest.raises(ValueError, match="could not broadcast"):
            fn(np.zeros(3), np.ones(4))


def _clip_in_place(g, c):
    np.clip(g, -c, c, out=g)
    return g.sum()


def _clip_method_in_place(g, c):
    return g.clip(-c, c, out=g) * 2


def _clip_into_other(g, h):
    np.clip(g, -1, 1, out=h)
    return h


def _clip_into_float32(g, h):
    np.clip(g, -0.5, 0.5, out=h)    # computed in float64, cast into h (same_kind)
    return h


def _clip_into_view(g):
    np.clip(g[1:], 0, 1, out=g[:-1])
    return g


@pytest.mark.parametrize("fn, make", [
    (_clip_in_place, lambda r: (r.standard_normal(10) * 3, 1.0)),
    (_clip_method_in_place, lambda r: (r.standard_normal((3, 4)) * 3, 0.5)),
    (_clip_into_other, lambda r: (r.standard_normal(6) * 3, np.zeros(6))),
    (_clip_into_float32, lambda r: (r.standard_normal(6) * 3, np.zeros(6, np.float32))),
    (_clip_into_view, lambda r: (r.standard_normal(6) * 3,)),
])
def test_clip_with_out_writes_in_place_like_numpy(fn, make):
    compiled, r = fusejit.compile(fn), np.random.default_rng(3)
    for _ in range(3):
        args = make(r)
        eager = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert_same(fn(*eager), compiled(*mine), TOLERANCE)
        assert_same(eager, mine)
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (1, 0)
