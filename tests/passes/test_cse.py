"""cse: structural hashing on (op, operands, attrs); literals and float attrs by their bytes."""
import numpy as np

from fusejit.ir import print_graph, verify
from fusejit.passes.cse import cse, freeze
from tests.strategies import Program, lit, var


def lines(graph) -> str:
    result = cse(graph)
    verify(result.graph)
    return "\n".join(line.strip() for line in print_graph(result.graph).splitlines()[1:])


def program():
    x = var("x", "f32", (3,))
    return x, Program(x)


def test_equal_nodes_merge_into_the_first():
    x, p = program()
    g = p.graph(p("add", p("exp", x), p("exp", x)))
    assert lines(g) == "%0: f32[3] = exp x\n%1: f32[3] = add %0, %0\nreturn %1"
    assert cse(g).stats == {"merged": 1}


def test_merging_cascades_to_users():
    x, p = program()
    a, b = p("exp", x), p("exp", x)
    g = p.graph(p("mul", p("neg", a), p("neg", b)))
    assert lines(g) == ("%0: f32[3] = exp x\n%1: f32[3] = neg %0\n%2: f32[3] = mul %1, %1\n"
                        "return %2")


def test_literals_compare_by_bytes():
    x, p = program()
    g = p.graph(p("mul", p("add", x, lit(0.0)), p("add", x, lit(-0.0))))
    assert not cse(g).changed


def test_attrs_matter():
    t = var("t", "f32", (2, 3))
    p = Program(t)
    g = p.graph(p("add", p("sum", t, axes=(0,), keepdims=True),
                  p("sum", t, axes=(1,), keepdims=True)))
    assert not cse(g).changed


def test_full_nodes_with_equal_attrs_merge_and_signed_zeros_do_not():
    p = Program()
    f32 = np.dtype("float32")
    zero = p("full", shape=(2,), dtype=f32, value=0.0)
    again = p("full", shape=(2,), dtype=f32, value=0.0)
    negative = p("full", shape=(2,), dtype=f32, value=-0.0)
    g = p.graph(p("add", p("add", zero, again), negative))
    assert cse(g).stats == {"merged": 1}


def test_two_returned_results_stay_two_arrays():
    x, p = program()
    g = p.graph(p("exp", x), p("exp", x))
    assert not cse(g).changed


def test_freeze_tells_apart_what_python_equality_conflates():
    assert freeze(0.0) != freeze(-0.0)
    assert freeze(1) != freeze(1.0) != freeze(True)
    assert freeze((("value", 1.5),)) == freeze((("value", 1.5),))


def test_host_calls_are_never_merged_with_each_other():
    """Regression: two different opaque calls once shared the "not pure" key and merged."""
    import numpy as np

    from fusejit.ir import Graph, Node, TensorType, Var
    from fusejit.passes.cse import cse

    x = Var(TensorType((3,), np.float64), "x")
    a, b = Var(x.type), Var(x.type)
    nodes = [Node("host", [x], [a], {"fn": np.sort, "name": "np.sort", "spec": (), "nout": 1}),
             Node("host", [x], [b], {"fn": np.cumsum, "name": "np.cumsum", "spec": (),
                                     "nout": 1})]
    result = cse(Graph("f", [x], nodes, [a, b]))
    assert not result.changed and len(result.graph.nodes) == 2
