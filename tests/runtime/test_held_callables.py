"""What the body reaches through callables it holds (compiled functions, bound methods,
partials, an array's own methods) and through classes, and the operands NumPy hands to code
of their own: each compiled call gives eager NumPy's answer after the state changes."""
import functools
import sys
import types

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

here = sys.modules[__name__]
X = np.arange(4.0) + 1


def _calls(compiled, eager, changes, *args):
    """Call twice, then once after each change, comparing with ``eager`` every time."""
    for change in (lambda: None, *changes):
        change()
        assert_same(eager(*args), compiled(*args))


@fusejit.compile
def _plus_one(x):
    return x + 1


@fusejit.compile
def _times_ten(x):
    return x * 10


INNER = _plus_one


def test_a_compiled_function_held_by_a_global_rebound(monkeypatch):
    monkeypatch.setattr(here, "INNER", _plus_one)
    compiled = fusejit.compile(lambda x: INNER(x))
    _calls(compiled, lambda x: INNER(x), [lambda: setattr(here, "INNER", _times_ten)], X)


class _Layer:
    def __init__(self):
        self.k, self.w = 2.0, np.ones(4)

    @fusejit.compile
    def forward(self, x):
        return x * self.k + self.w

    @fusejit.compile
    def helper(self, x):
        return x * self.k

    @fusejit.compile
    def through_helper(self, x):
        return self.helper(x)


FORWARD = _Layer().forward


def test_a_compiled_method_bound_to_a_global(monkeypatch):
    """Its object's array was baked in and its numbers frozen."""
    monkeypatch.setattr(here, "FORWARD", _Layer().forward)
    compiled = fusejit.compile(lambda x: FORWARD(x))
    _calls(compiled, lambda x: FORWARD(x),
           [lambda: FORWARD.__self__.w.__setitem__(slice(None), 3.0),
            lambda: setattr(FORWARD.__self__, "k", 4.0),
            lambda: setattr(here, "FORWARD", _Layer().forward)], X)


def test_an_attribute_shadowing_a_compiled_method():
    layer = _Layer()
    _calls(layer.through_helper, lambda x: layer.helper(x),
           [lambda: setattr(layer, "helper", lambda x: x - 100)], X)


class _Scaled:
    K, W = 2.0, np.ones(4)

    def __init__(self):
        self.k = 3.0

    @classmethod
    @fusejit.compile
    def compiled_cm(cls, x):
        return x * cls.K

    @classmethod
    def cm(cls, x):
        return (x + cls.W) * cls.K

    def m(self, x):
        return x * self.W * self.K

    def __call__(self, x):
        return x * self.k


CLASSMETHOD, OBJ = _Scaled.cm, _Scaled()
METHOD, CALLABLE = OBJ.m, fusejit.compile(OBJ)


@pytest.mark.parametrize("body", [lambda x: CLASSMETHOD(x), lambda x: _Scaled.cm(x),
                                  lambda x: _Scaled.compiled_cm(x), lambda x: METHOD(x),
                                  lambda x: OBJ.m(x), lambda x: CALLABLE(x)])
def test_class_attributes_read_through_cls_or_self(monkeypatch, body):
    """``cls.K`` of a classmethod was frozen and the class's array ``W`` baked in, wherever
    the classmethod was reached from; so were those of a compiled callable object."""
    monkeypatch.setattr(_Scaled, "K", 2.0)
    monkeypatch.setattr(_Scaled, "W", np.ones(4))
    monkeypatch.setattr(OBJ, "k", 3.0)
    _calls(fusejit.compile(body), body,
           [lambda: _Scaled.W.__setitem__(slice(None), 5.0),
            lambda: setattr(_Scaled, "W", np.full(4, 7.0)),
            lambda: setattr(_Scaled, "K", 3.0), lambda: setattr(OBJ, "k", -1.0)], X)


class _Acts:
    def __init__(self, act):
        self.act = act

    @fusejit.compile
    def forward(self, x):
        return self.act(x)


def test_a_bound_method_an_attribute_of_self_or_of_an_argument_holds():
    held = _Layer.__new__(_Layer)
    held.k, held.w = 2.0, np.ones(4)
    net = _Acts(types.MethodType(_Layer.forward.fn, held))
    given = fusejit.compile(lambda net, x: net.act(x))
    changes = [lambda: held.w.__setitem__(slice(None), 10.0), lambda: setattr(held, "k", 3.0)]
    for compiled, args in ((net.forward, (X,)), (given, (net, X))):
        held.k, held.w = 2.0, np.ones(4)
        _calls(compiled, lambda *args: net.act(args[-1]), changes, *args)


class _Bound:
    def __init__(self):
        self.k = 2.0

    def g(self, x):
        return x * self.k


def _other(self, x):
    return x - self.k


def test_a_method_bound_on_the_object_itself(monkeypatch):
    obj = _Bound()
    monkeypatch.setattr(here, "OBJ", obj)
    compiled = fusejit.compile(lambda x: OBJ.g(x))
    _calls(compiled, lambda x: OBJ.g(x),
           [lambda: setattr(obj, "g", types.MethodType(_other, obj)),
            lambda: setattr(obj, "k", 5.0)], X)


class _Items(dict):
    def g(self, x):
        return x * self["k"]


ITEMS = _Items(k=2.0)


def test_items_of_a_dict_subclass_read_by_its_method(monkeypatch):
    monkeypatch.setitem(ITEMS, "k", 2.0)
    compiled = fusejit.compile(lambda x: ITEMS.g(x))
    _calls(compiled, lambda x: ITEMS.g(x), [lambda: ITEMS.__setitem__("k", 5.0)], X)


class _Affine:
    def __init__(self):
        self.w = np.ones(4)

    def apply(self, x, scale):
        return self.w * x * scale


def _linear(w, x):
    return w * x


PARTIAL = functools.partial(_Affine().apply, scale=2.0)
LINEAR = functools.partial(_linear, np.ones(4))
TABLE = {"w": np.ones(4)}
GET_W = TABLE.__getitem__


def test_partials_and_a_dicts_method_held_by_a_global(monkeypatch):
    """Their arrays were baked in as constants. The partials are the user's own objects in
    the body: returned, they are not copies."""
    monkeypatch.setattr(here, "PARTIAL", functools.partial(_Affine().apply, scale=2.0))
    monkeypatch.setitem(TABLE, "w", np.ones(4))
    monkeypatch.setattr(here, "LINEAR", functools.partial(_linear, np.ones(4)))
    body = lambda x: PARTIAL(x) + GET_W("w") + LINEAR(x)  # noqa: E731
    _calls(fusejit.compile(body), body,
           [lambda: PARTIAL.func.__self__.w.__setitem__(slice(None), 7.0),
            lambda: LINEAR.args[0].__setitem__(slice(None), 5.0),
            lambda: setattr(here, "LINEAR", functools.partial(_linear, np.full(4, 6.0))),
            lambda: setattr(PARTIAL.func.__self__, "w", np.full(4, 2.0)),
            lambda: TABLE["w"].__setitem__(slice(None), 4.0),
            lambda: TABLE.__setitem__("w", np.full(4, 9.0))], X)
    returned = fusejit.compile(lambda x: (x * 2, LINEAR))
    for _ in range(2):
        assert returned(X)[1] is LINEAR


SUBCLASSED = np.ones(4)


def test_a_global_array_rebound_to_an_ndarray_subclass(monkeypatch):
    """A masked array or a matrix has methods of its own: replays gave a plain ndarray."""
    monkeypatch.setattr(here, "SUBCLASSED", np.ones(4))
    body = lambda x: x + SUBCLASSED  # noqa: E731
    compiled = fusejit.compile(body)
    _calls(compiled, body, [lambda: setattr(here, "SUBCLASSED", np.ma.array(
        np.full(4, 4.0), mask=[0, 1, 0, 0]))], X)
    assert type(compiled(X)) is np.ma.MaskedArray


def test_a_static_list_that_holds_itself_and_lists_nested_hundreds_deep(monkeypatch):
    """Both recursed until Python's limit (RecursionError)."""
    cyclic = [2.0]
    cyclic.append(cyclic)
    static = fusejit.compile(lambda x, cfg: x * cfg[0], static_argnames=("cfg",))
    assert_same(X * 2.0, static(X, cfg=cyclic))
    deep = np.ones(4)
    for _ in range(500):
        deep = [deep]
    monkeypatch.setattr(here, "TABLE", {"w": np.ones(4), "deep": deep})
    compiled = fusejit.compile(lambda x: x * TABLE["w"])
    assert_same(X, compiled(X))


class _Duck:
    """An array-like whose ufunc override changes its own state, as a cache would."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.seen = True
        inputs = [i.a if isinstance(i, _Duck) else i for i in inputs]
        return _Duck(getattr(ufunc, method)(*inputs, **kwargs))

    def __array__(self, dtype=None, copy=None):
        return self.a


DUCK = _Duck(np.ones(4))


@pytest.mark.parametrize("body", [lambda x: np.add(DUCK, x), lambda x: x + np.asarray(DUCK)])
def test_a_global_duck_array_gives_no_tracer_back(body):
    """The first call returned the duck holding fusejit's Tracer (its code changed Python
    state), or ``np.asarray`` of it raised (its ``__array__`` read a proxy)."""
    compiled = fusejit.compile(body)
    for _ in range(2):
        want, got = body(X), compiled(X)
        assert type(got) is type(want)
        assert_same(getattr(want, "a", want), getattr(got, "a", got))


class _Prioritized:
    """NumPy's legacy rule: a higher ``__array_priority__`` runs its reflected operator."""

    __array_priority__ = 10.0

    def __radd__(self, other):
        return ("radd", other.shape)

    def __lt__(self, other):   # ``x > o``: Python's reflection of ``o < x``
        return ("lt", other.shape)


PRIORITIZED = _Prioritized()


def test_an_operand_with_a_higher_array_priority_runs_its_reflected_operator():
    """It raised UnsupportedError (arithmetic and comparisons alike)."""
    assert fusejit.compile(lambda x: (x * 2) + PRIORITIZED)(X) == ("radd", (4,))
    assert fusejit.compile(lambda x: (x * 2) > PRIORITIZED)(X) == ("lt", (4,))


class _Biased:
    def __init__(self):
        self.b = np.ones(4)

    def f(self, x):
        b = getattr(self, "b", None)
        return x if b is None else x + b


BIASED = _Biased()


def test_an_attribute_holding_a_captured_array_deleted(monkeypatch):
    """Replaying raised AttributeError reading the array, and the signature ran eagerly from
    then on; the path no longer applies now, and the call traces another."""
    monkeypatch.setattr(here, "BIASED", _Biased())
    compiled = fusejit.compile(lambda x: BIASED.f(x))
    _calls(compiled, lambda x: BIASED.f(x),
           [lambda: delattr(BIASED, "b"), lambda: setattr(BIASED, "b", np.full(4, 2.0))], X)
    assert compiled.cache_info()["eager_signatures"] == 0
