"""Kernels write their output over an input that dies there (``plan_memory``'s ``in_place``):
which kernels do (elementwise ones, and the last pass of row-persistent ones), that they
compute what eager NumPy does, and that the memory they take over is nobody else's."""
import numpy as np
import pytest

import fusejit
from bench.models.layernorm import layer_norm
from bench.models.softmax import softmax
from fusejit.codegen.numba_cpu import generate_source
from fusejit.runtime.arena import OUT_MIN_BYTES
from tests.oracle import assert_same

RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 128)).astype(np.float32)
W1 = (0.1 * RNG.standard_normal((128, 512))).astype(np.float32)   # x @ w1: 128 KiB
B1 = RNG.standard_normal(512).astype(np.float32)
W2 = (0.1 * RNG.standard_normal((512, 128))).astype(np.float32)
B2 = RNG.standard_normal(128).astype(np.float32)


def mlp(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


def run(fn, *args):
    """The compiled function after a trace and two replays checked against eager NumPy, and its
    program."""
    compiled = fusejit.compile(fn)
    for _ in range(3):
        assert_same(fn(*args), compiled(*args))
    return compiled, compiled.entry_for(*args).paths[0]


def in_place(path) -> list[dict]:
    return [kernel.in_place for kernel in path.program.kernels]


def test_hidden_epilogue_writes_over_the_product():
    _, path = run(mlp, X, W1, B1, W2, B2)
    assert in_place(path) == [{0: 0}, {}]     # the second one's result is the caller's
    source = path.program.kernels[0].source
    assert "out0" not in source.split("def kernel_serial", 1)[1].split("\n")[0]
    assert "r_in0[i1] = " in source and "# out0 is written in place over in0" in source
    donors = path.pipeline.stats["plan_memory"]["in_place"]
    assert len(donors) == 1 and all(out.type == donor.type for out, donor in donors.items())


def test_hidden_result_takes_the_products_arena_offset():
    assert X.shape[0] * W1.shape[1] * 4 >= OUT_MIN_BYTES   # the product may live in the arena
    _, path = run(mlp, X, W1, B1, W2, B2)
    program = path.program
    product, relu = (program.steps[i] for i in (0, 1))
    assert (product.node.op, relu.node.op) == ("matmul", "fused")
    assert program.arena.layouts[0][0][0] == program.arena.layouts[1][0][0]


def test_result_the_caller_sees_is_a_new_array_each_call():
    # never written over a product, which might live in the arena
    compiled, path = run(mlp, X, W1, B1, W2, B2)
    assert len(path.program.steps) - 1 not in path.program.arena.layouts
    assert in_place(path)[-1] == {}
    first = compiled(X, W1, B1, W2, B2)
    kept = first.copy()
    second = compiled(-X, W1, B1, W2, B2)
    assert not np.shares_memory(first, second)
    assert_same(kept, first)
    assert_same(mlp(-X, W1, B1, W2, B2), second)


def test_peak_counts_a_buffer_taken_over_once():
    _, path = run(mlp, X, W1, B1, W2, B2)
    stats = path.pipeline.stats["plan_memory"]
    hidden, out = 64 * 512 * 4, 64 * 128 * 4
    assert stats["peak_bytes"] == hidden + out     # the second product, the relu it reads
    assert stats["eager_peak_bytes"] == 2 * hidden  # x @ w1, then x @ w1 + b1


def test_an_input_read_later_is_not_written_over():
    def body(x, w):
        h = x @ w
        return np.exp(h) @ w.T + h @ w.T

    _, path = run(body, X, W1)
    assert in_place(path) == [{}, {}]   # exp keeps h; the sum of the products is the result

    def hidden(x, w):
        h = x @ w
        return (np.exp(h) @ w.T + h @ w.T) @ w

    _, path = run(hidden, X, W1)
    assert in_place(path) == [{}, {0: 0}]


def test_arguments_are_never_written_over():
    def body(x, y):
        return np.exp(x) * y

    _, path = run(body, X, X)
    assert in_place(path) == [{}]


def test_broadcast_shape_or_dtype_change_is_not_in_place():
    v = RNG.standard_normal((128, 1)).astype(np.float32)

    def broadcast(x, v, y):
        return (x @ v) * y                 # the (64, 1) product is broadcast to (64, 128)

    def compare(x, w):
        return (x @ w) > 0                 # float32 product, bool result

    _, path = run(broadcast, X, v, X)
    assert in_place(path) == [{}]
    _, path = run(compare, X, W1)
    assert in_place(path) == [{}]


def test_a_product_read_also_through_a_view_is_not_written_over():
    square = RNG.standard_normal((128, 128)).astype(np.float32)

    def body(x, w):
        h = x @ w
        return h * 2 + h[::-1]

    _, path = run(body, X, square)
    assert all(not pairs for pairs in in_place(path))


def test_row_kernels_store_their_last_pass_over_the_product():
    def attention_like(x, w):
        return softmax(x @ w) @ w.T

    def normalized(x, w, g, b):
        return layer_norm(x @ w, g, b) @ w.T

    _, path = run(attention_like, X, W1)
    assert in_place(path) == [{0: 0}]
    assert "# out0 is written in place over in0" in path.program.kernels[0].source
    _, path = run(normalized, X, W1, B1, B1[::-1].copy())
    assert in_place(path) == [{0: 0}]


def test_row_kernel_output_stored_before_the_last_pass_keeps_its_own_buffer():
    def scaled_and_softmax(x, w):
        t = (x @ w) * 2                     # stored in the first pass, while rows are read
        return softmax(t) @ w.T + t @ w.T

    _, path = run(scaled_and_softmax, X, W1)
    step = next(s for s in path.program.steps if s.node.op == "fused")   # the row kernel
    kernel, outputs = path.program.kernels[0], step.node.attr["body"].outputs
    ((written, donor),) = kernel.in_place.items()
    assert len(outputs) == 2 and kernel.plan.passes == 3
    assert kernel.plan.depth[outputs[written]] == 2        # the softmax: the last pass
    assert kernel.plan.depth[outputs[1 - written]] == 0    # t, stored in the first
    with pytest.raises(ValueError, match="may not be stored in place"):
        generate_source(step.node.attr["body"], ((1 - written, donor),))


def test_reduction_results_the_caller_sees_keep_their_own_buffers():
    _, path = run(lambda x, w: softmax(x @ w), X, W1)
    assert in_place(path) == [{}]


def test_kernel_called_alone_returns_its_input_array():
    _, path = run(mlp, X, W1, B1, W2, B2)
    kernel = path.program.kernels[0]
    h = X @ W1
    expected = np.maximum(h + B1, 0)
    (result,) = kernel(h, B1)
    assert result is h
    assert_same(expected, result)
    h = X @ W1
    (result,) = kernel.fast_call(h, B1, out=(np.empty_like(h),))
    assert result is h
    assert_same(expected, result)


def test_explain_counts_the_outputs_written_in_place():
    compiled, _ = run(mlp, X, W1, B1, W2, B2)
    text = str(compiled.explain(X, W1, B1, W2, B2))
    assert "1 kernel output(s) written over an input that dies there" in text


def test_explain_does_not_count_an_argument_written_by_item_assignment():
    # A key/value cache updated in place (``cache[t] = ...``) is the caller's array, in the
    # compiled program and in NumPy: explain counted it as a new 8 MiB buffer in both.
    def append(cache, x, t):
        cache[t] = x * 2
        return cache[: t + 1].sum(axis=0)

    cache = np.zeros((1024, 1024))
    compiled = fusejit.compile(append)
    for t in range(3):
        eager_cache = cache.copy()
        assert_same(append(eager_cache, X[0, :8].repeat(128), np.int64(t)),
                    compiled(cache, X[0, :8].repeat(128), np.int64(t)))
        assert_same(eager_cache, cache)
    memory = compiled.explain(cache, X[0, :8].repeat(128), np.int64(3)).memory
    assert 0 < memory["peak_bytes"] < 64 * 1024 and 0 < memory["eager_peak_bytes"] < 64 * 1024


def test_kernels_that_may_run_twice_keep_their_inputs():
    # a sin/cos kernel runs again with libm when an argument is beyond vecmath's range
    def body(x, w):
        return np.sin(x @ w) * 2

    x, w = X.astype(np.float64), W1.astype(np.float64)
    _, path = run(body, x, w)
    assert in_place(path) == [{}]
    x[0, 0] = 1e22
    assert_same(body(x, w), run(body, x, w)[0](x, w))


def test_small_product_left_to_numpy_is_written_over_in_its_own_array():
    x = X[:4]
    assert x.shape[0] * W1.shape[1] * 4 < OUT_MIN_BYTES
    compiled, path = run(mlp, x, W1, B1, W2, B2)
    assert in_place(path) == [{0: 0}, {}]
    relu_step = 1
    assert path.program.steps[relu_step].node.op == "fused"
    assert relu_step not in (path.program.arena.layouts if path.program.arena else {})
    first = compiled(x, W1, B1, W2, B2)
    kept = first.copy()
    assert_same(mlp(-x, W1, B1, W2, B2), compiled(-x, W1, B1, W2, B2))
    assert_same(kept, first)


def _scores_normalized(q, k):
    a = q @ k
    a = a - a.max(-1, keepdims=True)
    return a / a.sum(-1, keepdims=True)


def _column_spread(a):
    x = np.maximum(a, -a)                        # dies in the column kernel below
    return np.std(x, axis=1, keepdims=True)      # axis 1 of (3, 1, 4): the last axis is kept


@pytest.mark.parametrize("fn", [softmax, layer_norm, _scores_normalized, _column_spread],
                         ids=["softmax", "layer_norm", "scores", "columns"])
def test_rows_of_one_element_store_their_outer_values_in_place(fn):
    # A reduced axis of length 1 (attention over one key): the values after the reduction are
    # outer values, stored once per row (or column) after the reads, over the dying input.
    rng = np.random.default_rng(3)
    args = {softmax: (rng.standard_normal((6, 1)).astype(np.float32),),
            layer_norm: (rng.standard_normal((6, 1)).astype(np.float32), np.ones(1, np.float32),
                         np.zeros(1, np.float32)),
            _scores_normalized: (rng.random((3, 4)), rng.random((4, 1))),
            _column_spread: (rng.standard_normal((3, 1, 4)).astype(np.float32),)}[fn]
    compiled = fusejit.compile(fn)
    for _ in range(2):
        assert_same(fn(*args), compiled(*args))
    assert compiled.cache_info()["hits"] == 1
