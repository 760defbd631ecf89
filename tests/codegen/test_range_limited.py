"""sin and cos in elementwise CPU kernels: vecmath's vectorizable versions below their range
bound, and the whole kernel again with libm when an argument is beyond it."""
import numpy as np
import pytest
from codegen_helpers import check_kernel, fused_node

from fusejit.codegen.vecmath import VECMATH_SAFE_RANGE

F64 = np.float64
BOUND = VECMATH_SAFE_RANGE[("sin", "float64")]


def sin_times_cos(shape, dtype=F64):
    def body(emit, x, y):
        return [emit("add", emit("mul", emit("sin", x), y), emit("cos", emit("mul", x, x)))]
    return fused_node([(shape, dtype), (shape[-1:], dtype)], body, name="k0_sin_cos")


def inputs(rng, shape, scale=10.0):
    return rng.standard_normal(shape) * scale, rng.standard_normal(shape[-1:])


def ulps(got, want):
    spacing = np.spacing(np.abs(want).astype(F64))
    return np.max(np.abs(got - want) / np.maximum(spacing, np.finfo(F64).tiny))


def sin_and_cos(size):
    return fused_node([((size,), F64)], lambda emit, x: [emit("sin", x), emit("cos", x)])


@pytest.mark.parametrize("parallel", [False, True])
def test_within_range_runs_the_vector_versions(parallel):
    x, y = inputs(np.random.default_rng(0), (16, 33))
    kernel = check_kernel(sin_times_cos((16, 33)), x, y)
    assert "sin_f64(" in kernel.source and "cos_f64(" in kernel.source
    assert "nbig += (abs(x0) >= " in kernel.source
    x = np.random.default_rng(3).standard_normal(4096) * 100
    sin_got, cos_got = check_kernel(sin_and_cos(4096), x)(x, parallel=parallel)
    assert ulps(sin_got, np.sin(x)) <= 1 and ulps(cos_got, np.cos(x)) <= 1


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("big", [BOUND, -BOUND * 3.5, 1e22, 1e300, np.inf, -np.inf])
def test_an_argument_beyond_the_bound_reruns_with_libm(big, parallel):
    x, y = inputs(np.random.default_rng(1), (8, 9))
    x[3, 4], x[0, 0], x[7, 8] = big, np.nan, -0.0
    x[5, 5] = 5e-324                                  # a subnormal
    kernel = check_kernel(sin_times_cos((8, 9)), x, y)
    with np.errstate(all="ignore"):
        (got,) = kernel(x, y, parallel=parallel)
        want = np.sin(x) * y + np.cos(x * x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-15, atol=0)


def test_just_below_the_bound_stays_accurate():
    x = np.array([BOUND - 1.0, np.nextafter(BOUND, 0), 1e7 + 0.5, -12345678.9, np.pi / 2 * 1e6])
    kernel = check_kernel(sin_and_cos(5), x)
    sin_got, cos_got = kernel(x)
    assert ulps(sin_got, np.sin(x)) <= 1 and ulps(cos_got, np.cos(x)) <= 1


def test_reduction_kernels_keep_libm():
    node = fused_node([((4, 6), F64)], lambda emit, x: [
        emit("sum", emit("sin", x), axes=(1,), keepdims=False)], kind="reduce")
    x = np.random.default_rng(2).standard_normal((4, 6))
    kernel = check_kernel(node, x)
    assert "sin_f64(" not in kernel.source and "nbig" not in kernel.source
