"""dce: backward liveness from the graph's outputs."""
from fusejit.ir import print_graph
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
