"""Issue 3's kernel counts, compiled end to end: row-persistent softmax / log-softmax /
layernorm / RMSNorm, the GELU and 8-op chains, matmul epilogues and transposes folded into the
BLAS call; results against eager NumPy (f32 and f64, NaN and inf rows) and a float64 reference."""
import numpy as np
import pytest

import fusejit
from bench.models import elementwise, gelu, layernorm, mlp
from bench.models import softmax as softmax_model
from fusejit.codegen import build_kernel

TOL = {np.float32: 2e-4, np.float64: 1e-10}


def log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def rms_norm(x, g):
    return g * x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def tanh_gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978846 * (x + 0.044715 * x**3)))


def special_rows(x):
    x = x.copy()
    x[1, 3] = np.nan
    x[2, 5] = np.inf
    x[3, :] = -np.inf
    return x


def compiled_and_explained(fn, *args):
    compiled = fusejit.compile(fn)
    compiled(*args)
    with np.errstate(all="ignore"):
        got = compiled(*args)
    return got, compiled.explain(*args)


def assert_close(got, want, reference, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got, reference, rtol=TOL[dtype], atol=1e-6, equal_nan=True)


ROW_MODELS = {
    "softmax": (softmax_model.softmax, lambda x: ()),
    "log_softmax": (log_softmax, lambda x: ()),
    "layernorm": (layernorm.layer_norm, lambda x: (1 + 0.1 * x[0], 0.1 * x[1])),
    "rmsnorm": (rms_norm, lambda x: (1 + 0.1 * x[0],)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ROW_MODELS)
def test_row_models_are_one_kernel(name, dtype):
    fn, extra = ROW_MODELS[name]
    x = (2 * np.random.default_rng(0).standard_normal((6, 40)) + 1).astype(dtype)
    args = (special_rows(x) if name in ("softmax", "layernorm") else x, *extra(x))
    got, info = compiled_and_explained(fn, *args)
    assert len(info.kernels) == 1 and info.kernels[0].kind == "row", str(info)
    with np.errstate(all="ignore"):
        want = fn(*args)
        reference = fn(*(a.astype(np.float64) for a in args)).astype(want.dtype)
    assert_close(got, want, reference, dtype)


@pytest.mark.parametrize("fn, n_inputs", [(tanh_gelu, 1), (gelu.gelu, 1),
                                          (elementwise.elementwise, 3)])
def test_elementwise_chains_are_one_kernel(fn, n_inputs):
    rng = np.random.default_rng(1)
    args = tuple(rng.standard_normal((8, 33)).astype(np.float32) for _ in range(n_inputs))
    got, info = compiled_and_explained(fn, *args)
    assert len(info.kernels) == 1 and not info.refusals
    want = fn(*args)
    reference = fn(*(a.astype(np.float64) for a in args)).astype(want.dtype)
    assert_close(got, want, reference, np.float32)


def test_mlp_is_two_blas_calls_and_two_kernels():
    args, _ = mlp.make_inputs(size="small")
    got, info = compiled_and_explained(mlp.mlp, *args)
    assert len(info.blas_calls) == 2 and len(info.kernels) <= 2
    np.testing.assert_allclose(got, mlp.mlp(*args), rtol=1e-5, atol=1e-6)


def test_transposed_weight_goes_to_blas_as_a_view():
    def linear_t(x, w, b):
        return np.tanh(x @ w.T + b)

    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (5, 8), (5,)))
    got, info = compiled_and_explained(linear_t, x, w, b)
    assert info.views == 1 and len(info.blas_calls) == 1 and len(info.kernels) == 1
    assert [op for op, _ in info.kernels[0].source_ops] == ["add", "tanh"]
    np.testing.assert_allclose(got, linear_t(x, w, b), rtol=1e-5, atol=1e-6)


def test_row_kernel_source_makes_passes_over_each_row():
    x = np.ones((4, 16), np.float32)
    compiled = fusejit.compile(softmax_model.softmax)
    compiled(x)
    (node,) = [n for n in compiled.entry_for(x).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    source = build_kernel(node).source
    assert "# loops: i0 | i1 x3" in source
    # 3 passes, serial and parallel, in three variants (``outline``): rows calling the exp
    # pass (whose float32 sum adds in blocks) as a function of its own; rows under 64 with
    # that pass inline; strided
    assert source.count("def ") == 7
    assert source.count("for i1 in range(n1):") == 2 * 2 * 3
    assert source.count("for j1 in range(0, n1, 256):") == 1 + 2 * 2
    assert "rmaximum(acc0" in source and "radd(acc1_b" in source
    assert source.count("acc1 = acc1 + np.float64(acc1_b)") == 1 + 2 * 2
    assert source.count("\n        acc1 = row_loop0(n1, acc1, r_in0, r_out0, v0)\n") == 2
    # exp once per element: stored in the output's row in the sum pass, loaded back and
    # divided over in the divide pass (row variants through the row, strided ones indexed)
    assert source.count("exp_f32(") == 1 + 2 * 2 and "np.empty" not in source
    assert source.count("r_out0[i1] = v2") == 3 and source.count("v2 = r_out0[i1]") == 4
    assert source.count("out0[i0, i1] = v2") == 2 and source.count("v2 = out0[i0, i1]") == 2


def softmax_kernel(shape, dtype, fn=softmax_model.softmax):
    compiled = fusejit.compile(fn)
    x = np.ones(shape, dtype)
    compiled(x)
    (node,) = [n for n in compiled.entry_for(x).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    return build_kernel(node)


def softmax_as_float64(x):
    # the output's dtype is not exp's: the exp row needs a scratch row of its own
    return softmax_model.softmax(x).astype(np.float64)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("shape", [(13, 40), (5, 3, 17)], ids=["2d", "3d"])
@pytest.mark.parametrize("fn, kept_in", [(softmax_model.softmax, "the output row"),
                                         (softmax_as_float64, "a scratch row")],
                         ids=["out-row", "scratch-row"])
def test_scratch_rows_across_blocks_layouts_and_threads(fn, kept_in, shape, layout, parallel):
    # 13 rows: one full block of 8 and a partial one; 3-d: a second kept dim inside the block;
    # a transposed view takes the strided variant.
    rng = np.random.default_rng(4)
    x = special_rows((3 * rng.standard_normal((shape[0], int(np.prod(shape[1:])))))
                     .astype(np.float32)).reshape(shape)
    if layout == "strided":
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    kernel = softmax_kernel(shape, np.float32, fn)
    with np.errstate(all="ignore"):
        (got,) = kernel(x, parallel=parallel)
        want = fn(x)
    assert ("s_v2 = np.empty(n" in kernel.source) == (kept_in == "a scratch row")
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7, equal_nan=True)


# Attention-like: the kernel's input is a product that dies there and its output is not
# returned, so the output is written over the product's buffer.
def softmax_of_product(a, b, c):
    return softmax_model.softmax(a @ b) @ c


def product_times_softmax(a, b, c):
    # the divide pass reads the product again: the output written over the product's buffer
    # cannot hold exp before then
    s = a @ b
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s * e / e.sum(axis=-1, keepdims=True)) @ c


@pytest.mark.parametrize("fn, kept_in", [(softmax_of_product, "the output row"),
                                         (product_times_softmax, "a scratch row")])
def test_an_output_over_its_input_holds_exp_only_when_no_later_pass_reads_the_input(
        fn, kept_in):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((24, 16)).astype(np.float32)
    b = (3 * rng.standard_normal((16, 40))).astype(np.float32)
    c = rng.standard_normal((40, 8)).astype(np.float32)
    compiled = fusejit.compile(fn)
    compiled(a, b, c)
    np.testing.assert_allclose(compiled(a, b, c), fn(a, b, c), rtol=1e-5, atol=1e-6)
    assert "1 kernel output(s) written over an input" in str(compiled.explain(a, b, c))
    (node,) = [n for n in compiled.entry_for(a, b, c).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    kernel = build_kernel(node, in_place=((0, 0),))
    assert "# out0 is written in place over in0" in kernel.source
    assert ("s_v2 = np.empty(n" in kernel.source) == (kept_in == "a scratch row")
    for parallel in (False, True):
        product = a @ b
        (got,) = kernel(product, parallel=parallel)
        assert got is product
        np.testing.assert_allclose(got @ c, fn(a, b, c), rtol=1e-5, atol=1e-6)


def test_whole_array_softmax_keeps_no_scratch():
    # One reduced dim and no kept dims: a scratch would be the whole input; exp is recomputed.
    kernel = softmax_kernel((50,), np.float64)
    x = np.linspace(-30, 30, 50)
    (got,) = kernel(x, parallel=False)
    assert "np.empty" not in kernel.source
    np.testing.assert_allclose(got, softmax_model.softmax(x), rtol=1e-13)


def test_row_kernel_source_does_not_depend_on_var_numbering():
    # Vars hash by uid: any set-ordered choice in codegen (which values get scratch rows, in
    # which order) would make two traces of one model generate different files and compile
    # again (found: a new sequence length recompiled GPT-2's masked softmax).
    from fusejit.codegen.numba_cpu import generate_source
    from fusejit.ir import Graph, Node, Var

    def masked_softmax(x, mask):
        s = np.where(mask, x / np.float32(2.8284271), np.float32(-1e10))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    x, mask = np.ones((2, 4, 8), np.float32), np.tri(4, 8, dtype=bool)
    compiled = fusejit.compile(masked_softmax)
    compiled(x, mask)
    (node,) = [n for n in compiled.entry_for(x, mask).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    body = node.attr["body"]
    source = generate_source(body)[0]
    assert "s_v" in source
    values = list(body.inputs) + [v for n in body.nodes for v in n.outputs]
    rng = np.random.default_rng(0)
    for _ in range(30):                        # new uids: shuffled, with random gaps
        fresh = {}
        for k in rng.permutation(len(values)):
            [Var(values[k].type) for _ in range(rng.integers(0, 9))]
            fresh[values[k]] = Var(values[k].type, values[k].hint)
        ref = lambda v: fresh.get(v, v) if isinstance(v, Var) else v  # noqa: B023
        renumbered = Graph(body.name, [ref(v) for v in body.inputs],
                           [Node(n.op, tuple(map(ref, n.inputs)), tuple(map(ref, n.outputs)),
                                 n.attrs, n.loc) for n in body.nodes],
                           [ref(v) for v in body.outputs])
        assert generate_source(renumbered)[0] == source


def layer_norm_kernel(shape, dtype=np.float32):
    compiled = fusejit.compile(layernorm.layer_norm)
    x, g, b = np.ones(shape, dtype), np.ones(shape[-1], dtype), np.zeros(shape[-1], dtype)
    compiled(x, g, b)
    (node,) = [n for n in compiled.entry_for(x, g, b).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    return build_kernel(node)


@pytest.mark.parametrize("shape, request_line", [
    ((7, 33), "prefetch_row(in0, (i0 + 1,))"),
    ((2, 5, 33), "prefetch_row(in0, (i0, i1 + 1))")], ids=["2d", "3d"])
def test_row_kernels_ask_for_the_next_row_after_their_first_pass(shape, request_line):
    kernel = layer_norm_kernel(shape)
    source, last = kernel.source, f"i{len(shape) - 2}"
    # in the row variants only (serial and parallel), for x's rows and not for g's or b's
    # (one row for all), after the mean's pass and before the variance's
    assert source.count("prefetch_row(") == 2 and source.count(request_line) == 2
    assert source.count(f"if {last} + 1 < n{len(shape) - 2}:") == 2
    row_variant = source[source.index("def kernel_serial"):source.index("def kernel_parallel")]
    mean, variance = row_variant.index("acc0_b = radd"), row_variant.index("acc1_b = radd")
    assert mean < row_variant.index(request_line) < variance
    rng = np.random.default_rng(6)
    x = special_rows(rng.standard_normal((int(np.prod(shape[:-1])), shape[-1]))
                     .astype(np.float32)).reshape(shape)
    g, b = (rng.standard_normal(shape[-1]).astype(np.float32) for _ in range(2))
    with np.errstate(all="ignore"):
        want = layernorm.layer_norm(x, g, b)
        for parallel in (False, True):   # the last row's request is skipped, not made past it
            (got,) = kernel(x, g, b, np.float64(shape[-1]), parallel=parallel)
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


def test_one_pass_kernels_ask_for_no_rows():
    # A single pass streams its rows: the hardware prefetcher follows it (measured: requests
    # at each row's start slowed the 8-op chain by a fifth).
    compiled = fusejit.compile(elementwise.elementwise)
    args = [np.ones((8, 32), np.float32)] * 3
    compiled(*args)
    (node,) = [n for n in compiled.entry_for(*args).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    assert "prefetch_row" not in build_kernel(node).source
    assert "prefetch_row" not in softmax_kernel((50,), np.float64).source   # no next row


def test_prefetch_row_emits_one_l2_request_per_line_and_never_reads():
    import numba

    from fusejit.codegen.prelude import PREFETCH_BYTES, prefetch_row

    @numba.njit
    def ask(array, row):
        prefetch_row(array, (row,))
        return array[0, 0]

    x = np.arange(12.0).reshape(3, 4)
    # rows of a strided view and the row past the end: a prefetch is a hint, it never faults
    for array, row in ((x, 2), (x[:, ::2], 1), (x, 3), (x.T, 1)):
        assert ask(array, row) == array[0, 0]
    ir_text = "\n".join(ask.inspect_llvm().values())
    # read (0), L2 locality (2), data cache (1); the row length capped at PREFETCH_BYTES
    assert "@llvm.prefetch.p0(ptr" in ir_text and "i32 0, i32 2, i32 1)" in ir_text
    assert f"i64 {PREFETCH_BYTES}" in ir_text
