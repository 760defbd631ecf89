import numpy as np
import pytest

from fusejit.ir import interpret, print_graph, verify
from fusejit.tracer import flatten, is_traced_leaf, trace, unflatten

from .helpers import check

rng = np.random.default_rng(2)
X = rng.standard_normal((4, 5)).astype(np.float32)
WTE = rng.standard_normal((10, 3)).astype(np.float32)
IDS = np.array([[1, 3], [9, 0]])

INDEXING = [
    lambda x, i: x[1], lambda x, i: x[-1, ::2], lambda x, i: x[::-1, 1:4:2],
    lambda x, i: x[None, ..., 0], lambda x, i: x[..., -2:], lambda x, i: x[2, 3],
    lambda x, i: x[:, [-1]], lambda x, i: x[[0, 2]], lambda x, i: x[i[0]],
    lambda x, i: x[i, 1:3], lambda x, i: x[X[0] > 0, 0] if False else x[np.array([True,
                                                                                  False] * 2)],
    lambda x, i: [row.sum() for row in x], lambda x, i: len(x),
]


@pytest.mark.parametrize("fn", INDEXING)
def test_indexing(fn):
    check(fn, X, np.array([3, 1]))


def test_embedding_gather():
    tr = check(lambda wte, ids: wte[ids], WTE, IDS)
    assert [n.op for n in tr.graph.nodes] == ["gather"]


def test_setitem_is_functional_and_mutates_argument():
    x = X.copy()
    tr = trace(lambda x: x.__setitem__((slice(None), 0), 0.0), (x,), {})
    assert (x[:, 0] == 0).all() and tr.mutations[0].target == "arg"
    (out,) = interpret(tr.graph, X)
    expected = X.copy()
    expected[:, 0] = 0
    np.testing.assert_array_equal(out, expected)


def inplace_body(x, y):
    x += 1.0
    x[0] *= y[0]
    np.multiply(x, 2, out=x)
    row = x[1]
    x[1:3] -= 5
    return row * 1, x


def test_inplace_ops_mutation_and_views():
    x = X.copy()
    tr = trace(inplace_body, (x, X.copy()), {})
    verify(tr.graph)
    expected_row, expected_x = inplace_body(X.copy(), X.copy())
    np.testing.assert_array_equal(x, expected_x)              # caller's array mutated
    assert tr.out_leaves[1].kind == "arg" and tr.mutations[0].index == 0
    outputs = interpret(tr.graph, X.copy(), X.copy())
    np.testing.assert_array_equal(outputs[0], expected_row)   # view re-derived after the write
    np.testing.assert_array_equal(outputs[tr.mutations[0].output], expected_x)


def test_add_at_scatter():
    x = X.copy()
    tr = trace(lambda a, i, v: np.add.at(a, i, v), (x, np.array([0, 0, 2]), 1.5), {})
    assert tr.graph.nodes[-1].op == "scatter_add"
    (out,) = interpret(tr.graph, X, np.array([0, 0, 2]), 1.5)
    np.testing.assert_array_equal(out, x)


def test_write_into_reshape_view_is_the_base_reshaped_back():
    x = X.copy()
    tr = trace(lambda x: x.reshape(-1).__setitem__(0, 1.0), (x,), {})
    assert tr.fallback is None and tr.mutations[0].target == "arg"
    ops = [n.op for n in tr.graph.nodes]
    assert ops[0] == "reshape" and "setitem" in ops and ops[-1] == "reshape"
    expected = X.copy()
    expected[0, 0] = 1.0
    np.testing.assert_array_equal(x, expected)
    (out,) = interpret(tr.graph, X)
    np.testing.assert_array_equal(out, expected)


W_GLOBAL = rng.standard_normal((5, 2)).astype(np.float32)


def uses_global(x):
    return x @ W_GLOBAL


def test_global_capture_is_reread():
    global W_GLOBAL
    tr = check(uses_global, X)
    assert [c.description for c in tr.captures] == ["global W_GLOBAL"]
    old = W_GLOBAL
    W_GLOBAL = old * 2
    try:
        assert tr.captures[0].resolve([X]) is W_GLOBAL
    finally:
        W_GLOBAL = old


def test_closure_capture():
    b = rng.standard_normal(5).astype(np.float32)
    tr = check(lambda x: x + b, X)
    assert tr.captures[0].description == "closure b" and tr.graph.inputs[1].hint == "b"


class Layer:
    def __init__(self):
        self.W = rng.standard_normal((5, 5)).astype(np.float32)
        self.layers = [{"w": np.ones(5, np.float32)}]

    def forward(self, x):
        return x @ self.W + self.layers[0]["w"]

    def step(self, g, lr):
        self.W -= lr * g
        return self.W


def test_self_attribute_captures_and_capture_mutation():
    layer = Layer()
    tr = check(layer.forward, X)
    assert [c.description for c in tr.captures] == ["self.W", "self.layers[0]['w']"]
    w0 = layer.W.copy()
    tr = trace(layer.step, (X[:, :5].T.copy() @ X[:, :5], 0.1), {})
    assert tr.fallback is None and tr.mutations[0].target == "capture"
    assert tr.out_leaves[0].kind == "capture"
    outputs = interpret(tr.graph, X[:, :5].T @ X[:, :5], 0.1, w0)
    np.testing.assert_array_equal(outputs[tr.mutations[0].output], layer.W)


def test_body_constant_is_held_not_baked():
    tr = check(lambda x: x * np.arange(5, dtype=np.float32), X)
    assert tr.captures[0].description.startswith("constant used at test_semantics.py")


def test_array_conversion_falls_back_with_eager_result():
    # order="A" is not modelled: NumPy's __array__ runs, the signature eager
    fn = lambda x: np.asarray(x.T, order="A") + 1  # noqa: E731
    tr = trace(fn, (X,), {})
    assert tr.fallback is not None and "__array__" in tr.fallback.reason
    assert tr.fallback.loc.file.endswith("test_semantics.py")
    np.testing.assert_array_equal(np.asarray(tr.result), np.asarray(fn(X)))


@pytest.mark.parametrize("convert", [   # looked up on np at the call, as user code does
    lambda x: np.asarray(x), lambda x: np.asanyarray(x), lambda x: np.asarray(x, order="K"),
    lambda x: np.array(x, copy=None), lambda x: np.asarray(x, dtype=x.dtype, copy=False)],
    ids=["asarray", "asanyarray", "order_K", "array_copy_None", "copy_False"])
def test_asarray_of_a_traced_array_is_the_array_itself(convert):
    tr = check(lambda x: convert(x) * 2, X)
    assert [n.op for n in tr.graph.nodes] == ["mul"]
    tr = trace(lambda x: convert(x), (X,), {})
    assert tr.out_leaves[0].kind == "arg"         # the same object, as NumPy returns it


@pytest.mark.parametrize(("convert", "ops"), [
    (lambda x: np.ascontiguousarray(x), []),               # X is C-ordered: itself
    (lambda x: np.ascontiguousarray(x.T), ["permute", "copy"]),
    (lambda x: np.asfortranarray(x), ["copy"]),             # order="F"
    (lambda x: np.asfortranarray(x.T), ["permute"]),
    (lambda x: np.asarray(x, order="C", dtype=np.float64), ["cast"]),
    (lambda x: np.array(x, order="C"), ["copy"]),          # np.array copies
    (lambda x: x.T.astype(np.float64, order="C"), ["permute", "cast", "copy"]),
    (lambda x: x.astype(np.float32, order="F"), ["copy", "copy"]),   # astype copies, then F
    (lambda x: x.astype(np.float32, order="C", copy=False), [])],
    ids=["contiguous", "contiguous_T", "fortran", "fortran_T", "cast", "array", "astype_C",
         "astype_F", "astype_no_copy"])
def test_conversion_to_a_layout_is_the_array_or_a_copy_laid_out_so(convert, ops):
    tr = check(lambda x: convert(x) * 2, X)
    assert [n.op for n in tr.graph.nodes] == [*ops, "mul"] and tr.fallback is None
    want = convert(X)
    got = trace(convert, (X,), {}).result
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (
        want.flags.c_contiguous, want.flags.f_contiguous)


def test_asarray_with_another_dtype_is_a_cast():
    tr = check(lambda x: np.asarray(x, dtype=np.float64) + 1, X)
    assert tr.graph.nodes[0].op == "cast" and tr.result.dtype == np.float64


def test_np_array_of_a_traced_array_is_a_copy_an_update_of_the_argument_misses():
    def fn(x):
        y = np.array(x, ndmin=3)
        x += 1
        return y, x
    tr = check(fn, X.copy())
    assert tr.result[0].shape == (1, *X.shape) and tr.fallback is None


def test_asarray_returns_the_argument_an_in_place_update_reaches():
    def fn(x):
        y = np.asarray(x)
        y *= 2
        return x
    check(fn, X.copy())


def test_np_array_of_a_list_of_traced_arrays_is_a_stack():
    def fn(x):
        pair = np.array([x, x * 2])
        scalars = np.asarray((x.sum(), x.max()), dtype=np.float64)
        x += 1                                             # the stack is a new array
        return pair, scalars, np.array([x, X], ndmin=4)    # a captured array among them

    tr = check(fn, X.copy())
    assert [n.op for n in tr.graph.nodes].count("concatenate") == 3 and tr.fallback is None
    assert tr.result[2].shape == (1, 2, *X.shape)


@pytest.mark.parametrize("fn", [
    lambda x: np.array(x.sum(), ndmin=2) + 1,              # a scalar with ndmin
    lambda x: np.asarray(x, order="A") * 2,                # itself or a copy, by layout
    lambda x: np.array([[x, x]]) * 2,                      # a nested list
    lambda x: np.array([x.sum(), 1.0]),                    # a list with a Python number
    lambda x: np.asarray(x, dtype=np.float64, copy=False)], # NumPy raises: it needs a copy
    ids=["scalar_ndmin", "order_A", "nested_list", "python_number",
         "cast_without_copy"])
def test_conversions_not_modelled_are_left_to_numpy(fn):
    try:
        want = fn(X)
    except ValueError:
        with pytest.raises(ValueError):
            trace(fn, (X,), {})
        return
    tr = trace(fn, (X,), {})
    assert tr.fallback is not None and "__array__" in tr.fallback.reason
    np.testing.assert_array_equal(np.asarray(tr.result), want)


def test_numpy_constructors_are_numpy_s_own_outside_a_trace():
    originals = np.asarray, np.array, np.asanyarray, np.ascontiguousarray
    trace(lambda x: np.asarray(x) + 1, (X,), {})
    with pytest.raises(ZeroDivisionError):
        trace(lambda x: np.asarray(x) / 0 if 1 / 0 else x, (X,), {})
    assert (np.asarray, np.array, np.asanyarray, np.ascontiguousarray) == originals


def test_unmapped_function_is_a_host_op():
    tr = trace(lambda a: np.linalg.solve(a, a[0]), (X[:4, :4],), {})
    assert tr.fallback is None and tr.graph.nodes[-1].op == "host"
    assert tr.graph.nodes[-1].attr["name"] == "np.linalg.solve"


def test_a_random_draw_runs_eagerly():
    tr = trace(lambda x: x + np.random.normal(size=x.shape), (X,), {})
    assert "from np.random" in tr.fallback.reason and "test_semantics.py" in tr.fallback.reason


def attention(h):
    return h * 2


def block(x, p, n_head):
    return attention(x @ p["attn"]["w"]) + n_head


def test_hints_scope_and_statics():
    p = {"attn": {"w": rng.standard_normal((5, 5)).astype(np.float32)}}
    tr = check(block, X, p, 3)
    assert [v.hint for v in tr.graph.inputs] == ["x", "p.attn.w"]
    assert tr.graph.nodes[1].loc.scope == "block/attention"
    assert "mul" in print_graph(tr.graph)


def test_returning_argument_and_statics():
    tr = check(lambda x, n, s: (x, n, s, x.shape), X, 3, "a")
    assert [leaf.kind for leaf in tr.out_leaves] == ["arg", "const", "const", "const", "const"]
    tr = check(lambda x: x.astype(np.float32), X)
    assert tr.graph.outputs[0] is not tr.graph.inputs[0]  # a fresh array, never the input


def test_pytree_roundtrip():
    tree = {"b": [1, (X, 2.0)], "a": None}
    leaves, treedef = flatten(tree)
    assert leaves[:2] == [1, X] and leaves[2:] == [2.0, None]   # insertion order
    rebuilt = unflatten(treedef, leaves)
    assert list(rebuilt) == ["b", "a"] and rebuilt["b"][1][0] is X and rebuilt["a"] is None
    assert treedef != flatten({"a": None, "b": [1, (X, 2.0)]})[1]   # another signature
    assert [is_traced_leaf(v) for v in (X, np.float32(1), 1.0, True, 1, X.view(np.matrix))] == [
        True, True, True, False, False, False]
