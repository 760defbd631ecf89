"""fuse: kernel counts and refusals on hand-built graphs; fused graphs verify and interpret
to the same values as the unfused ones."""
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusejit.ir import Graph, Lit, Loc, Node, TensorType, Var, interpret, ops, verify
from fusejit.passes import fusion_rules
from fusejit.passes.fuse import MAX_KERNEL_OPS, SIZE_LIMIT, fuse, kernel_cost
from fusejit.passes.fusion_rules import FULL_EXTENT, NUMPY_AVX512_LOOPS, numpy_simd_loops
from tests.strategies import graphs, inputs_for

F32 = np.dtype(np.float32)


class Builder:
    """Records nodes with inferred types, each at its own line of ``model.py``."""

    def __init__(self):
        self.inputs, self.nodes = [], []

    def arg(self, shape, dtype=F32, name=None):
        var = Var(TensorType(shape, dtype), name or f"a{len(self.inputs)}")
        self.inputs.append(var)
        return var

    def __call__(self, op, *operands, **attrs):
        out_types = ops.infer_types(op, [v.type for v in operands], attrs)
        outs = [Var(t) for t in out_types]
        loc = Loc("model.py", len(self.nodes) + 1, "model/block")
        self.nodes.append(Node(op, operands, outs, attrs, loc))
        return outs[0] if len(outs) == 1 else outs

    def graph(self, *outputs):
        return Graph("model", self.inputs, self.nodes, outputs)


def lit(value):
    return Lit(value, F32)


def fused_nodes(graph):
    return [n for n in graph.nodes if n.op == "fused"]


def check_same(before, after, *args):
    verify(after)
    for got, want in zip(interpret(after, *args), interpret(before, *args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def test_elementwise_chain_is_one_kernel():
    b = Builder()
    x, y = b.arg((8, 16)), b.arg((16,))
    v = x
    for op in ("exp", "neg", "tanh", "abs"):
        v = b(op, v)
    v = b("add", v, y)
    v = b("mul", v, lit(0.5))
    v = b("sub", v, x)
    v = b("max", v, lit(0.0))
    graph = b.graph(v)
    result = fuse(graph)
    (kernel,) = fused_nodes(result.graph)
    assert len(result.graph.nodes) == 1 and result.stats["kernels"] == 1
    assert kernel.attr["kind"] == "elementwise"
    assert kernel.attr["name"] == "k0_max_block"
    assert len(kernel.attr["body"].nodes) == 8
    assert kernel.inputs == (x, y) and kernel.loc.line == 8
    check_same(graph, result.graph, rand(8, 16), rand(16))


def test_reduce_with_prologue_and_epilogue():
    b = Builder()
    x = b.arg((4, 6))
    e = b("exp", x)
    s = b("sum", e, axes=(1,), keepdims=False)
    out = b("mul", s, lit(2.0))
    graph = b.graph(out)
    result = fuse(graph)
    (kernel,) = result.graph.nodes
    assert kernel.attr["kind"] == "reduce" and kernel.attr["name"] == "k0_sum_block"
    assert [n.op for n in kernel.attr["body"].nodes] == ["exp", "sum", "mul"]
    check_same(graph, result.graph, rand(4, 6))


def test_prologue_value_used_elsewhere_becomes_extra_output():
    b = Builder()
    x = b.arg((4, 6))
    e = b("exp", x)
    s = b("reduce_max", e, axes=(0, 1), keepdims=True)
    graph = b.graph(s, e)
    result = fuse(graph)
    (kernel,) = result.graph.nodes
    assert kernel.outputs == (e, s)
    check_same(graph, result.graph, rand(4, 6))


def softmax_graph(b, shape=(4, 6), keepdims=True, axes=(1,)):
    x = b.arg(shape)
    m = b("reduce_max", x, axes=axes, keepdims=keepdims)
    e = b("exp", b("sub", x, m))
    s = b("sum", e, axes=axes, keepdims=True)
    return b.graph(b("div", e, s))


def test_softmax_is_one_row_persistent_kernel():
    b = Builder()
    graph = softmax_graph(b)
    result = fuse(graph)
    (kernel,) = result.graph.nodes
    assert kernel.attr["kind"] == "row" and kernel.attr["name"] == "k0_sum_block"
    assert [n.op for n in kernel.attr["body"].nodes] == ["reduce_max", "sub", "exp", "sum",
                                                         "div"]
    assert result.stats["refusals"] == []
    check_same(graph, result.graph, rand(4, 6))


def test_layernorm_and_rmsnorm_chain_reductions_in_one_kernel():
    b = Builder()
    x, g = b.arg((4, 6)), b.arg((6,))
    mean = b("mul", b("sum", x, axes=(1,), keepdims=True), lit(1 / 6))
    d = b("sub", x, mean)
    var = b("mul", b("sum", b("mul", d, d), axes=(1,), keepdims=True), lit(1 / 6))
    norm = b("div", d, b("sqrt", b("add", var, lit(1e-5))))
    rms = b("rsqrt", b("add", b("mul", b("sum", b("mul", norm, norm), axes=(1,),
                                            keepdims=True), lit(1 / 6)), lit(1e-6)))
    graph = b.graph(b("mul", g, b("mul", norm, rms)))
    result = fuse(graph)
    (kernel,) = result.graph.nodes
    assert kernel.attr["kind"] == "row"
    assert sum(n.op == "sum" for n in kernel.attr["body"].nodes) == 3
    check_same(graph, result.graph, rand(4, 6), rand(6))


def test_log_softmax_is_one_kernel():
    b = Builder()
    x = b.arg((3, 5))
    shifted = b("sub", x, b("reduce_max", x, axes=(1,), keepdims=True))
    lse = b("log", b("sum", b("exp", shifted), axes=(1,), keepdims=True))
    graph = b.graph(b("sub", shifted, lse))
    result = fuse(graph)
    assert result.stats["kernels"] == 1 and len(result.graph.nodes) == 1
    check_same(graph, result.graph, rand(3, 5))


@pytest.mark.parametrize("axes, keepdims, reason", [
    ((0,), True, "not the trailing ones"), ((1,), False, "keepdims=False")])
def test_row_persistence_refused_with_reason(axes, keepdims, reason):
    b = Builder()
    x = b.arg((4, 4))
    m = b("reduce_max", x, axes=axes, keepdims=keepdims)
    graph = b.graph(b("sub", x, m))
    result = fuse(graph)
    assert result.stats["kernels"] == 2
    (refusal,) = result.stats["refusals"]
    assert refusal.reason.startswith(FULL_EXTENT) and reason in refusal.reason
    check_same(graph, result.graph, rand(4, 4))


def test_reductions_over_different_axes_stay_apart():
    b = Builder()
    x = b.arg((4, 6))
    e = b("exp", b("sub", x, b("reduce_max", x, axes=(1,), keepdims=True)))
    s = b("sum", e, axes=(0,), keepdims=True)
    graph = b.graph(s)
    result = fuse(graph)
    assert result.stats["kernels"] == 2
    assert any("reduces axes (0,)" in r.reason for r in result.stats["refusals"])
    check_same(graph, result.graph, rand(4, 6))


@pytest.mark.parametrize("op", ["argmax", "sum"])
def test_reducing_a_kernels_result_again_is_refused_as_another_space(op):
    # ``(x.argmax(1) * 2).sum()``: the sum reads the kernel's output space, not its rows (it
    # was refused as "different shape (i64[4] vs i64[])").
    b = Builder()
    x = b.arg((4, 6))
    first = b(op, x, axes=(1,), keepdims=False)
    graph = b.graph(b("sum", b("mul", first, Lit(2, first.type.dtype)), axes=(0,),
                      keepdims=False))
    result = fuse(graph)
    assert result.stats["kernels"] == 2
    reasons = [r.reason for r in result.stats["refusals"]]
    assert reasons == ["reduces a value of the kernel's output space (another iteration space)"]
    check_same(graph, result.graph, rand(4, 6))


def test_matmul_stays_plain_and_bias_activation_fuse():
    b = Builder()
    x, w, bias = b.arg((4, 8)), b.arg((8, 3)), b.arg((3,))
    h = b("matmul", x, w)
    out = b("tanh", b("add", h, bias))
    graph = b.graph(out)
    result = fuse(graph)
    assert [n.op for n in result.graph.nodes] == ["matmul", "fused"]
    assert any(r.reason == "producer is an opaque matmul (BLAS call)"
               for r in result.stats["refusals"])
    check_same(graph, result.graph, rand(4, 8), rand(8, 3), rand(3))


def test_different_shapes_refused_with_reason():
    b = Builder()
    x, y = b.arg((4, 8)), b.arg((8,))
    small = b("exp", y)
    out = b("add", x, small)
    graph = b.graph(out)
    result = fuse(graph)
    assert result.stats["kernels"] == 2
    reasons = [r.reason for r in result.stats["refusals"]]
    assert "different shape (f32[8] vs f32[4,8])" in reasons
    check_same(graph, result.graph, rand(4, 8), rand(8))


def _chain(ops_per_step, steps):
    b = Builder()
    v = x = b.arg((4, 8))
    for step in range(steps):
        v = b(ops_per_step[step % len(ops_per_step)], v)
        v = b("mul", v, lit(0.5))
    return b.graph(v), x


@pytest.mark.parametrize("ops_per_step, steps, kernel_nodes", [
    (("neg", "abs"), 150, [128, 128, 44]),                 # 300 plain ops
    (("tanh", "exp", "log1p"), 40, [28, 28, 24]),        # vector math counts 8: 14 + 14 + 12
])
def test_a_long_chain_is_cut_at_the_kernel_size_limit(ops_per_step, steps, kernel_nodes):
    graph, _ = _chain(ops_per_step, steps)
    result = fuse(graph)
    kernels = fused_nodes(result.graph)
    assert [len(k.attr["body"].nodes) for k in kernels] == kernel_nodes
    assert all(kernel_cost(k.attr["body"].nodes) <= MAX_KERNEL_OPS for k in kernels)
    assert SIZE_LIMIT + ": Numba compile time grows with it" in [
        r.reason for r in result.stats["refusals"]]
    check_same(graph, result.graph, rand(4, 8))


def test_kernels_made_in_a_generator_expression_are_named_by_the_function():
    b = Builder()
    x = b.arg((4, 8))
    out = b("mul", b("exp", x), lit(2.0))
    b.nodes = [replace(n, loc=Loc("model.py", n.loc.line, "train_step/<genexpr>"))
               for n in b.nodes]
    (kernel,) = fused_nodes(fuse(b.graph(out)).graph)
    assert kernel.attr["name"] == "k0_mul_train_step"


def _sin_between_kernels(dtype):
    b = Builder()
    x = b.arg((4, 8), np.dtype(dtype))
    scaled = b("mul", x, Lit(2.0, np.dtype(dtype)))
    out = b("add", b("sin", scaled), x)
    return b.graph(out)


@pytest.fixture
def numpy_avx512(monkeypatch):
    """A machine where NumPy dispatches its AVX-512 loops."""
    monkeypatch.setattr(fusion_rules, "SIMD_IN_NUMPY", NUMPY_AVX512_LOOPS)


def test_cpu_leaves_float32_sin_to_numpys_simd_loop(numpy_avx512):
    graph = _sin_between_kernels(np.float32)
    result = fuse(graph, target="cpu")
    assert [n.op for n in result.graph.nodes] == ["fused", "sin", "fused"]
    reasons = [r.reason for r in result.stats["refusals"] if r.op == "sin"]
    assert reasons == ["NumPy's SIMD loop for sin on float32 is faster than a kernel's: runs as "
                       "a NumPy ufunc"]
    check_same(graph, result.graph, rand(4, 8))


@pytest.mark.parametrize("dtype, target", [(np.float64, "cpu"), (np.float32, "cuda")])
def test_sin_fuses_where_a_kernel_runs_it_as_fast(dtype, target, numpy_avx512):
    # float64: NumPy's sin loop is scalar too; CUDA: the device's sin is not libm.
    graph = _sin_between_kernels(dtype)
    result = fuse(graph, target=target)
    (kernel,) = result.graph.nodes
    assert [n.op for n in kernel.attr["body"].nodes] == ["mul", "sin", "add"]


def test_float32_sin_fuses_on_x86_where_numpy_has_no_avx512_loops(monkeypatch):
    monkeypatch.setattr(fusion_rules, "SIMD_IN_NUMPY", {})
    graph = _sin_between_kernels(np.float32)
    result = fuse(graph, target="cpu")
    (kernel,) = result.graph.nodes
    assert [n.op for n in kernel.attr["body"].nodes] == ["mul", "sin", "add"]
    assert not [r for r in result.stats["refusals"] if r.op == "sin"]
    check_same(graph, result.graph, rand(4, 8))


def _arg_reduction(op, dtype, axes, prologue=False, cast_after=False):
    b = Builder()
    x = b.arg((4, 8), np.dtype(dtype))
    source = b("abs", x) if prologue else x
    out = b(op, source, axes=axes, keepdims=False)
    return b.graph(b("cast", out, dtype=np.dtype(np.float32)) if cast_after else out)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype, axes", [(np.float32, (1,)), (np.int32, (1,)),
                                         (np.int64, (1,)), (np.float64, (0, 1))])
def test_cpu_leaves_a_lone_arg_reduction_over_the_rows_to_numpy(op, dtype, axes):
    graph = _arg_reduction(op, dtype, axes)
    result = fuse(graph, target="cpu")
    assert [n.op for n in result.graph.nodes] == [op]
    (refusal,) = result.stats["refusals"]
    assert refusal.op == op and "nothing fused into it: runs through NumPy" in refusal.reason
    assert [n.op for n in fuse(graph, target="cuda").graph.nodes] == ["fused"]


@pytest.mark.parametrize("dtype, axes, prologue, cast_after", [
    (np.float64, (1,), False, False),     # NumPy's float64 loop is the slower one
    (np.float32, (0,), False, False),     # NumPy strides down the columns
    (np.float32, (1,), True, False),      # the kernel saves the prologue's pass
    (np.float32, (0, 1), False, True),    # and the cast's
])
def test_arg_reductions_a_kernel_runs_faster_stay_kernels(dtype, axes, prologue, cast_after):
    graph = _arg_reduction("argmax", dtype, axes, prologue, cast_after)
    result = fuse(graph, target="cpu")
    assert [n.op for n in result.graph.nodes] == ["fused"]
    check_same(graph, result.graph, rand(4, 8).astype(dtype))


def test_numpys_loops_are_preferred_only_where_it_has_avx512_ones():
    assert numpy_simd_loops({"AVX2": True, "AVX512_SKX": True}, "x86_64") == NUMPY_AVX512_LOOPS
    assert numpy_simd_loops({"AVX2": True, "AVX512_SKX": False}, "x86_64") == {}
    assert numpy_simd_loops({"AVX2": True}, "AMD64") == {}
    assert numpy_simd_loops({"ASIMD": True}, "aarch64") == NUMPY_AVX512_LOOPS   # not measured


def test_simd_table_names_only_elementwise_float_ops():
    for op, dtypes in NUMPY_AVX512_LOOPS.items():
        assert ops.get(op).kind == ops.ELEMENTWISE
        assert set(dtypes) <= {"float32", "float64"}


def test_no_cycle_through_a_plain_node():
    # a = exp(x); r = reshape(a) (plain); c = add(a, r'): joining a's group through the view
    # is fine (no path back), but d = add(a, t) where t = matmul(a...) would make a cycle.
    b = Builder()
    x, w = b.arg((4, 4)), b.arg((4, 4))
    a = b("exp", x)
    t = b("matmul", a, w)
    d = b("add", a, t)
    graph = b.graph(d)
    result = fuse(graph)
    reasons = [r.reason for r in result.stats["refusals"]]
    assert "would create a cycle through matmul" in reasons
    assert [n.op for n in result.graph.nodes] == ["fused", "matmul", "fused"]
    check_same(graph, result.graph, rand(4, 4), rand(4, 4))


def test_sibling_groups_merge_and_multi_output():
    b = Builder()
    x, y = b.arg((5, 3)), b.arg((5, 3))
    p, q = b("exp", x), b("log1p", b("abs", y))
    r = b("mul", p, q)
    graph = b.graph(r, p)
    result = fuse(graph)
    (kernel,) = result.graph.nodes
    assert kernel.outputs == (p, r)
    check_same(graph, result.graph, rand(5, 3), rand(5, 3))


def test_views_stay_plain_and_lone_elementwise_is_a_kernel():
    b = Builder()
    x = b.arg((2, 6))
    r = b("reshape", x, shape=(3, 4))
    out = b("add", r, r)
    graph = b.graph(out)
    result = fuse(graph)
    assert [n.op for n in result.graph.nodes] == ["reshape", "fused"]
    assert result.changed and result.stats["kernels"] == 1
    check_same(graph, result.graph, rand(2, 6))


@pytest.mark.parametrize("seed", range(5))
def test_random_programs_preserve_results(seed):
    rng = np.random.default_rng(seed)
    b = Builder()
    shapes = [(3, 4), (4,), (3, 1)]
    values = [b.arg(s) for s in shapes]
    for _ in range(12):
        choice = rng.integers(4)
        a, c = (values[i] for i in rng.integers(len(values), size=2))
        if choice == 0:
            values.append(b("add", a, c) if _broadcastable(a, c) else b("exp", a))
        elif choice == 1:
            values.append(b("tanh", a))
        elif choice == 2 and a.type.ndim == 2:
            values.append(b("sum", a, axes=(1,), keepdims=bool(rng.integers(2))))
        else:
            values.append(b("mul", a, lit(1.5)))
    graph = b.graph(*values[-3:])
    result = fuse(graph)
    args = [rand(*s) for s in shapes]
    check_same(graph, result.graph, *args)


def _broadcastable(a, c):
    try:
        np.broadcast_shapes(a.type.shape, c.type.shape)
    except ValueError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuse_preserves_results_on_generated_programs(data):
    graph = data.draw(graphs())
    args = data.draw(inputs_for(graph))
    result = fuse(graph)
    verify(result.graph, where="fuse")
    assert result.stats["kernels"] == len(fused_nodes(result.graph))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = interpret(graph, *args), interpret(result.graph, *args)
    for w, g in zip(want, got, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)  # same NumPy calls, same order: bit-identical


def test_sibling_merge_refused_when_it_would_close_a_cycle():
    # o = exp(x); p = reshape(o) (plain); g = add(x, p); n = mul(g, o): n joins g's kernel,
    # but merging o's kernel into it would need p both before and after that kernel.
    b = Builder()
    x = b.arg((3, 4))
    o = b("exp", x)
    p = b("reshape", o, shape=(3, 4))
    g = b("add", x, p)
    n = b("mul", g, o)
    graph = b.graph(n)
    result = fuse(graph)
    assert [node.op for node in result.graph.nodes] == ["fused", "reshape", "fused"]
    check_same(graph, result.graph, rand(3, 4))


def test_gelu_epilogue_of_matmul_is_one_kernel():
    b = Builder()
    x, w, bias = b.arg((4, 8)), b.arg((8, 3)), b.arg((3,))
    h = b("add", b("matmul", x, w), bias)
    inner = b("mul", b("add", h, b("mul", b("mul", b("mul", h, h), h), lit(0.044715))),
              lit(0.7978846))
    graph = b.graph(b("mul", b("mul", h, lit(0.5)), b("add", b("tanh", inner), lit(1.0))))
    result = fuse(graph)
    assert [n.op for n in result.graph.nodes] == ["matmul", "fused"]
    (kernel,) = fused_nodes(result.graph)
    assert sum(isinstance(v, Var) and v.type.shape == (4, 3) for v in kernel.inputs) == 1
    check_same(graph, result.graph, rand(4, 8), rand(8, 3), rand(3))


def test_transpose_feeding_matmul_is_a_view_not_a_kernel():
    b = Builder()
    x, w = b.arg((4, 8)), b.arg((3, 8))
    out = b("add", b("matmul", x, b("permute", w, perm=(1, 0))), lit(1.0))
    graph = b.graph(out)
    result = fuse(graph)
    assert [n.op for n in result.graph.nodes] == ["permute", "matmul", "fused"]
    check_same(graph, result.graph, rand(4, 8), rand(3, 8))


def test_mlp_is_two_blas_calls_and_two_kernels():
    b = Builder()
    x, w1, b1, w2, b2 = b.arg((4, 8)), b.arg((8, 16)), b.arg((16,)), b.arg((16, 8)), b.arg((8,))
    h = b("max", b("add", b("matmul", x, w1), b1), lit(0.0))
    graph = b.graph(b("add", b("matmul", h, w2), b2))
    result = fuse(graph)
    assert [n.op for n in result.graph.nodes] == ["matmul", "fused", "matmul", "fused"]


def test_horizontal_siblings_reading_one_input_become_one_kernel():
    # a = exp(x) * 2 and b = x + y never meet, but both read x: one kernel, two outputs.
    b = Builder()
    x, y, z = b.arg((6, 5)), b.arg((6, 5)), b.arg((6, 5))
    first = b("mul", b("exp", x), lit(2.0))
    second = b("add", x, y)
    apart = b("sqrt", b("abs", z))            # reads nothing the others read: its own kernel
    graph = b.graph(first, second, apart)
    result = fuse(graph)
    kernels = fused_nodes(result.graph)
    assert result.stats["horizontal"] == 1 and len(kernels) == 2
    assert set(kernels[0].outputs) == {first, second} or set(kernels[1].outputs) == {first,
                                                                                      second}
    check_same(graph, result.graph, rand(6, 5), rand(6, 5), rand(6, 5))


def test_sibling_reductions_over_the_same_axes_become_one_kernel():
    # x.sum(-1) / abs(x).max(-1) and (x * y).sum(-1) + 1 read x: one pass, three accumulators.
    # A reduction over other axes, and an argmax (one reduction per kernel), stay apart.
    b = Builder()
    x, y = b.arg((6, 5)), b.arg((6, 5))
    total = b("sum", x, axes=(1,), keepdims=False)
    largest = b("reduce_max", b("abs", x), axes=(1,), keepdims=False)
    dot = b("add", b("sum", b("mul", x, y), axes=(1,), keepdims=False), lit(1.0))
    both = b("div", total, largest)            # an epilogue combining two results
    columns = b("sum", x, axes=(0,), keepdims=False)
    index = b("argmax", x, axes=(1,), keepdims=False)
    graph = b.graph(both, dot, columns, index)
    result = fuse(graph)
    kernels = fused_nodes(result.graph)
    assert result.stats["horizontal"] == 2 and len(kernels) == 2
    merged = next(k for k in kernels if both in k.outputs)
    assert set(merged.outputs) == {both, dot} and merged.attr["kind"] == "reduce"
    assert [n.op for n in result.graph.nodes if n.op != "fused"] == ["argmax"]
    check_same(graph, result.graph, rand(6, 5), rand(6, 5))


@pytest.mark.parametrize("keepdims", [False, True])
def test_a_reduction_reading_another_is_not_merged_beside_it(keepdims):
    # Batch-norm statistics over axis 0: the variance's prologue reads the mean. Chaining them
    # needs a row-persistent kernel (trailing axes, kept dims), which placing refused; a
    # side-by-side merge of the two reduce groups must not make that kernel anyway.
    b = Builder()
    x = b.arg((64, 32))
    total = b("sum", x, axes=(0,), keepdims=keepdims)
    centered = b("sub", x, total)
    spread = b("sum", b("mul", centered, centered), axes=(0,), keepdims=keepdims)
    graph = b.graph(total, spread)
    result = fuse(graph)
    assert result.stats["horizontal"] == 0 and len(fused_nodes(result.graph)) == 2
    assert any("not the trailing ones" in r.reason for r in result.stats["refusals"])
    check_same(graph, result.graph, rand(64, 32))


def test_horizontal_merging_tries_only_the_last_open_kernels(monkeypatch):
    # An unrolled recurrence: 40 same-shape kernels that all read w, each depending on the one
    # before through a reshape. Each merge try is a cycle check walking back to the candidate:
    # tried against every earlier kernel that was quadratic in kernels times the graph.
    from fusejit.passes import fuse as fuse_module
    tries = []
    original = fuse_module._Fuser._horizontal_ok
    monkeypatch.setattr(fuse_module._Fuser, "_horizontal_ok",
                        lambda self, c, g: tries.append(1) or original(self, c, g))
    b = Builder()
    w, h = b.arg((3, 4)), b.arg((3, 4))
    for _ in range(40):
        h = b("reshape", b("tanh", b("add", w, h)), shape=(3, 4))
    result = fuse(b.graph(h))
    assert result.stats["horizontal"] == 0
    assert len(tries) <= 40 * 8   # not 40 * 39 / 2


def test_horizontal_merge_refused_with_reason_when_it_would_close_a_cycle():
    b = Builder()
    x = b.arg((3, 4))
    o = b("exp", x)
    g = b("add", x, b("reshape", o, shape=(3, 4)))
    graph = b.graph(b("mul", g, o))
    result = fuse(graph)
    assert result.stats["horizontal"] == 0
    assert "horizontal: would create a cycle through reshape" in [
        r.reason for r in result.stats["refusals"]]
