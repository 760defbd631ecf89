"""sink_splits (run by fuse): a split of an elementwise result moves to the result's operands when
every piece feeds elementwise work, so the producer fuses with the pieces' users; the results
are bit-identical to the unfused graph's."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusejit.ir import interpret, verify
from fusejit.passes.fuse import fuse
from fusejit.passes.sink_splits import sink_splits
from tests.passes.test_fuse import Builder, fused_nodes, lit, rand


def check_identical(before, after, *args):
    verify(after)
    for got, want in zip(interpret(after, *args), interpret(before, *args), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def lstm_gates_graph(n=4, h=8):
    """z = x@w + u@v + b split into four gates, as in an LSTM cell."""
    b = Builder()
    x, w, u, v = b.arg((n, 6)), b.arg((6, 4 * h)), b.arg((n, 5)), b.arg((5, 4 * h))
    bias, c = b.arg((4 * h,)), b.arg((n, h))
    z = b("add", b("add", b("matmul", x, w), b("matmul", u, v)), bias)
    i, f, g, o = b("split", z, axis=1, indices=(h, 2 * h, 3 * h))
    sig = lambda t: b("div", lit(1.0), b("add", lit(1.0), b("exp", b("neg", t))))  # noqa: E731
    c2 = b("add", b("mul", sig(f), c), b("mul", sig(i), b("tanh", g)))
    out = b("mul", sig(o), b("tanh", c2))
    args = (rand(n, 6), rand(6, 4 * h), rand(n, 5), rand(5, 4 * h), rand(4 * h), rand(n, h))
    return b.graph(out, c2), args


def test_lstm_gates_and_their_preactivation_are_one_kernel():
    graph, args = lstm_gates_graph()
    result = fuse(graph)
    assert result.stats["sunk_splits"] == 2   # (a + b) + bias: two levels
    assert [n.op for n in result.graph.nodes] == ["matmul", "matmul", "split", "split",
                                                  "split", "fused"]
    (kernel,) = fused_nodes(result.graph)
    assert len(kernel.inputs) == 4 + 4 + 4 + 1   # pieces of both products and the bias, c
    check_identical(graph, result.graph, *args)


def test_operand_broadcast_along_the_split_axis_is_used_whole():
    b = Builder()
    x, col, row = b.arg((6, 8)), b.arg((6, 1)), b.arg((8,))
    left, right = b("split", b("mul", b("add", x, col), row), axis=1, indices=(3,))
    graph = b.graph(b("exp", left), b("sqrt", b("abs", right)))
    sunk, count = sink_splits(graph)
    assert count == 2
    splits = [n for n in sunk.nodes if n.op == "split"]
    assert [n.inputs[0] for n in splits] == [x, row]     # col (size 1 on axis 1) is not split
    assert splits[1].attr["axis"] == 0                   # row's own axis
    assert len(fused_nodes(fuse(graph).graph)) == 2   # one per piece (3 before sinking)
    check_identical(graph, sunk, rand(6, 8), rand(6, 1), rand(8))


def test_one_bias_split_serves_every_unrolled_step():
    b = Builder()
    bias = b.arg((8,))
    outs = []
    for _ in range(3):
        x = b.arg((2, 8))
        lo, hi = b("split", b("add", x, bias), axis=1, indices=(4,))
        outs.append(b("mul", lo, hi))
    graph = b.graph(*outs)
    sunk, count = sink_splits(graph)
    assert count == 3
    assert sum(n.op == "split" and n.inputs[0] is bias for n in sunk.nodes) == 1
    check_identical(graph, sunk, rand(8), rand(2, 8), rand(2, 8), rand(2, 8))


@pytest.mark.parametrize("case", ["piece feeds matmul", "piece returned", "result used twice",
                                  "piece broadcast up", "piece unused"])
def test_split_stays_where_sinking_would_not_fuse(case):
    b = Builder()
    x, y, w = b.arg((4, 6)), b.arg((4, 6)), b.arg((3, 5))
    s = b("add", x, y)
    left, right = b("split", s, axis=1, indices=(3,))
    outs = [b("exp", right)]
    if case == "piece feeds matmul":
        outs.append(b("matmul", left, w))
    elif case == "piece returned":
        outs.append(left)
    elif case == "result used twice":
        outs += [b("exp", left), b("neg", s)]
    elif case == "piece broadcast up":
        outs.append(b("add", b("reshape", left, shape=(1, 4, 3)), b.arg((2, 4, 3))))
    graph = b.graph(*outs)
    sunk, count = sink_splits(graph)
    assert count == 0 and sunk is graph


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_sinking_random_splits_keeps_every_bit(data):
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    axis = data.draw(st.integers(0, rank - 1))
    cuts = sorted(data.draw(st.lists(st.integers(0, shape[axis]), min_size=1, max_size=3)))
    b = Builder()
    operands, values = [], []
    for _ in range(data.draw(st.integers(1, 3))):   # each operand's shape broadcasts to ``shape``
        drop = data.draw(st.integers(0, rank - 1))
        keep = [d if data.draw(st.booleans()) else 1 for d in shape[drop:]]
        operands.append(b.arg(tuple(keep)))
        values.append(rand(*keep) if keep else np.float32(rand(1)[0]).reshape(()))
    full = b.arg(shape)
    values.append(rand(*shape))
    op = data.draw(st.sampled_from(["add", "mul", "sub", "max"]))
    result = full
    for operand in operands:
        result = b(op, result, operand)
    pieces = b("split", b("tanh", result), axis=axis, indices=tuple(cuts))
    consumers = ["exp", "neg", "sum"]
    outs = []
    for piece in pieces:
        which = data.draw(st.sampled_from(consumers))
        outs.append(b(which, piece, axes=tuple(range(rank)), keepdims=False)
                    if which == "sum" else b(which, piece))
    graph = b.graph(*outs)
    sunk, count = sink_splits(graph)
    assert count >= 1
    check_identical(graph, sunk, *values)
    check_identical(graph, fuse(graph).graph, *values)
