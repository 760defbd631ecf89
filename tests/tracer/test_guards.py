"""Guards, provenance-carrying floats, host ops and side effects recorded by the tracer."""
import numpy as np
import pytest

from fusejit.ir import interpret
from fusejit.tracer import trace
from fusejit.tracer.guards import MAX_GUARDS

from .helpers import replay

rng = np.random.default_rng(4)
X = rng.standard_normal((4, 5)).astype(np.float32)
A = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float64)


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def test_if_on_data_records_a_bool_guard_with_line():
    tr = trace(branchy, (X,), {})
    assert tr.fallback is None
    (guard,) = tr.guards
    assert guard.convert == "bool" and guard.expected == bool(X.sum() > 0)
    assert guard.loc.code == "if x.sum() > 0:"
    out = interpret(tr.graph, X)
    assert bool(out[guard.output]) is guard.expected


def iterate(x, tol):
    err = np.abs(x).max()
    while err > tol:
        x = x * 0.5
        err = np.abs(x).max()
    return x


def test_while_loop_records_one_guard_per_test():
    tr = trace(iterate, (X, 0.3), {})
    assert tr.fallback is None and len(tr.guards) >= 3
    assert [g.expected for g in tr.guards][-1] is False
    assert all(g.loc.code == "while err > tol:" for g in tr.guards)


def test_returned_float_is_an_output_not_a_guard():
    tr = trace(lambda x: float((x * x).sum()), (X,), {})
    assert tr.fallback is None and tr.guards == ()
    (leaf,) = tr.out_leaves
    assert leaf.kind == "value" and leaf.pyfloat
    (got,), _ = replay(tr, [X * 3])
    assert type(got) is float and got == float((X * 3 * (X * 3)).sum())


def test_float_used_in_a_branch_is_guarded():
    tr = trace(lambda x: x if float(x.sum()) > 0 else -x, (X,), {})
    assert [g.convert for g in tr.guards] == ["float"]
    assert tr.guards[0].expected == float(X.sum())


def logs(x, out):
    loss = (x * x).mean()
    print(f"loss {loss.item():.3f}", file=out)
    print("loss %.3f" % loss.item(), file=out)  # noqa: UP031 - %-formatting must not guard
    return loss.item()


def test_item_printed_and_returned_records_no_guard(capsys):
    import sys
    tr = trace(logs, (X, sys.stdout), {})
    assert tr.fallback is None and tr.guards == ()
    assert tr.out_leaves[0].pyfloat and type(tr.result) is float
    assert "loss" in capsys.readouterr().out


def test_traced_float_arithmetic_keeps_tracing():
    tr = trace(lambda x: (x.sum().item() * 2 + 1, x * x.max().item()), (X,), {})
    assert tr.fallback is None and tr.guards == ()
    assert tr.out_leaves[0].pyfloat and not tr.out_leaves[1].pyfloat
    got, _ = replay(tr, [X + 1])
    assert got[0] == (X + 1).sum().item() * 2 + 1
    np.testing.assert_array_equal(got[1], (X + 1) * (X + 1).max().item())


def test_int_and_index_guard():
    tr = trace(lambda x: x[int(np.argmax(x[0]))], (X,), {})
    assert [g.convert for g in tr.guards] == ["int"]
    assert tr.guards[0].expected == int(np.argmax(X[0]))


def policy(r):
    total = r[0] * 0
    for t in range(1000):
        if r[t] != 0:
            total = total + r[t]
    return total


def test_thousand_step_branching_loop_falls_back():
    r = np.zeros(1000)
    r[::7] = 1.0
    tr = trace(policy, (r,), {})
    assert tr.fallback is not None and "too many data-dependent branches" in tr.fallback.reason
    assert str(MAX_GUARDS) in tr.fallback.reason and tr.result == policy(r)


def solve_sort(a, b):
    h = np.exp(a) * 0.1 + np.eye(4)
    x = np.linalg.solve(h, b)
    return np.sort(x * 2)[::-1] + 1


def test_host_ops_between_kernels():
    b = rng.standard_normal(4)
    tr = trace(solve_sort, (A, b), {})
    assert tr.fallback is None and tr.guards == ()
    ops = [n.op for n in tr.graph.nodes]
    hosts = [n.attr["name"] for n in tr.graph.nodes if n.op == "host"]
    assert hosts == ["np.linalg.solve", "np.sort"]
    first, second = (ops.index("host"), len(ops) - 1 - ops[::-1].index("host"))
    assert "exp" in ops[:first] and "mul" in ops[first:second] and "add" in ops[second:]
    (got,), _ = replay(tr, [A * 2, b])
    np.testing.assert_allclose(got, solve_sort(A * 2, b))


def test_mask_read_is_a_host_op_whose_shape_is_not_guarded():
    tr = trace(lambda x: x[x > 0] * 2, (X,), {})
    assert tr.guards == () and [n.op for n in tr.graph.nodes].count("host") == 2
    other = X + 1    # another count of positive elements: the same program, NumPy's answer
    assert (other > 0).sum() != (X > 0).sum()
    (got,), _ = replay(tr, [other])
    np.testing.assert_array_equal(got, other[other > 0] * 2)


def test_mask_read_whose_length_python_reads_keeps_a_shape_guard():
    def scaled(x):
        v = x[x > 0]
        return v * len(v)
    tr = trace(scaled, (X,), {})
    node = next(n for n in tr.graph.nodes if n.op == "host")
    (guard,) = tr.guards
    assert guard.convert == "shape" and guard.expected == ((X > 0).sum(),)
    assert tr.graph.outputs[guard.output] is node.outputs[0]
    (got,), _ = replay(tr, [X])
    np.testing.assert_array_equal(got, X[X > 0] * int((X > 0).sum()))


def test_mask_write_is_a_setitem():
    def clamp(h):
        h = h * 1
        h[h < 0] = 0
        return h
    tr = trace(clamp, (X,), {})
    assert tr.guards == () and "setitem" in [n.op for n in tr.graph.nodes]


def test_unique_and_nonzero_results_keep_numpys_shapes():
    fn = lambda x: (np.unique(np.round(x)), *np.nonzero(x > 0))  # noqa: E731
    tr = trace(fn, (X,), {})
    assert tr.fallback is None and tr.guards == ()
    other = np.round(X * 3) + 0.5    # other counts of unique values and of positive ones
    assert (other > 0).sum() != (X > 0).sum() and len(np.unique(np.round(other))) != len(
        np.unique(np.round(X)))
    got, _ = replay(tr, [other])
    for g, e in zip(got, fn(other), strict=True):
        np.testing.assert_array_equal(g, e)


def test_file_io_in_body_falls_back(tmp_path):
    tr = trace(lambda x: np.save(tmp_path / "x.npy", x), (X,), {})
    assert tr.fallback is not None and "replayed" in tr.fallback.reason


def test_object_array_in_body_falls_back():
    objs = np.array([1, "a"], dtype=object)
    tr = trace(lambda x: x[0] + objs[:1].size, (X,), {})
    assert tr.fallback is None  # .size is static; reading the object array as data falls back
    tr = trace(lambda x: np.concatenate([x[0], objs]), (X,), {})
    assert tr.fallback is not None and "object" in tr.fallback.reason


def test_exception_in_body_propagates():
    with pytest.raises(ValueError, match="matmul"):
        trace(lambda x: x @ x, (X,), {})


class Model:
    def __init__(self):
        self.w = [X.copy(), X[0].copy()]
        self.history = []

    def step(self, g):
        self.w = [w - 0.1 * g if w.ndim == 2 else w - g[0] for w in self.w]
        return self.w[0].sum()

    def log(self, g):
        self.history.append(g.sum())
        return g


def test_attribute_rebinding_is_recorded():
    model = Model()
    w0 = [w.copy() for w in model.w]
    tr = trace(Model.step, (model, X), {})
    assert tr.fallback is None
    (write,) = tr.attr_writes
    assert write.leaf == 0 and write.name == "w" and len(write.outputs) == 2
    assert all(type(w) is np.ndarray for w in model.w)
    assert [c.description for c in tr.captures] == ["self.w[0]", "self.w[1]"]
    out = interpret(tr.graph, X, *w0)
    np.testing.assert_array_equal(out[write.outputs[0]], model.w[0])


def test_list_append_falls_back():
    model = Model()
    tr = trace(Model.log, (model, X), {})
    assert tr.fallback is not None and "replay would lose" in tr.fallback.reason
    assert type(model.history[0]) is np.float32
