"""dce: backward liveness from the graph's outputs."""
import numpy as np

from fusejit.ir import Node, indexing, print_graph
from fusejit.passes.dce import dce, live_nodes
from tests.strategies import Program, lit, var


def test_live_nodes_follow_operands_backwards():
    x = var("x", "f32", (3,))
    p = Program(x)
    used = p("exp", x)
    p("neg", x)                      # 1: dead
    result = p("add", used, lit(1.0))
    p("mul", result, result)         # 3: dead, reads a live value
    assert live_nodes(p.graph(result)) == {0, 2}


def test_live_nodes_of_a_graph_returning_inputs_and_literals():
    x = var("x", "f32", (3,))
    p = Program(x)
    p("exp", x)
    assert live_nodes(p.graph(x, lit(2.0))) == set()


def test_multi_output_node_is_live_when_one_output_is():
    x = var("x", "f32", (4,))
    p = Program(x)
    left, _right = p("split", x, indices=(2,), axis=0)
    assert live_nodes(p.graph(left)) == {0}


def test_dce_removes_dead_nodes():
    x = var("x", "f32", (3,))
    p = Program(x)
    p("neg", x)
    g = p.graph(p("exp", x))
    result = dce(g)
    assert result.changed and result.stats == {"removed": 1}
    assert print_graph(result.graph) == (
        "def f(x: f32[3]) -> f32[3]:\n  %0: f32[3] = exp x\n  return %0\n")
    assert dce(result.graph).changed is False


def test_a_dead_write_with_an_index_array_stays_it_may_raise_index_error():
    x, idx = var("x", "f32", (4,)), var("idx", "i64", (2,))
    p = Program(x, idx)
    h = p("exp", x)
    p("setitem", h, lit(0.0), idx, key=indexing.encode(np.array([0, 1]), []))  # 1: h[idx] = 0
    p("setitem", h, lit(0.0), key=indexing.encode(0))                          # 2: dead
    p("gather", x, idx, key=indexing.encode(np.array([0, 1]), []))            # 3: x[idx]
    assert live_nodes(p.graph(x)) == {0, 1, 3}


def test_a_dead_opaque_call_stays_unless_it_reads_through_a_mask():
    x = var("x", "f32", (3, 3))
    p = Program(x)
    inverse, masked = var("inverse", "f32", (3, 3)), var("masked", "f32", (4,))
    mask = p("gt", x, lit(0.0))
    p.nodes.append(Node("host", (x,), (inverse,), (("name", "np.linalg.inv"),)))
    p.nodes.append(Node("host", (x, mask), (masked,), (("name", "getitem"),)))
    assert live_nodes(p.graph(x)) == {1}
