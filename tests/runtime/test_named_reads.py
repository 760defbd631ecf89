"""Functions, classes, dtypes, slices and ranges the body reads from globals, closures,
defaults and argument objects, and plain items of lists and dicts held there, are read again
before each replay: changed, the call takes a path traced for the new value, as eager NumPy
would answer."""
import collections
import functools
import sys
from dataclasses import dataclass

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

ACT = np.tanh
DTYPE = np.float32
WINDOW = slice(1, 3)
STEPS = range(2)
SIZES = [2.0, 3.0]

here = sys.modules[__name__]


def _double(x):
    return x * 2


def test_a_global_function_rebound_takes_a_path_of_its_own(monkeypatch):
    body = lambda x: ACT(x) + 1   # noqa: E731
    compiled = fusejit.compile(body)
    x = np.linspace(-1, 1, 5)
    for act, traces in ((np.tanh, 1), (np.sin, 2), (_double, 3), (np.tanh, 3), (_double, 3)):
        monkeypatch.setattr(here, "ACT", act)
        assert_same(body(x), compiled(x))
        assert compiled.cache_info()["traces"] == traces
    assert "global ACT" in str(compiled.explain(x))


def test_a_helper_redefined_under_its_name_is_called_anew(monkeypatch):
    body = lambda x: _double(x) - 1   # noqa: E731
    compiled = fusejit.compile(body)
    x = np.ones(3)
    assert_same(x * 2 - 1, compiled(x))
    monkeypatch.setattr(here, "_double", lambda x: x * 3)
    assert_same(x * 3 - 1, compiled(x))


@pytest.mark.parametrize("name, values", [
    ("DTYPE", (np.float32, np.int8, np.int8, np.float32)),
    ("DTYPE", (np.dtype("float32"), np.dtype("int8"), np.dtype(np.int8), np.dtype("f4"))),
    ("WINDOW", (slice(1, 3), slice(0, 4), slice(0, 4), slice(1, 3))),
    ("STEPS", (range(2), range(1, 4), range(1, 4), range(2))),
])
def test_a_global_dtype_slice_or_range_and_an_equal_one_keeps_the_path(monkeypatch, name,
                                                                      values):
    def body(x):
        y = x.astype(DTYPE)[WINDOW]
        for k in STEPS:
            y = y + k
        return y

    compiled = fusejit.compile(body)
    x = np.arange(5.0) * 1.5
    for value in values:
        monkeypatch.setattr(here, name, value)
        assert_same(body(x), compiled(x))
    assert compiled.cache_info()["traces"] == 2


def test_a_list_item_at_a_constant_index_of_a_global(monkeypatch):
    monkeypatch.setattr(here, "SIZES", [2.0, 3.0])
    compiled = fusejit.compile(lambda x: x * SIZES[0] + SIZES[-1])
    x = np.ones(2)
    assert_same(x * 2 + 3, compiled(x))
    SIZES[0] = 4.0
    assert_same(x * 4 + 3, compiled(x))
    SIZES[1] = 1.0
    assert_same(x * 4 + 1, compiled(x))


def test_items_of_a_closure_dict_and_list_and_the_cell_rebound():
    def make():
        cfg, sizes = {"b": 0.5}, [2]

        def body(x):
            return x[:sizes[0]] + cfg["b"]

        def rebind(new):
            nonlocal cfg
            cfg = new
        return body, cfg, sizes, rebind

    body, cfg, sizes, rebind = make()
    compiled = fusejit.compile(body)
    x = np.arange(4.0)
    assert_same(body(x), compiled(x))
    cfg["b"] = 10.0
    assert_same(x[:2] + 10, compiled(x))
    sizes[0] = 3
    assert_same(x[:3] + 10, compiled(x))
    rebind({"b": -1.0})
    assert_same(x[:3] - 1, compiled(x))


def test_defaults_set_on_the_compiled_function_or_the_wrapped_one():
    @fusejit.compile
    def scaled(x, s=2.0, *, n=2):
        return x[:n] * s

    x = np.ones(3)
    assert_same(np.full(2, 2.0), scaled(x))
    assert scaled.__defaults__ == (2.0,) and scaled.__kwdefaults__ == {"n": 2}
    scaled.__defaults__ = (5.0,)
    assert_same(np.full(2, 5.0), scaled(x))
    scaled.__wrapped__.__kwdefaults__ = {"n": 3}
    assert_same(np.full(3, 5.0), scaled(x))
    assert_same(np.full(3, 1.0), scaled(x, 1.0))


def test_the_defaults_of_a_compiled_partial_cannot_be_set():
    compiled = fusejit.compile(functools.partial(lambda x, s: x * s, s=2.0))
    assert compiled.__defaults__ is None
    with pytest.raises(AttributeError, match="__defaults__"):
        compiled.__defaults__ = (1.0,)


@dataclass
class Layer:
    act: object
    sizes: list
    cfg: dict

    def scale(self, x):
        return x * 2

    def forward(self, x):
        return self.act(self.scale(x))[:self.sizes[0]] * self.cfg["k"]


def test_an_argument_objects_function_list_and_dict_items_and_methods(monkeypatch):
    compiled = fusejit.compile(lambda x, layer: layer.forward(x))
    layer = Layer(np.tanh, [2], {"k": 2.0})
    x = np.linspace(0, 1, 4)
    changes = [lambda: setattr(layer, "act", np.sin),
               lambda: layer.sizes.__setitem__(0, 3),
               lambda: layer.cfg.__setitem__("k", 5.0),
               lambda: monkeypatch.setattr(Layer, "scale", lambda self, x: x * 100),
               lambda: setattr(layer, "scale", lambda x: x - 1)]
    assert_same(layer.forward(x), compiled(x, layer))
    for change in changes:
        change()
        assert_same(layer.forward(x), compiled(x, layer))
        assert_same(layer.forward(x), compiled(x, layer))
    assert compiled.cache_info()["traces"] == 1 + len(changes)


class Ops:
    @staticmethod
    def act(x):
        return np.tanh(x)

    def scaled(self, x):
        return x * 2


OPS = Ops()
ACTS = (np.tanh, np.sin)
Cfg = collections.namedtuple("Cfg", "scale act")
CFG = Cfg(2.0, np.tanh)
PARAMS = collections.OrderedDict(lr=2.0)


@pytest.mark.parametrize("change", [
    lambda mp: mp.setattr(Ops, "act", staticmethod(np.sin)),
    lambda mp: mp.setattr(Ops, "scaled", lambda self, x: x * 5),
    lambda mp: mp.setattr(OPS, "scaled", lambda x: x - 1, raising=False),
    lambda mp: mp.setattr(here, "ACTS", (np.cos, np.sin)),
    lambda mp: mp.setattr(here, "CFG", Cfg(5.0, np.tanh)),
    lambda mp: mp.setattr(here, "CFG", Cfg(2.0, np.sin)),
    lambda mp: mp.setitem(PARAMS, "lr", 5.0),
], ids=["staticmethod", "method", "instance", "tuple", "namedtuple", "namedtuple-fn",
        "ordereddict"])
def test_a_global_objects_methods_tuples_named_tuples_and_dict_subclasses(monkeypatch,
                                                                          change):
    def body(x):
        y = OPS.scaled(Ops.act(x)) + ACTS[0](x)
        return CFG.act(y) * CFG.scale * PARAMS["lr"]

    compiled = fusejit.compile(body)
    x = np.linspace(0, 1, 4)
    assert_same(body(x), compiled(x))
    assert_same(body(x), compiled(x))
    change(monkeypatch)
    assert_same(body(x), compiled(x))
    assert compiled.cache_info()["traces"] == 2


def test_a_helper_beside_the_body_in_its_enclosing_function():
    def make():
        cfg, s = {"k": 2.0}, 1.0

        def helper(z):
            return z * cfg["k"] + s

        def body(x):
            return helper(x) - 1

        def set_s(value):
            nonlocal s
            s = value
        return body, cfg, set_s

    body, cfg, set_s = make()
    compiled = fusejit.compile(body)
    x = np.ones(3)
    assert_same(body(x), compiled(x))
    cfg["k"] = 5.0
    assert_same(body(x), compiled(x))
    set_s(3.0)
    assert_same(body(x), compiled(x))


class Block:
    scale = 2.0

    def __init__(self):
        self.acts = {"a": np.tanh}
        self.state = {"w": np.arange(3.0), "steps": 0}

    def forward(self, x):
        return self.acts["a"](x) * self.scale * self.state["w"]


def test_class_attributes_functions_in_dict_attributes_and_items_the_body_does_not_read():
    block = Block()
    compiled = fusejit.compile(block.forward)
    x = np.linspace(0, 1, 3)
    assert_same(block.forward(x), compiled(x))
    for steps in range(1, 4):   # the caller's count, which the body does not read
        block.state["steps"] = steps
        assert_same(block.forward(x), compiled(x))
    assert compiled.cache_info()["traces"] == 1
    block.acts["a"] = np.sin
    assert_same(block.forward(x), compiled(x))
    Block.scale = 5.0
    try:
        assert_same(block.forward(x), compiled(x))
        block.scale = 0.5   # the object's own attribute shadows the class's
        assert_same(block.forward(x), compiled(x))
    finally:
        Block.scale = 2.0
    assert compiled.cache_info()["traces"] == 4


def test_two_closures_of_one_code_holding_arrays_in_one_trace():
    def make(w, cfg):
        def layer(x):
            return x * w * cfg["k"]
        return layer

    first, second = make(np.arange(3.0), {"k": 2.0}), make(np.ones(3), {"k": 3.0})
    compiled = fusejit.compile(lambda x: second(first(x)))
    x = np.ones(3)
    for _ in range(2):
        assert_same(second(first(x)), compiled(x))
