"""Numbers a model holds in the less common places: a layer object used twice (weight tying)
and then untied, a back reference re-pointed, a deque, an ``OrderedDict`` or ``defaultdict``,
a named tuple rebuilt with ``_replace``, a ``@dataclass(slots=True)``. Each is read again on
every call, whether the compiled function reaches the model as the method's ``self``, as a
global, or as an argument; and through a partial, or a helper given the model.
"""
import collections
import dataclasses
import functools

import numpy as np
import pytest

import fusejit
from tests.e2e import model_helpers
from tests.oracle import assert_same

X = np.linspace(-1, 1, 4, dtype=np.float32)


class Layer:
    def __init__(self, k, w):
        self.k, self.w = k, w

    def __call__(self, x):
        return x * self.k + self.w


class Tied:
    """One layer object in two places."""

    def __init__(self):
        shared = Layer(2.0, np.ones(4, np.float32))
        self.layers = [shared, shared]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _untie(model):
    model.layers[1] = Layer(5.0, model.layers[0].w)


class Back:
    def forward(self, x):
        return x * self.parent.bias


class Owner:
    """A layer holding a back reference to its model."""

    def __init__(self):
        self.bias, self.layers = 3.0, [Back()]
        self.layers[0].parent = self

    def forward(self, x):
        return self.layers[0].forward(x)


class Cfg:
    def __init__(self, bias):
        self.bias = bias


def _repoint(model):
    model.layers[0].parent = Cfg(7.0)


class Queued:
    def __init__(self):
        self.d = collections.deque([2.0, 3.0])
        self.o = collections.OrderedDict(k=2.0)
        self.dd = collections.defaultdict(float, k=2.0)

    def forward(self, x):
        return x * self.d[0] * self.o["k"] * self.dd["k"] + self.d[-1]


Pair = collections.namedtuple("Pair", "w k")


class Named:
    def __init__(self):
        self.p = Pair(np.ones(4, np.float32), 2.0)
        self.t = (np.ones(4, np.float32), 3.0)

    def forward(self, x):
        return x * self.p.k + self.p.w + self.t[0] * self.t[1]


@dataclasses.dataclass(slots=True)
class Slotted:
    k: float


class HoldsSlots:
    def __init__(self):
        self.d = Slotted(2.0)

    def forward(self, x):
        return x * self.d.k


class Scaled:
    def __init__(self):
        self.scale = 2.0


class Attn:
    def __init__(self, block):
        self.block = block

    def __call__(self, x):
        return x * self.block.model.cfg.scale   # four steps below ``self``


class Stage:
    def __init__(self, model):
        self.model, self.attn = model, Attn(self)


class Looped:
    """Layers reading the model's numbers through two back references."""

    def __init__(self):
        self.cfg = Scaled()
        self.blocks = [Stage(self) for _ in range(3)]

    def forward(self, x):
        for block in self.blocks:
            x = block.attn(x)
        return x


def _split(model):
    model.blocks[1].model = Looped()
    model.blocks[1].model.cfg.scale = 5.0


CHANGES = [
    (Tied, _untie),
    (Owner, _repoint),
    (Queued, lambda m: m.d.__setitem__(0, 9.0)),
    (Queued, lambda m: m.d.__setitem__(-1, 4.0)),
    (Queued, lambda m: m.o.__setitem__("k", 9.0)),
    (Queued, lambda m: m.dd.__setitem__("k", 9.0)),
    (Named, lambda m: setattr(m, "p", m.p._replace(k=7.0))),
    (Named, lambda m: setattr(m, "t", (m.t[0], 7.0))),
    (HoldsSlots, lambda m: setattr(m.d, "k", 4.0)),
    (Looped, lambda m: setattr(m.cfg, "scale", 3.0)),
    (Looped, _split),
]
IDS = ["tied-untied", "back-reference", "deque", "deque-from-end", "ordered-dict",
       "defaultdict", "named-tuple-replace", "tuple-rebuilt", "slots-dataclass",
       "deep-through-back-references", "back-reference-rebound"]


@pytest.mark.parametrize("root", ["self", "global", "argument", "partial"])
@pytest.mark.parametrize(("make", "change"), CHANGES, ids=IDS)
def test_a_number_changed_between_calls_is_read_as_it_is(root, make, change):
    model = make()
    compiled = model_helpers.compiled_as(root, model)
    assert_same(model.forward(X), compiled(X))
    assert_same(model.forward(X), compiled(X))
    change(model)
    assert_same(model.forward(X), compiled(X))
    assert_same(model.forward(X + 1), compiled(X + 1))


def test_a_tied_layer_left_as_it_is_replays():
    model = Tied()
    compiled = fusejit.compile(model.forward)
    for _ in range(3):
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1
    assert compiled.cache_info()["hits"] == 2


def test_a_second_argument_that_is_a_layer_of_the_first():
    model = Tied()
    compiled = fusejit.compile(lambda m, layer, x: m.forward(x) + layer(x))
    other = Layer(-1.0, np.zeros(4, np.float32))
    assert_same(model.forward(X) + model.layers[0](X), compiled(model, model.layers[0], X))
    assert_same(model.forward(X) + other(X), compiled(model, other, X))


class Block:
    def __init__(self):
        self.scale = 2.0


class Holder:
    def __init__(self):
        self.blocks = [Block()]


HELD = Holder()


def _apply(model, x):
    return x * model.blocks[0].scale


def test_a_helper_given_a_global_model_reads_its_numbers_again():
    compiled = fusejit.compile(lambda x: _apply(HELD, x))
    try:
        assert_same(_apply(HELD, X), compiled(X))
        HELD.blocks[0].scale = 8.0
        assert_same(_apply(HELD, X), compiled(X))
    finally:
        HELD.blocks[0].scale = 2.0


def test_a_partial_binding_a_model_to_a_function_reads_its_numbers_again():
    model = Holder()
    compiled = fusejit.compile(functools.partial(_apply, model))
    assert_same(_apply(model, X), compiled(X))
    model.blocks[0].scale = 8.0
    assert_same(_apply(model, X), compiled(X))


class Bare:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


BARE, NAMED = Bare(2.0), Named()


@pytest.mark.parametrize("body", [lambda x: x * BARE.k,
                                  lambda x: model_helpers.slot_scaled(BARE, x)],
                         ids=["body", "other-module"])
def test_a_global_object_with_slots_only_is_read_again(body):
    compiled = fusejit.compile(body)
    try:
        assert_same(body(X), compiled(X))
        BARE.k = 3.0
        assert_same(body(X), compiled(X))
    finally:
        BARE.k = 2.0


def test_a_named_tuple_another_module_reads_through_a_global_is_read_again():
    def body(x):
        return model_helpers.shifted(NAMED, x)

    compiled, before = fusejit.compile(body), NAMED.p
    try:
        assert_same(body(X), compiled(X))
        NAMED.p = NAMED.p._replace(k=5.0)
        assert_same(body(X), compiled(X))
    finally:
        NAMED.p = before


class Quad(collections.namedtuple("Quad", "w k")):
    __slots__ = ()

    def apply(self, x):
        return x * self.k + self.w


class Listed:
    def __init__(self):
        self.ps = [Quad(np.ones(4, np.float32), 2.0)]
        self.p = Quad(np.ones(4, np.float32), 2.0)

    def forward(self, x):
        return x * self.ps[0].k + self.ps[0].w + self.p.apply(x)


@pytest.mark.parametrize("root", ["self", "global", "argument", "partial"])
@pytest.mark.parametrize("change", [lambda m: m.ps.__setitem__(0, m.ps[0]._replace(k=5.0)),
                                    lambda m: setattr(m, "p", m.p._replace(k=5.0))],
                         ids=["in-a-list", "read-by-its-method"])
def test_a_named_tuple_in_a_list_or_read_by_its_own_method(root, change):
    model = Listed()
    compiled = model_helpers.compiled_as(root, model)
    assert_same(model.forward(X), compiled(X))
    change(model)
    assert_same(model.forward(X), compiled(X))


class Params:
    def __init__(self):
        self.params = {"w": np.ones(4, np.float32)}

    def forward(self, x):
        y = x * self.params["w"]
        if "bias" in self.params:
            y = y + self.params["bias"]
        return y


@pytest.mark.parametrize("root", ["self", "global", "argument"])
def test_a_key_the_body_tests_with_in_is_looked_for_again(root):
    model = Params()
    compiled = model_helpers.compiled_as(root, model)
    assert_same(model.forward(X), compiled(X))
    model.params["bias"] = np.full(4, 3.0, np.float32)
    assert_same(model.forward(X), compiled(X))
    del model.params["bias"]
    assert_same(model.forward(X), compiled(X))


FLAGS: dict = {}


def test_a_global_dict_tested_with_in_is_looked_for_again():
    def body(x):
        return x * 2.0 if "double" in FLAGS else x

    compiled = fusejit.compile(body)
    try:
        assert_same(body(X), compiled(X))
        FLAGS["double"] = True
        assert_same(body(X), compiled(X))
    finally:
        FLAGS.clear()


class Defaulted(dict):
    def __missing__(self, key):
        return 1.0


def test_a_key_a_dict_subclass_answers_while_missing_is_read_again():
    model = Holder()
    model.cfg = Defaulted()
    compiled = fusejit.compile(lambda m, x: x * m.cfg["z"])
    assert_same(X * 1.0, compiled(model, X))
    model.cfg["z"] = 5.0
    assert_same(X * 5.0, compiled(model, X))


class Stats:
    def __init__(self):
        self.scale, self.size, self.mean = 2.0, 0, 0.0


STATS = Stats()


def _mean(x):
    return x.sum() / x.size - x.mean()


def test_a_helper_given_an_array_does_not_read_a_global_object_s_counts():
    def body(x):
        return _mean(x) * STATS.scale

    compiled = fusejit.compile(body)
    for _ in range(4):
        STATS.size += 1   # bookkeeping under an array's attribute names, which no code reads
        STATS.mean += 0.5
        assert_same(body(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1


class Ops:
    @staticmethod
    def apply(model, x):
        return x * model.blocks[0].scale


def test_a_static_method_given_a_global_model_reads_its_numbers_again():
    compiled = fusejit.compile(lambda x: Ops.apply(HELD, x))
    try:
        assert_same(Ops.apply(HELD, X), compiled(X))
        HELD.blocks[0].scale = 7.0
        assert_same(Ops.apply(HELD, X), compiled(X))
    finally:
        HELD.blocks[0].scale = 2.0


class Table:
    K = 2.0


def _by_class(cls, x):
    return x * cls.K


def test_a_class_a_partial_binds_is_read_again(monkeypatch):
    compiled = fusejit.compile(functools.partial(_by_class, Table))
    assert_same(_by_class(Table, X), compiled(X))
    monkeypatch.setattr(Table, "K", 5.0)
    assert_same(_by_class(Table, X), compiled(X))


def test_a_value_under_a_key_tested_with_in_may_change_without_tracing_again():
    model = Params()
    model.params["step"] = 0
    compiled = fusejit.compile(lambda m, x: x * 2.0 if "step" in m.params else x)
    for step in range(4):
        model.params["step"] = step   # counted by the caller; the body asks only if it is there
        assert_same(X * 2.0, compiled(model, X))
    assert compiled.cache_info()["traces"] == 1


MISSING = Defaulted()


def test_a_global_dict_subclass_answering_a_missing_key_is_read_again():
    compiled = fusejit.compile(lambda x: x * MISSING["z"])
    try:
        assert_same(X * 1.0, compiled(X))
        MISSING["z"] = 5.0
        assert_same(X * 5.0, compiled(X))
    finally:
        MISSING.clear()


SCALES = {"a": 2.0}


def test_a_global_dict_both_tested_with_in_and_subscripted_reads_its_value_again():
    def body(x):
        return x * SCALES["a"] if "a" in SCALES else x

    compiled = fusejit.compile(body)
    try:
        assert_same(body(X), compiled(X))
        SCALES["a"] = 5.0
        assert_same(body(X), compiled(X))
        del SCALES["a"]
        assert_same(body(X), compiled(X))
    finally:
        SCALES["a"] = 2.0


class Gated:
    def __init__(self):
        self.d = {"a": 1.0}

    def forward(self, x):
        return x * 2.0 if "a" in self.d else x


@pytest.mark.parametrize("root", ["self", "global", "argument", "partial"])
def test_a_key_tested_with_in_below_any_root_is_looked_for_again(root):
    model = Gated()
    compiled = model_helpers.compiled_as(root, model)
    assert_same(model.forward(X), compiled(X))
    model.d.pop("a")
    assert_same(model.forward(X), compiled(X))


class NanKeyed:
    def __init__(self):
        shared = Layer(2.0, np.ones(4, np.float32))
        self.by = {float("nan"): shared, 1.5: shared}

    def forward(self, x):
        for layer in self.by.values():
            x = layer(x)
        return x


def test_layers_tied_under_keys_without_a_literal_replay():
    model = NanKeyed()
    compiled = fusejit.compile(model.forward)
    for _ in range(3):
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["hits"] == 2
    model.by[1.5] = Layer(5.0, np.zeros(4, np.float32))
    assert_same(model.forward(X), compiled(X))


class Wrapper:
    def __init__(self, layer):
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


class Gain:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


SHARED = Wrapper(Gain(2.0))


@pytest.mark.parametrize("change", [
    lambda given: setattr(SHARED, "layer", Gain(5.0)),
    lambda given: setattr(SHARED.layer, "k", 3.0),
    lambda given: setattr(given, "layer", Gain(-1.0))],
    ids=["global-rebound", "global-number", "argument-rebound"])
def test_a_layer_a_global_and_an_argument_share_is_read_through_both(change):
    before = SHARED.layer
    given = Wrapper(before)

    def body(m, x):
        return m.forward(SHARED.forward(x))

    compiled = fusejit.compile(body)
    try:
        assert_same(body(given, X), compiled(given, X))
        change(given)
        assert_same(body(given, X), compiled(given, X))
    finally:
        SHARED.layer, before.k = before, 2.0
