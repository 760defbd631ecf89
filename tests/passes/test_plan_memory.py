"""plan_memory: lifetimes over the schedule, peak bytes, eager peak, arena offsets."""
import numpy as np

from fusejit.ir import Graph, Node, Var, interpret, verify
from fusejit.passes.plan_memory import (
    assign_offsets,
    last_uses,
    lifetimes,
    peak_bytes,
    plan_memory,
    unfused,
    view_parents,
)
from tests.strategies import Program, lit, var

F32_4 = 16  # bytes of an f32[4]


def chain():
    """x -> a -> b -> c: each intermediate dies at the next node."""
    x = var("x", "f32", (4,))
    p = Program(x)
    a = p("exp", x)
    b = p("neg", a)
    c = p("add", b, lit(1.0))
    return p.graph(c), (a, b, c)


def test_last_use_is_the_last_reader_or_the_end_for_outputs():
    g, (a, b, c) = chain()
    assert last_uses(g) == {a: 1, b: 2, c: 3}


def test_unused_value_dies_where_it_is_made():
    x = var("x", "f32", (4,))
    p = Program(x)
    dead = p("exp", x)
    g = p.graph(p("neg", x))
    assert last_uses(g)[dead] == 0


def test_views_keep_their_buffer_alive():
    x = var("x", "f32", (4,))
    p = Program(x)
    a = p("exp", x)
    view = p("reshape", a, shape=(2, 2))
    other = p("neg", x)
    late = p("add", view, p("reshape", other, shape=(2, 2)))
    g = p.graph(late)
    assert view_parents(g)[view] is a
    assert last_uses(g)[a] == 4 and last_uses(g)[view] == 4
    assert view not in lifetimes(g) and lifetimes(g)[a] == (0, 4)


def test_views_of_inputs_are_never_buffers():
    x = var("x", "f32", (4,))
    p = Program(x)
    g = p.graph(p("reshape", x, shape=(2, 2)))
    stats = plan_memory(g).stats
    assert stats["peak_bytes"] == 0 and stats["buffers"] == 0


def test_peak_counts_buffers_live_together_separately():
    g, (a, b, c) = chain()
    spans = lifetimes(g)
    assert spans == {a: (0, 1), b: (1, 2), c: (2, 3)}
    assert peak_bytes(spans) == 2 * F32_4     # a and b both live while node 1 runs


def test_offsets_never_overlap_live_buffers():
    g, (a, b, c) = chain()
    offsets = assign_offsets(lifetimes(g))
    assert offsets == {a: 0, b: F32_4, c: 0}   # c reuses a's bytes: a died at node 1


def test_plan_memory_stats_and_graph_unchanged():
    g, (a, b, c) = chain()
    result = plan_memory(g)
    assert result.graph is g and result.changed is False
    assert result.stats["peak_bytes"] == 2 * F32_4
    assert result.stats["eager_peak_bytes"] == 2 * F32_4
    assert result.stats["buffers"] == 3 and result.stats["arena_bytes"] == 2 * F32_4
    assert result.stats["last_use"] == {a: 1, b: 2, c: 3}


def fused_chain():
    """The chain as one fused node: its intermediates are never materialized."""
    inner, _ = chain()
    x = var("x", "f32", (4,))
    out = Var(inner.outputs[0].type)
    node = Node("fused", (x,), (out,), {"body": inner, "kind": "elementwise", "name": "k0"})
    return Graph("f", (x,), (node,), (out,))


def test_fused_peak_is_below_eager_peak():
    g = fused_chain()
    verify(g)
    stats = plan_memory(g).stats
    assert stats["peak_bytes"] == F32_4 and stats["eager_peak_bytes"] == 2 * F32_4


def test_unfused_inlines_bodies_with_the_same_results():
    g = fused_chain()
    flat = unfused(g)
    verify(flat)
    assert [n.op for n in flat.nodes] == ["exp", "neg", "add"]
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(interpret(flat, x)[0], interpret(g, x)[0])


def test_unfused_copies_body_outputs_no_body_node_defines():
    x = var("x", "f32", (4,))
    body = Graph("k", (x,), (), (x,))
    out = Var(x.type)
    y = var("y", "f32", (4,))
    g = Graph("f", (y,), (Node("fused", (y,), (out,), {"body": body}),), (out,))
    assert [n.op for n in unfused(g).nodes] == ["copy"]
    verify(unfused(g))
