"""Every elementwise op with a scalar template, per dtype, against the reference interpreter.

All ops of one arity and dtype go into ONE multi-output kernel (compile time), over inputs
with NaN, infinities, signed zeros, zero divisors and integer extremes."""
import numpy as np
import pytest
from codegen_helpers import check_kernel, fused_node

import fusejit
from fusejit.codegen import build_kernel
from fusejit.ir import ops

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]
SKIP = {"cast", "full", "where"}


def special_values(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([True, False, True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([0, 1, -1, 2, -2, 7, -7, 3, info.max, info.min], dtype)
    return np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.75,
                     7.0, 1e-3, 30.0, -100.0], dtype)


def ops_for(dtype, arity):
    """Ops whose template exists and whose NumPy reference keeps the IR's typing."""
    sample = special_values(dtype)[:2]
    chosen = []
    for name, opdef in sorted(ops.REGISTRY.items()):
        if opdef.kind != ops.ELEMENTWISE or opdef.arity != arity or name in SKIP:
            continue
        if opdef.template(dtype) is None:
            continue
        try:
            with np.errstate(all="ignore"):
                (result,) = ops.evaluate(name, [sample] * arity, ())
        except TypeError:
            continue
        expected = np.bool_ if opdef.predicate else dtype
        if result.dtype == expected:
            chosen.append(name)
    return chosen


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_ops(dtype):
    names = ops_for(dtype, 1)
    values = special_values(dtype)
    node = fused_node([(values.shape, dtype)],
                      lambda emit, x: [emit(name, x) for name in names])
    check_kernel(node, values, labels=names)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_binary_ops_all_pairs(dtype):
    # x[:, None] against y[None, :] also exercises broadcast indexing on both sides.
    names = ops_for(dtype, 2)
    values = special_values(dtype)
    n = len(values)
    node = fused_node([((n, 1), dtype), ((1, n), dtype)],
                      lambda emit, x, y: [emit(name, x, y) for name in names])
    check_kernel(node, values[:, None], values[None, :], labels=names)


def test_where_cast_and_full():
    dtype = np.float32
    values = special_values(dtype)
    targets = [np.float64, np.int32, np.bool_, np.float32]

    def body(emit, x, y, c):
        outs = [emit("where", c, x, y), emit("full", shape=(15,), dtype=np.dtype(dtype),
                                              value=0.1)]
        outs += [emit("cast", x, dtype=np.dtype(t)) for t in targets]
        outs += [emit("cast", c, dtype=np.dtype(np.float32))]
        return outs

    node = fused_node([((15,), dtype), ((15,), dtype), ((15,), np.bool_)], body)
    finite = np.where(np.isfinite(values), values, 0).astype(dtype)  # NaN -> int is undefined
    cond = np.arange(15) % 3 == 0
    check_kernel(node, finite, values[::-1].copy(), cond)


def test_cast_float_to_bool_makes_nan_true():
    values = special_values(np.float64)
    node = fused_node([(values.shape, np.float64)],
                      lambda emit, x: [emit("cast", x, dtype=np.dtype(np.bool_))])
    (got,) = check_kernel(node, values)(values, parallel=False)
    assert got[0] and not got[3] and not got[4]


@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_cast_float_to_unsigned_wraps_negatives_as_numpy(source):
    # NumPy's own loop over a large array (its small-array path differs beyond int32's range)
    values = np.array([-2.5, -300.7, -1e9, -3e9, 1e10, 2e19, -1e19, np.nan, np.inf, -np.inf,
                       0.0, -0.0, 255.9, 256.0, 65535.5, 65536.0, 4294967295.0, 1e19], source)
    _assert_casts_as_numpy(np.tile(values, 200), (np.uint8, np.uint16, np.uint32, np.uint64))


def _assert_casts_as_numpy(values, targets):
    """One kernel casting ``values`` to each target gives what NumPy's ``astype`` gives."""
    targets = [np.dtype(t) for t in targets]
    node = fused_node([(values.shape, values.dtype)],
                      lambda emit, x: [emit("cast", x, dtype=t) for t in targets])
    kernel = build_kernel(node)
    with np.errstate(invalid="ignore"):
        got = kernel(values, parallel=False)
        for t, g in zip(targets, got, strict=True):
            np.testing.assert_array_equal(g, values.astype(t), err_msg=str(t))


@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_cast_float_to_small_signed_wraps_as_numpy(source):
    # 200.0 -> -56 in int8 through int32, as NumPy's loops do; LLVM's own conversion
    # saturated in vector lanes (127) and wrapped in the scalar tail
    values = np.array([200.0, -200.0, 40000.0, -40000.5, 3.1e9, -1e10, np.nan, np.inf,
                       -np.inf, 127.9, -128.9, 32767.5, 1.5, -0.0], source)
    _assert_casts_as_numpy(np.tile(values, 200), (np.int8, np.int16))


@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_cast_float_to_signed_gives_numpys_values_out_of_range(source):
    values = np.array([3e9, -3e9, 1e19, -1e19, 1e30, np.nan, np.inf, -np.inf, 2.5, -2.5,
                       2147483647.0, -2147483648.0, 9.2e18, -9.3e18], source)
    _assert_casts_as_numpy(np.tile(values, 200), (np.int8, np.int16, np.int32, np.int64))


@pytest.mark.parametrize("chain", [(np.int64, np.float64, np.int8),
                                   (np.int64, np.float64, np.int32),
                                   (np.uint64, np.float64, np.uint16),
                                   (np.int32, np.float32, np.int16),
                                   (np.float16, np.float64, np.uint32)],
                         ids=lambda chain: "_".join(np.dtype(dt).name for dt in chain))
def test_a_chain_of_casts_through_a_float_gives_numpys_values(chain):
    """LLVM may fold int -> float -> int into a truncation of the integer, whose result
    differs from NumPy's beyond the target's range."""
    source, middle, target = chain
    if np.dtype(source).kind == "f":
        values = np.array([-np.inf, np.nan, 5.0, 1.0, -3.0, 6e4], source)
    else:
        values = np.array([2**40 + 6, 2**62 + 7, 300, 5, 70000, 2**31 + 9], np.int64)
        values = np.concatenate([values, -values]) if np.dtype(source).kind == "i" else values
        values = values.astype(source)
    body = lambda a: a.astype(middle).astype(target)  # noqa: E731
    compiled, x = fusejit.compile(body), np.tile(values, 50)
    with np.errstate(invalid="ignore"):
        for _ in range(2):
            got, want = compiled(x), body(x)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
