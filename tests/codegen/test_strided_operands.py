"""Kernels on strided NumPy views: the row variant (unit-stride rows retyped C-contiguous) runs
for split/sliced operands and vectorizes; the strided variant takes over for transposed,
stepped and broadcast operands; column reductions loop rows outside. Results equal NumPy."""
import re

import numpy as np
import pytest
from codegen_helpers import fused_node, reference

import fusejit
from fusejit.codegen import build_kernel

F32 = np.float32


def check_kernel(node, *arrays, rtol):
    """Against the reference interpreter; an absolute floor for values that cancel to ~0."""
    kernel = build_kernel(node)
    for got, want in zip(kernel(*arrays, parallel=False), reference(node, *arrays),
                         strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    return kernel


def _gates(emit, f, c, i, g):
    """An LSTM cell's cell update: sigmoid(f) * c + sigmoid(i) * tanh(g)."""
    sig_f = emit("sigmoid", f)
    sig_i = emit("sigmoid", i)
    return [emit("add", emit("mul", sig_f, c), emit("mul", sig_i, emit("tanh", g)))]


def _gate_node():
    return fused_node([((32, 128), F32)] * 4, _gates)


def _split_operands(seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((32, 512)).astype(F32)
    i, f, g, _ = np.split(z, 4, axis=-1)
    return f, rng.standard_normal((32, 128)).astype(F32), i, g


def test_split_operands_take_the_row_variant():
    node = _gate_node()
    operands = _split_operands()
    assert not operands[0].flags.c_contiguous
    kernel = check_kernel(node, *operands, rtol=1e-5)
    out = np.empty((32, 128), F32)
    assert kernel.module.kernel_serial(*kernel.sizes, *operands, out) is True
    np.testing.assert_array_equal(kernel(*operands, parallel=True)[0],
                                  kernel(*operands, parallel=False)[0])


@pytest.mark.parametrize("shape", [(1000,), (6, 7, 300)])
def test_parallel_row_variant_matches_serial(shape):
    node = fused_node([(shape, F32)], lambda emit, x: [emit("add", emit("mul", x, x), x),
                                                       emit("sum", x, axes=(len(shape) - 1,),
                                                            keepdims=True)], kind="reduce")
    x = np.random.default_rng(5).standard_normal((*shape[:-1], shape[-1] + 4)).astype(F32)
    x = x[..., 2:-2]
    serial, parallel = build_kernel(node)(x, parallel=False), build_kernel(node)(x, parallel=True)
    for a, b in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(serial[0], x * x + x, rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda x: x.T.copy().T,                          # transposed (F-order)
    lambda x: np.repeat(x, 2, axis=1)[:, ::2],       # stepped last axis
    lambda x: np.broadcast_to(x[:, :1], x.shape),    # zero stride
], ids=["transposed", "stepped", "broadcast"])
def test_non_unit_inner_stride_falls_back_to_the_strided_variant(make):
    node = _gate_node()
    f, c, i, g = _split_operands(1)
    odd = make(f)
    assert odd.strides[-1] != odd.itemsize
    kernel = check_kernel(node, odd, c, i, g, rtol=1e-5)
    out = np.empty((32, 128), F32)
    assert kernel.module.kernel_serial(*kernel.sizes, odd, c, i, g, out) is False


def test_row_variant_of_a_split_fed_kernel_vectorizes():
    node = _gate_node()
    operands = _split_operands()
    kernel = check_kernel(node, *operands, rtol=1e-5)
    # A fresh, uncached compile: an overload loaded from Numba's disk cache has no assembly.
    namespace = {}
    exec(compile(kernel.source.replace("cache=True", "cache=False"), "<kernel>", "exec"),
         namespace)
    dispatcher = namespace["kernel_serial"]
    assert dispatcher(*kernel.sizes, *operands, np.empty((32, 128), F32)) is True
    asm = dispatcher.inspect_asm(dispatcher.signatures[0])
    packed = re.findall(r"\bv\w+ps\s+[^\n]*%[yz]mm", asm)
    assert len(packed) > 50, "inner loop did not vectorize"


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("op", ["sum", "reduce_max", "prod", "any"])
def test_column_reduction_on_strided_input(op, keepdims):
    dtype = np.bool_ if op == "any" else F32

    def body(emit, x, y):
        value = emit("mul", x, y) if dtype != np.bool_ else emit("and", x, y)
        return [value, emit(op, value, axes=(0,), keepdims=keepdims)]

    node = fused_node([((64, 48), dtype), ((64, 48), dtype)], body, kind="reduce")
    rng = np.random.default_rng(2)
    base = rng.standard_normal((64, 96))
    x, y = (base[:, :48] > 0, base[:, 48:] > 0.5) if dtype == np.bool_ else (
        base[:, :48].astype(F32), (base[:, 48:] * 0.5 + 1).astype(F32))
    kernel = check_kernel(node, x, y, rtol=1e-5)
    assert kernel.plan.columns and "# loops: | i0 i1" in kernel.source


def test_column_sum_over_a_middle_axis_is_parallel_over_the_leading_one():
    node = fused_node([((4, 32, 16), F32)],
                      lambda emit, x: [emit("sum", x, axes=(1,), keepdims=False)], kind="reduce")
    x = np.random.default_rng(3).standard_normal((4, 32, 32)).astype(F32)[:, :, 8:24]
    kernel = check_kernel(node, x, rtol=1e-6)
    assert kernel.plan.columns and kernel.plan.has_parallel_loop
    np.testing.assert_allclose(kernel(x, parallel=True)[0], x.sum(axis=1), rtol=1e-5, atol=1e-5)


def lstm_gates(z, c):
    i, f, g, o = np.split(z, 4, axis=-1)
    c = 1 / (1 + np.exp(-f)) * c + 1 / (1 + np.exp(-i)) * np.tanh(g)
    return 1 / (1 + np.exp(-o)) * np.tanh(c), c


def sliced_and_transposed(x, y):
    return x[:, 1:-1] * 2 + y.T[1:-1].T, (x[::2] + 1).sum(axis=0)


@pytest.mark.parametrize("fn, shapes", [
    (lstm_gates, [(8, 64), (8, 16)]),
    (sliced_and_transposed, [(6, 10), (6, 10)]),
])
def test_compiled_models_on_views_equal_numpy(fn, shapes):
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    compiled = fusejit.compile(fn)
    compiled(*args)
    for got, want in zip(compiled(*args), fn(*args), strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    kernels = compiled.explain(*args).kernels
    assert len(kernels) == (1 if fn is lstm_gates else 2)
