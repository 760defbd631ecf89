"""StaticSplit: a call's static arguments split from the traced ones exactly as binding the call
does, whether the layout is bound for the first time or replayed from its plan."""
import inspect

import pytest

import fusejit
from fusejit.runtime.binding import StaticSplit


def reference(fn, static, args, kwargs):
    bound = inspect.signature(fn).bind(*args, **kwargs)
    statics = {n: bound.arguments.pop(n) for n in static if n in bound.arguments}
    return statics, bound.args, bound.kwargs


def middle(x, n, y, z=3, *, scale=1.0, flag=False):
    pass


def varargs(x, n, *rest, **options):
    pass


def positional_only(x, n, /, y):
    pass


CALLS = [
    (middle, ("n",), (1, 2, 3), {}),
    (middle, ("n",), (1, 2, 3, 4), {"flag": True}),
    (middle, ("n",), (1,), {"n": 2, "y": 3}),
    (middle, ("n", "scale"), (1, 2), {"y": 3, "scale": 0.5}),
    (middle, ("z",), (1, 2), {"y": 5}),            # z defaults: neither static nor bound
    (middle, ("flag",), (), {"flag": 1, "y": 2, "n": 3, "x": 4}),
    (varargs, ("n",), (1, 2, 3, 4), {"k": 5}),
    (positional_only, ("n",), (1, 2), {"y": 3}),
]


@pytest.mark.parametrize("fn, static, args, kwargs", CALLS)
def test_a_split_matches_binding_on_the_first_call_and_from_its_plan(fn, static, args, kwargs):
    split = StaticSplit(inspect.signature(fn), static)
    expected = reference(fn, static, args, kwargs)
    assert split(args, kwargs) == expected
    # the same layout with other values: replayed from the plan where one was made
    args2 = tuple(f"a{i}" for i in range(len(args)))
    kwargs2 = {name: f"k{name}" for name in kwargs}
    assert split(args2, kwargs2) == reference(fn, static, args2, kwargs2)


def test_only_plain_parameters_are_planned():
    planned = StaticSplit(inspect.signature(middle), ("n",))
    planned((1, 2, 3), {})
    bound_each_time = StaticSplit(inspect.signature(varargs), ("n",))
    bound_each_time((1, 2, 3), {})
    assert len(planned._plans) == 1 and not bound_each_time._plans


def test_a_call_that_does_not_bind_raises_as_binding_does_even_beside_a_plan():
    split = StaticSplit(inspect.signature(middle), ("n",))
    split((1, 2, 3), {})
    for args, kwargs in (((1, 2), {}), ((1, 2, 3), {"x": 0}), ((1, 2, 3), {"nope": 1})):
        with pytest.raises(TypeError) as ours:
            split(args, kwargs)
        with pytest.raises(TypeError) as binding:
            inspect.signature(middle).bind(*args, **kwargs)
        assert str(ours.value) == str(binding.value)


def test_a_compiled_function_with_a_static_argument_in_the_middle():
    import numpy as np

    def scaled(x, power, y, *, shift=0.0):
        return x ** power + y + shift

    compiled = fusejit.compile(scaled, static_argnames=("power",))
    x, y = np.arange(4.0), np.ones(4)
    for args, kwargs in (((x, 2, y), {}), ((x, 3), {"y": y, "shift": 1.0}),
                         ((x, 2, y), {}), ((x, 3), {"y": y, "shift": 1.0})):
        np.testing.assert_array_equal(compiled(*args, **kwargs), scaled(*args, **kwargs))
    assert compiled.cache_info()["traces"] == 2


def affine(x, w, b=None, *, scale=1.0, shift=0.0):
    y = x @ w * scale + shift
    return y if b is None else y + b


def test_an_argument_passed_by_keyword_or_by_position_is_one_signature():
    import numpy as np

    compiled = fusejit.compile(affine)
    x, w = np.ones((3, 4)), np.arange(8.0).reshape(4, 2)
    calls = [((x, w), {}), ((x,), {"w": w}), ((), {"w": w, "x": x}),
             ((x, w), {"shift": 1.0, "scale": 2.0}), ((x,), {"scale": 2.0, "w": w, "shift": 1.0})]
    for args, kwargs in calls:
        np.testing.assert_array_equal(compiled(*args, **kwargs), affine(*args, **kwargs))
    info = compiled.cache_info()
    assert (info["signatures"], info["traces"], info["hits"]) == (2, 2, 3)
    # explain() finds the entry of the same call spelled by keyword, without tracing again
    assert "1 replays" in str(compiled.explain(x=x, w=w, scale=2.0, shift=1.0))
    assert compiled.cache_info()["traces"] == 2


@pytest.mark.parametrize("kwargs", [{"nope": 1}, {"x": 1}])
def test_a_call_that_does_not_bind_raises_pythons_own_error(kwargs):
    import numpy as np

    compiled = fusejit.compile(affine)
    x, w = np.ones((3, 4)), np.ones((4, 2))
    compiled(x, w)
    with pytest.raises(TypeError) as ours:
        compiled(x, w, **kwargs)
    with pytest.raises(TypeError) as python:
        affine(x, w, **kwargs)
    assert str(ours.value) == str(python.value)


def test_keywords_of_a_function_that_takes_kwargs_stay_keywords():
    split = StaticSplit(inspect.signature(varargs), ())
    assert split.positional((1,), {"n": 2, "k": 3}) == ((1,), {"n": 2, "k": 3})
    assert StaticSplit(inspect.signature(middle), ()).positional(
        (1,), {"flag": True, "y": 3, "n": 2}) == ((1, 2, 3), {"flag": True})
