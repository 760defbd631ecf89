"""The printer: deterministic text, user names kept, literals spelled with repr quality."""
import numpy as np
import pytest

from fusejit.ir import Graph, Lit, Loc, Node, Var, indexing, print_graph
from tests.strategies import Program, lit, var


def build():
    x, w = var("x", "f32", (2, 3)), var("w", "f32", (3,))
    p = Program(x, w)
    y = p("add", x, w)
    z = p("mul", lit(0.5), y)
    s = p("sum", z, axes=(1,), keepdims=False)
    v = p("getitem", z, key=indexing.encode((slice(None), slice(None, None, 2))))
    return p.graph(s, v, name="block")


EXPECTED = """\
def block(x: f32[2,3], w: f32[3]) -> (f32[2], f32[2,2]):
  %0: f32[2,3] = add x, w
  %1: f32[2,3] = mul 0.5:f32, %0
  %2: f32[2] = sum %1, axes=(1,), keepdims=False
  %3: f32[2,2] = getitem %1, key=[:, ::2]
  return %2, %3
"""


def test_golden_text():
    assert print_graph(build()) == EXPECTED


def test_same_graph_built_twice_prints_byte_identical():
    assert print_graph(build()).encode() == print_graph(build()).encode()


@pytest.mark.parametrize("value, dtype, text", [
    (0.1, "f32", "0.1:f32"), (0.1, "f64", "0.1:f64"), (-0.0, "f64", "-0.0:f64"),
    (float("nan"), "f32", "nan:f32"), (float("-inf"), "f64", "-inf:f64"),
    (1e-30, "f32", "1e-30:f32"), (1.0, "f16", "1.0:f16"), (3, "i64", "3:i64"),
    (True, "bool", "True:bool"), (1 / 3, "f64", "0.3333333333333333:f64")])
def test_literal_spelling_round_trips(value, dtype, text):
    literal = lit(value, dtype)
    assert literal.text() == text
    if literal.dtype.kind == "f" and not np.isnan(literal.value):
        assert literal.dtype.type(text.split(":")[0]) == literal.value


def test_duplicate_hints_are_renamed_and_locations_printed():
    a, b = var("x", "f32", ()), var("x", "f32", ())
    out = Var(a.type)
    node = Node("add", (a, b), (out,), (), Loc("/src/model.py", 7, "f/g"))
    text = print_graph(Graph("f", (a, b), (node,), (out,)))
    assert text.splitlines()[0] == "def f(x: f32[], %0: f32[]) -> f32[]:"
    assert text.splitlines()[1].endswith("# model.py:7 (f/g)")


def test_attributes_are_sorted():
    node = Node("sum", (var("x", "f32", (2,)),), (Var(lit(0).type),),
                {"keepdims": False, "axes": (0,)})
    assert [name for name, _ in node.attrs] == ["axes", "keepdims"]


def test_fused_bodies_print_nested():
    x = var("x", "f32", (2,))
    inner = Program(var("a", "f32", (2,)))
    body = inner.graph(inner("exp", inner.inputs[0]), name="k0")
    out = Var(x.type)
    node = Node("fused", (x,), (out,), {"body": body, "kind": "elementwise", "name": "k0_exp"})
    text = print_graph(Graph("f", (x,), (node,), (out,)))
    assert "%0: f32[2] = fused k0_exp [elementwise] x" in text
    assert "(a: f32[2]) {" in text and "$0: f32[2] = exp a" in text and "yield $0" in text


def test_literal_outputs_print():
    g = Graph("f", (), (), (Lit(2.5, np.float32),))
    assert print_graph(g) == "def f() -> f32[]:\n  return 2.5:f32\n"
