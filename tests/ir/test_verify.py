"""verify(): broken IR is rejected with a VerifyError that says what is wrong."""
import numpy as np
import pytest

from fusejit.errors import VerifyError
from fusejit.ir import Graph, Node, TensorType, Var, verify
from tests.strategies import Program, lit, var


def test_valid_graph_passes():
    x = var("x", "f32", (2,))
    p = Program(x)
    g = p.graph(p("exp", x))
    assert verify(g) is g


def test_use_before_definition():
    x = var("x", "f32", (2,))
    a, b = Var(x.type), Var(x.type)
    nodes = (Node("exp", (a,), (b,)), Node("neg", (x,), (a,)))
    with pytest.raises(VerifyError, match="uses .* before definition"):
        verify(Graph("f", (x,), nodes, (b,)))


def test_double_definition():
    x = var("x", "f32", (2,))
    a = Var(x.type)
    nodes = (Node("exp", (x,), (a,)), Node("neg", (x,), (a,)))
    with pytest.raises(VerifyError, match="defined twice"):
        verify(Graph("f", (x,), nodes, (a,)))


def test_redefining_an_input():
    x = var("x", "f32", (2,))
    with pytest.raises(VerifyError, match="defined twice"):
        verify(Graph("f", (x,), (Node("exp", (x,), (x,)),), (x,)))


@pytest.mark.parametrize("shape, dtype", [((2,), "float64"), ((1, 2), "float32")])
def test_wrong_output_type(shape, dtype):
    x = var("x", "f32", (2,))
    out = Var(TensorType(shape, np.dtype(dtype)))
    with pytest.raises(VerifyError, match="outputs typed .* but the op gives f32"):
        verify(Graph("f", (x,), (Node("exp", (x,), (out,)),), (out,)))


def test_wrong_arity():
    x = var("x", "f32", (2,))
    out = Var(x.type)
    with pytest.raises(VerifyError, match="2 operands, expected 1"):
        verify(Graph("f", (x,), (Node("exp", (x, x), (out,)),), (out,)))


def test_unknown_op_and_undefined_output():
    x = var("x", "f32", (2,))
    out = Var(x.type)
    with pytest.raises(VerifyError, match="unknown op 'frobnicate'"):
        verify(Graph("f", (x,), (Node("frobnicate", (x,), (out,)),), (out,)))
    with pytest.raises(VerifyError, match="never defined"):
        verify(Graph("f", (x,), (), (out,)))


def test_operands_numpy_rejects():
    a, b = var("a", "f32", (2,)), var("b", "f32", (3,))
    out = Var(a.type)
    with pytest.raises(VerifyError, match="ValueError"):
        verify(Graph("f", (a, b), (Node("add", (a, b), (out,)),), (out,)))


def test_fused_body_mismatch_names_the_node():
    x = var("x", "f32", (2,))
    inner = Program(var("a", "f64", (2,)))
    body = inner.graph(inner("exp", inner.inputs[0]))
    out = Var(x.type)
    node = Node("fused", (x,), (out,), {"body": body})
    with pytest.raises(VerifyError, match="node 0: fused inputs"):
        verify(Graph("f", (x,), (node,), (out,)))


def test_where_names_the_pass():
    x = var("x", "f32", (2,))
    with pytest.raises(VerifyError, match="after pass fold: f: "):
        verify(Graph("f", (x,), (), (Var(x.type),)), where="pass fold")
    assert lit(1.0).type.shape == ()
