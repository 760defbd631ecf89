"""The compile contract: replay without the Python body, retrace per signature, reuse kernels."""
import numpy as np
import pytest

import fusejit
from fusejit.passes import fusion_rules
from tests.oracle import assert_same

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_second_call_does_not_run_the_python_body():
    calls = []

    @fusejit.compile
    def scale_shift(x, y):
        calls.append(1)
        return x * 2.0 + y

    x, y = f32(4, 8), f32(8)
    first = scale_shift(x, y)
    second = scale_shift(x, y)
    assert len(calls) == 1
    assert_same(x * 2.0 + y, first)
    assert_same(x * 2.0 + y, second)
    assert scale_shift.cache_info()["hits"] == 1


def test_new_shape_traces_again_and_compiles_no_new_kernel():
    @fusejit.compile
    def gelu_like(x, b):
        h = x + b
        return 0.5 * h * (1.0 + np.tanh(0.79788456 * (h + 0.044715 * h * h * h)))

    gelu_like(f32(16, 32), f32(32))
    compiled_before = gelu_like.cache_info()["kernels_compiled"]
    x, b = f32(64, 48), f32(48)
    assert_same(0.5 * (x + b) * (1.0 + np.tanh(0.79788456 * ((x + b) + 0.044715 * (x + b)
                                                            * (x + b) * (x + b)))),
                gelu_like(x, b))
    info = gelu_like.cache_info()
    assert info["traces"] == 2
    assert info["kernels_compiled"] == compiled_before
    assert info["kernels_reused"] >= 1


def test_new_length_of_a_reduced_axis_compiles_no_new_kernel():
    # A mean's divisor is the reduced length: it is the kernel's argument, not its source
    # text. A power of two (exactly a multiplication) and other lengths share one kernel.
    def normalize(x):
        centered = x - x.mean(axis=-1, keepdims=True)
        return centered / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5), x.std(axis=0)

    compiled = fusejit.compile(normalize)
    compiled(f32(8, 16))
    compiled_before = compiled.cache_info()["kernels_compiled"]
    for shape in ((8, 20), (8, 16 * 3), (5, 64), (3, 7)):
        x = f32(*shape)
        for got, want in zip(compiled(x), normalize(x), strict=True):
            assert_same(want, got)
    info = compiled.cache_info()
    assert info["traces"] == 5
    assert info["kernels_compiled"] == compiled_before


def test_lengths_the_body_reads_off_shapes_are_kernel_arguments():
    # A layernorm and an unbiased variance written by hand divide by x.shape[-1], len(x) and
    # n - 1: Python ints, like a mean's count, must not be kernel source text either.
    def by_hand(x, g):
        n = x.shape[-1]
        centered = x - x.sum(axis=-1, keepdims=True) / n
        spread = (centered * centered).sum(axis=-1, keepdims=True) / (n - 1)
        rows = x.sum(axis=0) / len(x)
        return centered / np.sqrt(spread + 1e-5) * g, rows * x.size

    compiled = fusejit.compile(by_hand)
    compiled(f32(8, 16), f32(16))
    compiled_before = compiled.cache_info()["kernels_compiled"]
    for shape in ((8, 20), (5, 64), (3, 7)):
        x, g = f32(*shape), f32(shape[-1])
        for got, want in zip(compiled(x, g), by_hand(x, g), strict=True):
            assert_same(want, got)
    info = compiled.cache_info()
    assert info["traces"] == 4
    assert info["kernels_compiled"] == compiled_before


def test_a_literal_equal_to_a_length_is_still_that_literal():
    # 8 is both x.shape[0] and a literal here; both are arguments of value 8 in this trace,
    # and another shape traces again, so the literal is never read as the new length.
    @fusejit.compile
    def scaled(x):
        return x * 8 + x.sum(axis=0) / x.shape[0], x // 8

    for shape in ((8, 4), (16, 4)):
        x = f32(*shape)
        for got, want in zip(scaled(x), (x * 8 + x.sum(axis=0) / x.shape[0], x // 8),
                             strict=True):
            assert_same(want, got)


def test_python_float_argument_is_traced_not_static():
    @fusejit.compile
    def sgd(w, g, lr):
        return w - lr * g

    w, g = f32(8), f32(8)
    for lr in (0.1, 0.01, 0.5):
        assert_same(w - lr * g, sgd(w, g, lr))
    assert sgd.cache_info()["traces"] == 1


def test_comparing_python_float_arguments_gives_a_python_bool():
    def flags(x, lr):
        return lr > 0.01, lr == lr, 0.5 <= lr, x * (lr < 1.0)  # noqa: SIM300 (reflected)

    compiled, x = fusejit.compile(flags), f32(4)
    for lr in (0.1, 0.001, 2.0, float("nan")):
        want, got = flags(x, lr), compiled(x, lr)
        assert [type(v) for v in got[:3]] == [bool] * 3 and got[:3] == want[:3]
        assert_same(want[3], got[3])
    assert compiled.cache_info()["traces"] == 1


@pytest.mark.parametrize("store", [lambda a, v: a.__setitem__(0, v),
                                   lambda a, v: a.__setitem__(slice(None), v)],
                         ids=["item", "slice"])
def test_a_python_float_argument_stored_into_an_int_array_converts_as_numpy_does(store):
    def fill(a, v):
        store(a, v)
        return a * 2

    compiled = fusejit.compile(fill)
    assert_same(fill(np.zeros(3, np.int8), 3.5), compiled(np.zeros(3, np.int8), 3.5))
    for value in (-7.9, 100.0, float("nan"), 200.0, float("inf")):
        try:
            want = fill(np.zeros(3, np.int8), value)
        except (ValueError, OverflowError) as error:      # NaN, out of int8's range
            with pytest.raises(type(error), match=str(error)):
                compiled(np.zeros(3, np.int8), value)
        else:
            assert_same(want, compiled(np.zeros(3, np.int8), value))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["traces"] == 1 and info["hits"] == 2


def test_python_int_argument_is_static_and_part_of_the_key():
    @fusejit.compile
    def power_sum(x, n):
        return sum(x ** k for k in range(n))

    x = f32(5)
    assert_same(power_sum.fn(x, 2), power_sum(x, 2))
    assert_same(power_sum.fn(x, 3), power_sum(x, 3))
    assert power_sum.cache_info()["traces"] == 2


def test_result_types_follow_numpy():
    @fusejit.compile
    def stats(x):
        return x.mean(), x.sum(axis=0), np.float32(2) * x.max(keepdims=True), (x.shape[0],)

    x = f32(6, 3)
    for _ in range(2):
        result = stats(x)
        assert_same(stats.fn(x), result)
        assert isinstance(result[0], np.float32)


def test_captured_global_is_read_by_reference_on_every_call():
    x = f32(4)
    assert_same(x * CAPTURED, uses_global(x))
    CAPTURED[:] = 3.0                       # an in-place update outside is seen
    assert_same(x * CAPTURED, uses_global(x))
    assert uses_global.cache_info()["traces"] == 1


CAPTURED = np.ones(4, np.float32)
REBOUND = np.ones(4)


def test_a_global_array_rebound_to_a_number_and_back_is_read_again():
    # Replaying with the number raised AttributeError ('float' object has no attribute
    # 'shape') and the signature ran eagerly from then on. A trace with the number would
    # freeze it with no guard: the calls with a number run eagerly.
    global REBOUND

    def add_global(x):
        return x * 2.0 + REBOUND

    compiled, x = fusejit.compile(add_global), np.arange(4.0)
    values = (np.ones(4), np.ones(4), 4.0, np.ones(4), [1.0, 2.0, 3.0, 4.0], np.float32(3),
              np.full(4, 5.0, np.float32), 2.0, np.full(4, 7.0, np.float32), np.ones(4))
    for value in values:
        REBOUND = value
        for _ in range(2):
            assert_same(add_global(x), compiled(x))
    assert compiled.cache_info()["eager_signatures"] == 0


@fusejit.compile
def uses_global(x):
    return x * CAPTURED


def test_closure_and_bound_method_arrays_are_captured():
    class Layer:
        def __init__(self):
            self.w = f32(3, 3)

        @fusejit.compile
        def __call__(self, x):
            return np.maximum(x @ self.w, 0)

    layer, x = Layer(), f32(2, 3)
    assert_same(np.maximum(x @ layer.w, 0), layer(x))
    layer.w = f32(3, 3)                     # rebinding the attribute is seen too
    assert_same(np.maximum(x @ layer.w, 0), layer(x))


def test_branching_on_a_traced_value_becomes_a_guarded_path():
    @fusejit.compile
    def branchy(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    for sign in (1, -1, 1, -1):
        x = sign * np.abs(f32(5)) + sign
        assert_same(branchy.fn(x), branchy(x))
    info = branchy.cache_info()
    assert info["traces"] == 2 and info["paths"] == 2 and info["eager_signatures"] == 0
    assert "bool() == True" in str(branchy.explain(x))


def test_unmapped_numpy_call_is_a_host_op_between_kernels():
    @fusejit.compile
    def solve(a, b):
        return np.linalg.solve(a * 2, b + 1) * 3

    a, b = f32(3, 3) + 3 * np.eye(3, dtype=np.float32), f32(3)
    for _ in range(2):
        assert_same(solve.fn(a, b), solve(a, b))
    explanation = solve.explain(a, b)
    assert [h.op for h in explanation.host_ops] == ["np.linalg.solve"]
    assert len(explanation.kernels) == 3
    assert "host np.linalg.solve" in solve.ir(a, b, stage="optimized")


def test_float32_sin_runs_numpys_own_loop_between_kernels(monkeypatch):
    # where NumPy dispatches its AVX-512 loops (elsewhere sin fuses: test_fuse)
    monkeypatch.setattr(fusion_rules, "SIMD_IN_NUMPY", fusion_rules.NUMPY_AVX512_LOOPS)

    @fusejit.compile(target="cpu")
    def wave(x):
        return np.sin(x * 2 + 1) * 3

    x = f32(64, 32)
    for _ in range(2):
        np.testing.assert_array_equal(wave(x), wave.fn(x))   # the same ufunc: bit for bit
    explanation = wave.explain(x)
    assert len(explanation.kernels) == 2
    assert "NumPy's SIMD loop for sin on float32" in str(explanation)


def test_numpy_errors_are_numpys_and_the_function_keeps_working():
    @fusejit.compile
    def add(x, y):
        return x + y

    assert_same(f32(3) * 0, add(np.zeros(3, np.float32), np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        add(f32(3), f32(4))
    x, y = f32(3), f32(3)
    assert_same(x + y, add(x, y))


def test_object_arrays_run_eagerly():
    @fusejit.compile
    def double(x):
        return x * 2

    x = np.array([1, "a"], dtype=object)
    assert list(double(x)) == [2, "aa"]
    assert double.cache_info()["eager_calls"] == 1


def test_explain_lists_kernels_with_their_source_ops():
    @fusejit.compile
    def mlp(x, w, b):
        return np.maximum(x @ w + b, 0)

    x, w, b = f32(4, 8), f32(8, 16), f32(16)
    mlp(x, w, b)
    explanation = mlp.explain(x, w, b)
    assert len(explanation.blas_calls) == 1
    assert len(explanation.kernels) == 1
    assert [op for op, _ in explanation.kernels[0].source_ops] == ["add", "max"]
    text = str(explanation)
    assert "BLAS calls" in text and "test_compile.py" in text


def test_explain_without_arguments_describes_the_latest_signature():
    @fusejit.compile
    def scale(x):
        return np.exp(x) * 2

    with pytest.raises(TypeError, match="has not been called yet"):
        scale.explain()
    scale(f32(4))
    scale(np.ones((2, 3)))
    text = str(scale.explain())
    assert "scale(x: f64[2,3])" in text and "exp" in text


def test_explain_of_a_function_without_parameters_traces_it():
    @fusejit.compile
    def ramp():
        return np.arange(6.0) * 2

    assert "ramp()" in str(ramp.explain())
    assert ramp.cache_info()["signatures"] == 1


def test_compile_seconds_count_the_first_replay_where_the_kernels_are_compiled():
    def shifted(x):
        return np.tanh(x * 3 + 1).mean(0)

    compiled = fusejit.compile(shifted)
    compiled(f32(8, 16))
    traced = compiled.cache_info()["compile_seconds"]
    compiled(f32(8, 16))   # the program's first run: Numba compiles or loads its kernels
    first_run = compiled.cache_info()["compile_seconds"]
    compiled(f32(8, 16))
    assert first_run > traced
    assert compiled.cache_info()["compile_seconds"] == first_run
