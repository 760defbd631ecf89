"""A reshape or ravel is a view or a copy by its operand's strides, which the cache key does not
hold: a path that rests on such a decision is taken only for arguments laid out as when it was
traced (``tracer/layouts.py``); others trace a path of their own and get NumPy's answer."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


def c_ordered():
    return np.arange(6.0).reshape(2, 3)


def transposed():
    return np.arange(6.0).reshape(3, 2).T      # the same shape and dtype, F-ordered


def column_slice():
    return np.arange(12.0).reshape(2, 6)[:, ::2]


def _read_after_write(x):
    flat = x.reshape(-1)     # a view of a C-ordered x: sees the write below; else a copy
    x *= 2
    return flat.sum()


def _write_through_ravel(x):
    x.ravel()[:] = 0         # reaches x only when ravel gave a view
    return x


def _reshaped_intermediate(x):
    t = x + 1                # laid out as x is (NumPy's ufuncs keep their input's layout)
    r = t.reshape(-1)
    t += 10
    return r


def _no_copy_allowed(x):
    return np.reshape(x, -1, copy=False) * 2   # NumPy raises where a copy is needed


LAYOUTS = [c_ordered, transposed, column_slice]


@pytest.mark.parametrize("fn", [_read_after_write, _write_through_ravel, _reshaped_intermediate],
                         ids=lambda fn: fn.__name__.strip("_"))
@pytest.mark.parametrize("traced", LAYOUTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("replayed", LAYOUTS, ids=lambda f: f.__name__)
def test_a_view_or_copy_decision_follows_the_calls_layout(fn, traced, replayed):
    # Found by a probe: a path traced on one layout replayed on another (15 for 30, a write
    # through ravel lost, a reshaped intermediate seeing a later update).
    compiled = fusejit.compile(fn)
    for make in (traced, traced, replayed, replayed, traced):
        x, expected_x = make(), make()
        expected = fn(expected_x)
        assert_same(expected, compiled(x))
        assert_same(expected_x, x)


@pytest.mark.parametrize("fn", [_read_after_write, _reshaped_intermediate],
                         ids=lambda fn: fn.__name__.strip("_"))
def test_each_layout_gets_a_path_of_its_own(fn):
    compiled = fusejit.compile(fn)
    for make in (c_ordered, c_ordered, transposed, transposed, column_slice, c_ordered):
        compiled(make())
    info = compiled.cache_info()
    assert (info["paths"], info["traces"], info["hits"], info["eager_calls"]) == (3, 3, 3, 0)


def _reduced(x):
    s = x.sum(axis=1)        # NumPy keeps x's order: F-ordered for an F-ordered 3-d x
    flat = s.reshape(-1)
    s *= 2
    return flat


def _made_like(x):
    y = np.ones_like(x)      # laid out as x, though it reads none of x
    flat = y.reshape(-1)
    y *= 2
    return flat


def _contracted(x):
    y = np.einsum("ijk,k->ij", x, np.ones(5))   # laid out as its operands
    flat = y.reshape(-1)
    y *= 2
    return flat


@pytest.mark.parametrize("fn", [_reduced, _made_like, _contracted],
                         ids=lambda fn: fn.__name__.strip("_"))
def test_values_laid_out_as_an_argument_without_elementwise_ops_follow_it(fn):
    # Found by a second probe: a reduction, a *_like array and an einsum result are laid out
    # as their operands in NumPy, so their reshape is a copy for an F-ordered argument.
    compiled = fusejit.compile(fn)
    for order in "CCFFC":
        x = np.arange(60.0).reshape(3, 4, 5, order=order)
        assert_same(fn(x.copy(order="K")), compiled(x.copy(order="K")))
    assert compiled.cache_info()["paths"] == 2


def test_a_reshape_numpy_refuses_without_a_copy_raises_for_that_layout():
    compiled = fusejit.compile(_no_copy_allowed)
    assert_same(_no_copy_allowed(c_ordered()), compiled(c_ordered()))
    compiled(c_ordered())
    with pytest.raises(ValueError, match="Unable to avoid creating a copy"):
        compiled(transposed())


def test_explain_names_the_arguments_whose_layout_a_path_keeps():
    def f(x, b, w):
        y = (x + b).reshape(-1)   # rests on x's and b's layouts, not on w's (a product's
        return y, (x @ w).reshape(-1)   # result is C-ordered whatever w is)

    x, b, w = c_ordered(), np.ones(3), np.ones((3, 4))
    compiled = fusejit.compile(f)
    compiled(x, b, w)
    text = str(compiled.explain(x, b, w))
    assert "x C-contiguous, as traced" in text and "b C-contiguous, as traced" in text
    assert "w C-contiguous" not in text
    compiled(x, b, np.ones((3, 8))[:, ::2])       # w laid out otherwise: the same path
    assert compiled.cache_info()["paths"] == 1


def test_reshapes_that_only_add_or_drop_unit_axes_keep_no_layout():
    compiled = fusejit.compile(lambda x: x.reshape(2, 1, 3) * 2)
    compiled(c_ordered())
    assert_same(column_slice().reshape(2, 1, 3) * 2, compiled(column_slice().copy()))
    assert_same(column_slice().reshape(2, 1, 3) * 2, compiled(column_slice()))
    assert compiled.cache_info()["paths"] == 1   # (a transposed argument keys apart)


STATE = c_ordered()


def _reshaped_global(y):
    flat = STATE.reshape(-1)     # a view of a C-ordered STATE: sees the write below
    STATE[...] = y
    return flat * 1


def test_a_captured_global_rebound_to_another_layout_traces_its_own_path():
    # Found by the second probe: the global's layout was not kept, so the replay on an
    # F-ordered STATE returned zeros where NumPy's copy kept 0, 1, 2.
    global STATE
    compiled = fusejit.compile(_reshaped_global)
    for make in (c_ordered, c_ordered, transposed, transposed, c_ordered):
        STATE = make()
        got, got_state = compiled(np.zeros((2, 3))), STATE
        STATE = make()
        assert_same(_reshaped_global(np.zeros((2, 3))), got)
        assert_same(STATE, got_state)
    assert compiled.cache_info()["paths"] == 2
    assert "STATE C-contiguous, as traced" in str(compiled.explain(np.zeros((2, 3))))
