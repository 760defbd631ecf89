"""A compiled function is one object, like the function it wraps: copies, pickles, methods,
and the options it was given, checked when decorating."""
import copy
import pickle

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


@fusejit.compile
def doubled_exp(x):
    return np.exp(x) * 2


def plus_one(x):
    return x + 1


PLUS_ONE = fusejit.compile(plus_one, max_traces=3)


def test_a_decorated_module_function_pickles_by_reference():
    # What multiprocessing sends to a worker: before, pickling raised 'cannot pickle module'.
    x = np.arange(3.0)
    assert_same(np.exp(x) * 2, doubled_exp(x))
    assert pickle.loads(pickle.dumps(doubled_exp)) is doubled_exp
    assert copy.deepcopy(doubled_exp) is doubled_exp and copy.copy(doubled_exp) is doubled_exp


def test_a_compiled_function_held_under_another_name_pickles_as_its_function_and_options():
    again = pickle.loads(pickle.dumps(PLUS_ONE))
    assert isinstance(again, fusejit.CompiledFunction) and again.fn is plus_one
    assert again.max_traces == 3
    x = np.arange(3.0)
    assert_same(x + 1, again(x))


class Scalers:
    @fusejit.compile
    @staticmethod
    def tripled(x):
        return x * 3

    @fusejit.compile
    @classmethod
    def quadrupled(cls, x):
        return x * 4

    @staticmethod
    @fusejit.compile
    def quintupled(x):
        return x * 5


def test_compile_over_staticmethod_or_classmethod_compiles_the_function_inside():
    # Before: over @classmethod a raw inspect TypeError at class creation; over @staticmethod,
    # 'takes 1 positional argument but 2 were given' on every call.
    x = np.arange(4.0)
    for scalers in (Scalers, Scalers()):
        for _ in range(2):
            assert_same(x * 3, scalers.tripled(x))
            assert_same(x * 4, scalers.quadrupled(x))
            assert_same(x * 5, scalers.quintupled(x))


def _scaled(x, n):
    return x * n


@pytest.mark.parametrize("options, error, message", [
    (dict(max_traces=None), TypeError, "max_traces must be an int, not NoneType"),
    (dict(max_traces="3"), TypeError, "max_traces must be an int, not str"),
    (dict(max_traces=1.5), TypeError, "max_traces must be an int, not float"),
    (dict(max_traces=0), ValueError, "max_traces must be at least 1, not 0"),
    (dict(static_argnames=("m",)), ValueError,
     r"static_argnames names 'm', which is not a parameter of _scaled\(x, n\)"),
    (dict(static_argnames=(1,)), TypeError, "static_argnames holds 1"),
    (dict(static_argnames=1), TypeError, "static_argnames takes a parameter name or a "
     "sequence of them, not int"),
])
def test_bad_options_are_refused_when_decorating(options, error, message):
    with pytest.raises(error, match=message):
        fusejit.compile(**options)(_scaled)


def _scaled_sum(x, n, *rest):
    return (x + sum(rest)) * n


def _scaled_first(x, n, /, y):
    return x * n + y


def _scaled_last(x, *rest, n):
    return (x + sum(rest)) * n


@pytest.mark.parametrize("fn, where", [(_scaled_sum, "comes before [*]rest"),
                                       (_scaled_first, "is positional-only")])
def test_a_static_argument_python_cannot_bind_by_keyword_is_refused_when_compiling(fn, where):
    # It used to compile and fail on each call with Python's TypeError about 'rest' or 'n'.
    with pytest.raises(fusejit.UnsupportedError, match=f"'n', which {where}.*keyword-only"):
        fusejit.compile(fn, static_argnames="n")


def test_a_keyword_only_static_argument_after_star_args_compiles():
    scaled = fusejit.compile(_scaled_last, static_argnames="n")
    x = np.arange(3.0)
    for n in (2, 3, 2):
        assert_same(_scaled_last(x, x, x, n=n), scaled(x, x, x, n=n))


def test_one_static_argname_may_be_a_string_and_any_name_goes_with_kwargs():
    scaled = fusejit.compile(_scaled, static_argnames="n")
    x = np.arange(3.0)
    assert_same(x * 3, scaled(x, 3))
    assert scaled.static_argnames == ("n",)

    def keyed(x, **options):
        return x * options["n"]

    compiled = fusejit.compile(keyed, static_argnames=("n",))
    assert_same(x * 2, compiled(x, n=2))


class Scaler:
    def __init__(self):
        self.w = np.arange(4.0)

    @fusejit.compile
    def step(self, x):
        return x * self.w


def test_a_compiled_method_bound_to_an_object_explains_and_prints_for_it():
    model, x = Scaler(), np.ones(4)
    assert_same(x * model.w, model.step(x))
    assert "status: compiled" in str(model.step.explain(x))
    assert "mul" in model.step.ir(x)
    assert model.step == model.step and model.step != Scaler().step
    assert model.step.cache_info()["traces"] == 1
    again = pickle.loads(pickle.dumps(model.step))
    assert_same(x * model.w, again(x))


def test_a_bound_compiled_method_reads_as_a_bound_method():
    import inspect
    import weakref
    model = Scaler()
    assert model.step.__doc__ == Scaler.step.__doc__
    assert list(inspect.signature(model.step).parameters) == ["x"]
    assert weakref.ref(model.step)() == model.step
