"""What a proxy cannot answer as its value does: ``type(x)``, ``hasattr(lr, "__array__")`` of a
float's proxy, ``... is np.True_``. In the body and the helpers traced as copies, ``type`` and
``hasattr`` answer for the value and the program stays compiled; elsewhere, and for identity,
the signature runs eagerly. Either way every call, the traced one included, returns what eager
NumPy returns."""
import sys

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


def is_array(value):
    return type(value) is np.ndarray


class Model:
    def __init__(self):
        self.w = np.linspace(-1, 1, 6)

    def forward(self, x):
        w = self.w
        return x * w if type(w) is np.ndarray else x

    def named(self, x):
        return x * 2 if type(self).__name__ == "Model" else x


def type_is(x, lr):
    return x * 2 if type(x) is np.ndarray else x


def type_equals(x, lr):
    return x * 2 if type(x) == np.ndarray else x  # noqa: E721


def type_name(x, lr):
    return x * 2 if type(x).__name__ == "ndarray" else x


def type_of_an_expression(x, lr):
    return x * 2 if type(x.sum()) is np.float64 and type(x[0]) is np.float64 else x


def type_of_a_float(x, lr):
    return x * lr if type(lr) is float else x


def hasattr_array(x, lr):
    return x if hasattr(lr, "__array__") else x * lr


def through_a_helper(x, lr):
    return x * 2 if is_array(x) else x


def type_as_a_value(x, lr):
    return x * 2 if isinstance(int, type) and not isinstance(x, type) else x


def items_of_containers(xs, p):
    return xs[0] * p["w"] if type(xs[0]) is np.ndarray else xs[0]


@pytest.mark.parametrize("body", [type_is, type_equals, type_name, type_of_an_expression,
                                  type_of_a_float, hasattr_array, through_a_helper,
                                  type_as_a_value])
def test_type_and_hasattr_answer_for_the_value_and_the_program_stays_compiled(body):
    compiled = fusejit.compile(body)
    for scale in (1.0, -2.0, 3.0):
        x = np.linspace(0.5, 1, 6) * scale
        assert_same(body(x, 0.5), compiled(x, 0.5))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2


def test_in_methods_and_on_items_of_argument_containers():
    model = Model()
    xs, p = [np.ones(3), np.arange(3.0)], {"w": np.arange(3.0)}
    for fn, args in ((model.forward, (np.ones(6),)), (items_of_containers, (xs, p))):
        compiled = fusejit.compile(fn)
        for _ in range(3):
            assert_same(fn(*args), compiled(*args))
        assert compiled.cache_info()["eager_calls"] == 0


def test_type_of_what_holds_no_traced_value():
    model = Model()
    compiled = fusejit.compile(model.named)
    for _ in range(3):
        assert_same(model.named(np.ones(6)), compiled(np.ones(6)))
    assert compiled.cache_info()["eager_calls"] == 0


# Code fusejit does not trace as a copy (a function handed in, here a default argument) sees
# Python's own type(): found before its line runs, so the traced call answers as eagerly too.
def handed_in(x, lr, check=lambda v: type(v) is np.ndarray):
    return x * 2 if check(x) else x


def handed_in_on_items(xs, out, check=lambda v: type(v).__name__ == "ndarray"):
    for x in xs:
        if check(x):
            out.append(x * 2)
    return len(out)


def identity(x, lr):
    return x * 2 if (x.sum() > 0) is np.True_ else x


@pytest.mark.parametrize("body, reason", [(handed_in, "type()"), (identity, "identity")])
def test_forms_python_answers_for_the_proxy_run_the_signature_eagerly(body, reason):
    compiled = fusejit.compile(body)
    x = np.linspace(0.5, 1, 6)
    for _ in range(3):
        assert_same(body(x, 0.5), compiled(x, 0.5))
    assert compiled.cache_info()["eager_calls"] == 2
    status = str(compiled.explain(x, 0.5)).splitlines()[1]
    assert "runs eagerly" in status and reason in status and "test_type_checks.py" in status


def test_a_loop_over_a_list_of_arrays_checked_by_code_handed_in():
    compiled = fusejit.compile(handed_in_on_items)
    xs = [np.ones(3), np.arange(3.0)]
    eager_out, compiled_out = [], []
    for _ in range(3):
        assert handed_in_on_items(xs, eager_out) == compiled(xs, compiled_out)
    assert len(compiled_out) == 6 and all(type(v) is np.ndarray for v in compiled_out)
    assert all(type(v) is np.ndarray for v in xs)   # the caller's arrays, not proxies


@pytest.mark.parametrize("body", [
    lambda x, lr: x * 2 if isinstance(x, np.ndarray) else x,
    lambda x, lr: x * lr if isinstance(lr, float) else x,
    lambda x, lr: x * 2 if x.__class__ is np.ndarray else x,
    lambda x, lr: x if hasattr(lr, "shape") else x * lr,
    lambda x, lr: x * 2 if (x.sum() > 0) is not None else x,
])
def test_what_proxies_answer_as_values_do_still_compiles(body):
    compiled = fusejit.compile(body)
    x = np.linspace(0.5, 1, 6)
    for _ in range(3):
        assert_same(body(x, 0.5), compiled(x, 0.5))
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_trace_function_already_set_is_left_in_place():
    def user_trace(frame, event, arg):
        return None

    compiled = fusejit.compile(lambda x: x * 2)
    sys.settrace(user_trace)
    try:
        compiled(np.ones(3))
        assert sys.gettrace() is user_trace
    finally:
        sys.settrace(None)
