"""CompiledKernel behaviour: broadcasting, strided and 0-d inputs, reuse across shapes, the
source file cache, the parallel variant, and fused graphs run end to end."""
import numpy as np
import pytest
from codegen_helpers import check_kernel, fused_node

from fusejit import config
from fusejit.codegen import build_kernel, kernel_stats, source_cache
from fusejit.ir import Graph, Lit, Loc, Node, TensorType, Var, interpret, ops
from fusejit.passes.fuse import fuse

F32 = np.float32


def affine_tanh(shape_x, shape_y, shape_z=()):
    def body(emit, x, y, z):
        return [emit("tanh", emit("add", emit("mul", x, y), z))]
    return fused_node([(shape_x, F32), (shape_y, F32), (shape_z, F32)], body,
                      name="k0_tanh_test")


def test_broadcast_zero_d_and_strided_inputs():
    node = affine_tanh((4, 5), (4, 1))
    base = np.arange(40, dtype=F32).reshape(5, 8) / 40
    x = base[:, ::2].T                      # transposed, strided view of shape (4, 5)
    y = np.arange(8, dtype=F32).reshape(8, 1)[::2]
    kernel = check_kernel(node, x, y, np.array(0.25, F32))
    assert "in1[i0, 0]" in kernel.source and "in2[0]" in kernel.source
    rows = np.broadcast_to(np.arange(5, dtype=F32), (4, 5))  # zero strides
    check_kernel(affine_tanh((4, 5), (4, 5)), rows, rows, np.array(1.0, F32))


def test_outer_product_broadcast_both_sides():
    node = affine_tanh((4, 1), (1, 5), (5,))
    check_kernel(node, np.ones((4, 1), F32), np.arange(5, dtype=F32)[None] / 5,
                 np.full(5, -0.5, F32))


def test_same_structure_new_shape_compiles_nothing_new():
    first = build_kernel(affine_tanh((6, 7), (6, 1)))
    before = kernel_stats()
    second = check_kernel(affine_tanh((3, 11), (3, 1)), np.ones((3, 11), F32),
                          np.ones((3, 1), F32), np.array(2.0, F32))
    after = kernel_stats()
    assert first.key == second.key
    assert after["compiled"] == before["compiled"]
    assert after["reused"] == before["reused"] + 1


def test_source_header_file_and_corrupt_entry():
    kernel = build_kernel(affine_tanh((2, 3), (2, 3)))
    assert kernel.source.startswith("# kernel k0_tanh_test  target=cpu  kind=elementwise  rank=2")
    assert "#   mul          test_model.py:1" in kernel.source
    assert [op for op, _ in kernel.source_ops] == ["mul", "add", "tanh"]
    path = config.cache_dir() / "kernels" / f"{kernel.key}.py"
    expected = path.read_text()
    assert kernel.source.endswith(expected)
    assert source_cache.source_key(expected) == kernel.key
    path.write_text("raise SystemExit('foreign')\n")
    source_cache.ensure_file(path, expected)
    assert path.read_text() == expected


def test_parallel_variant_and_preallocated_outputs():
    node = fused_node([((64, 33), np.float64)], lambda emit, x: [
        emit("sum", emit("exp", x), axes=(1,), keepdims=False)], kind="reduce")
    kernel = build_kernel(node)
    x = np.linspace(-1, 1, 64 * 33).reshape(64, 33)
    (want,) = interpret(node.attr["body"], x)
    out = np.empty(64)
    (got,) = kernel(x, out=(out,), parallel=True)
    assert got is out
    np.testing.assert_allclose(out, want, rtol=1e-13)


def test_preallocated_outputs_may_leave_some_to_the_kernel():
    # The runtime's arena holds only outputs the caller never sees: it passes a list, and each
    # None in it is allocated by the kernel call.
    node = fused_node([((4, 5), np.float64), ((), np.float64)], lambda emit, x, s: [
        emit("exp", x), emit("sum", x, axes=(0, 1), keepdims=False)], kind="reduce")
    kernel = build_kernel(node)
    x = np.arange(20.0).reshape(4, 5) / 20
    held = np.empty((4, 5))
    for out in ([held, None], [None, None]):
        got_exp, got_sum = kernel(x, np.float64(0), out=out, parallel=False)
        assert (got_exp is held) == (out[0] is held) and got_sum.shape == ()
        np.testing.assert_allclose(got_exp, np.exp(x), rtol=1e-15)
        np.testing.assert_allclose(got_sum, x.sum(), rtol=1e-15)


def test_fast_call_completes_a_list_of_outputs_itself(monkeypatch):
    # The replay passes the arena's views as a list, None where the caller sees the output;
    # a 0-d view is stored through a (1,) view of it. None of this takes __call__'s path.
    node = fused_node([((4, 5), np.float64)], lambda emit, x: [
        emit("exp", x), emit("sum", x, axes=(0, 1), keepdims=False)], kind="reduce")
    kernel = build_kernel(node)
    fast_call = kernel.fast_call
    monkeypatch.setattr(type(kernel), "__call__", None)
    x = np.arange(20.0).reshape(4, 5) / 20
    held, held_sum = np.empty((4, 5)), np.empty(())
    for out in ([held, None], [None, held_sum], [held, held_sum], (held, held_sum)):
        got_exp, got_sum = fast_call(x, out=out)
        assert (got_exp is held) == (out[0] is held) and (got_sum is held_sum) == (
            out[1] is held_sum)
        assert got_exp.shape == (4, 5) and got_sum.shape == () and got_sum.dtype == np.float64
        np.testing.assert_allclose(got_exp, np.exp(x), rtol=1e-15)
        np.testing.assert_allclose(got_sum, x.sum(), rtol=1e-15)


def test_fast_call_coerces_checks_and_writes_into_given_outputs():
    node = affine_tanh((4, 5), (4, 1))
    kernel = build_kernel(node)
    x, y = np.linspace(-1, 1, 20, dtype=F32).reshape(4, 5), np.ones((4, 1), F32)
    (want,) = kernel(x, y, np.array(0.5, F32), parallel=False)
    for z in (np.array(0.5, F32), np.float32(0.5), 0.5):  # 0-d, NumPy scalar, Python float
        (got,) = kernel.fast_call(x, y, z)
        np.testing.assert_array_equal(got, want)
    (got,) = kernel.fast_call(x.tolist(), y, 0.5)        # a list is converted, as by __call__
    np.testing.assert_array_equal(got, want)
    held = np.empty((4, 5), F32)
    assert kernel.fast_call(x, y, 0.5, out=(held,))[0] is held
    np.testing.assert_array_equal(held, want)
    (allocated,) = kernel.fast_call(x, y, 0.5, out=[None])  # a list: None entries allocated
    np.testing.assert_array_equal(allocated, want)
    with pytest.raises(ValueError, match=r"shape \(5, 4\), expected \(4, 5\)"):
        kernel.fast_call(x.T, y, 0.5)


def test_fast_call_of_a_zero_d_result_returns_a_zero_d_array():
    node = fused_node([((4, 5), np.float64)], lambda emit, x: [
        emit("sum", emit("exp", x), axes=(0, 1), keepdims=False)], kind="reduce")
    kernel = build_kernel(node)
    x = np.arange(20.0).reshape(4, 5) / 20
    for out in (None, (np.empty(()),), [None]):
        (got,) = kernel.fast_call(x, out=out)
        assert got.shape == () and got.dtype == np.float64
        np.testing.assert_allclose(got, np.exp(x).sum(), rtol=1e-14)


def test_fused_graph_runs_end_to_end():
    x = Var(TensorType((8, 16), F32), "x")
    nodes, v = [], x
    for k, op in enumerate(["exp", "neg", "sum"]):
        attrs = {"axes": (1,), "keepdims": True} if op == "sum" else {}
        (out_type,) = ops.infer_types(op, [v.type], attrs)
        out = Var(out_type)
        nodes.append(Node(op, [v], [out], attrs, Loc("model.py", k + 1, "model/softplus")))
        v = out
    mul_out = Var(v.type)
    nodes.append(Node("mul", [v, Lit(3.0, F32)], [mul_out], {}, Loc("model.py", 4)))
    graph = Graph("model", [x], nodes, [mul_out])
    fused = fuse(graph).graph
    (node,) = fused.nodes
    arg = np.random.default_rng(1).standard_normal((8, 16)).astype(F32)
    (got,) = build_kernel(node)(arg)
    np.testing.assert_allclose(got, interpret(graph, arg)[0], rtol=1e-5)


def test_identical_bodies_share_one_generated_source(monkeypatch):
    import fusejit.codegen as codegen
    calls = []
    real = codegen.generate_source
    monkeypatch.setattr(codegen, "generate_source",
                        lambda body, in_place=(), bits=None: calls.append(1)
                        or real(body, in_place, bits))
    codegen._SOURCES.clear()
    first = codegen.kernel_source(affine_tanh((6, 7), (6, 1)))
    again = codegen.kernel_source(affine_tanh((6, 7), (6, 1)))   # new Vars, same structure
    assert calls == [1] and first[0] == again[0]
    assert again[1].region_of.keys() != first[1].region_of.keys()  # plan of its own body
    codegen.kernel_source(affine_tanh((6, 7), (6, 7)))              # broadcast differs
    assert calls == [1, 1]
    codegen.kernel_source(affine_tanh((6, 7), (6, 1)), in_place=((0, 0),))  # writes over in0
    assert calls == [1, 1, 1]


def test_source_memo_tells_minus_zero_from_zero():
    def scaled(value):
        return fused_node([((4,), F32)], lambda emit, x: [emit("mul", x, Lit(value, F32))])
    x = np.array([1.0, -2.0, np.inf, 0.0], F32)
    for value in (0.0, -0.0, 0.0):
        got = check_kernel(scaled(value), x)(x, parallel=False)[0]
        assert np.array_equal(np.signbit(got), np.signbit(x * F32(value)))
