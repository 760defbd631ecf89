"""canonicalize: identity forwarding that keeps what callers can observe; literals last."""
import numpy as np
import pytest

from fusejit.ir import print_graph, verify
from fusejit.passes.canonicalize import canonicalize
from tests.strategies import Program, lit, var


def lines(graph) -> str:
    result = canonicalize(graph)
    verify(result.graph)
    return "\n".join(line.strip() for line in print_graph(result.graph).splitlines()[1:])


def program():
    x = var("x", "f32", (2, 3))
    return x, Program(x)


@pytest.mark.parametrize("op, attrs", [
    ("cast", {"dtype": np.dtype("float32")}), ("reshape", {"shape": (2, 3)}),
    ("permute", {"perm": (0, 1)}), ("broadcast", {"shape": (2, 3)}),
    ("expand_dims", {"axes": ()}), ("squeeze", {"axes": ()}), ("copy", {})])
def test_identity_ops_are_forwarded(op, attrs):
    x, p = program()
    g = p.graph(p("exp", p(op, x, **attrs)))
    assert lines(g) == "%0: f32[2,3] = exp x\nreturn %0"
    assert sum(canonicalize(g).stats.values()) == 1


def test_non_identity_permute_of_equal_dims_stays():
    s = var("s", "f32", (2, 2))
    p = Program(s)
    g = p.graph(p("exp", p("permute", s, perm=(1, 0))))
    assert not canonicalize(g).changed


@pytest.mark.parametrize("op", ["copy", "cast"])
def test_returned_copy_stays_a_fresh_array(op):
    x, p = program()
    attrs = {"dtype": np.dtype("float32")} if op == "cast" else {}
    t = p("exp", x)
    g = p.graph(p(op, t, **attrs))
    assert not canonicalize(g).changed


def test_returned_copy_under_a_view_stays():
    x, p = program()
    g = p.graph(p("reshape", p("copy", x), shape=(6,)))
    assert not canonicalize(g).changed


def test_c_ordered_copy_of_a_transpose_stays():
    # x.T.copy() * 2: NumPy lays the product out C-ordered, as the copy is
    x, p = program()
    g = p.graph(p("exp", p("copy", p("permute", x, perm=(1, 0)), order="C")))
    assert not canonicalize(g).changed


def test_f_ordered_copy_is_a_c_ordered_copy_of_the_transpose_transposed_back():
    x, p = program()
    g = p.graph(p("exp", p("copy", x, order="F")))
    assert lines(g) == ("%0: f32[3,2] = permute x, perm=(1, 0)\n"
                        "%1: f32[3,2] = copy %0, order='C'\n"
                        "%2: f32[2,3] = permute %1, perm=(1, 0)\n"
                        "%3: f32[2,3] = exp %2\nreturn %3")


def test_returned_identity_view_of_an_input_is_forwarded():
    # eager NumPy already returned a view of the caller's array here
    x, p = program()
    g = p.graph(p("reshape", x, shape=(2, 3)))
    assert lines(g) == "return x"


def test_literal_moves_last_in_commutative_ops():
    x, p = program()
    g = p.graph(p("add", lit(0.5), x), p("sub", lit(0.5), x))
    assert lines(g) == ("%0: f32[2,3] = add x, 0.5:f32\n%1: f32[2,3] = sub 0.5:f32, x\n"
                        "return %0, %1")


def test_float_max_keeps_its_operand_order():
    # np.maximum(-0.0, 0.0) is 0.0 but np.maximum(0.0, -0.0) is -0.0
    x, p = program()
    g = p.graph(p("max", lit(0.0), x))
    assert not canonicalize(g).changed


def test_integer_max_takes_its_literal_last():
    n = var("n", "i64", (3,))
    p = Program(n)
    g = p.graph(p("max", lit(0, "i64"), n))
    assert lines(g) == "%0: i64[3] = max n, 0:i64\nreturn %0"
