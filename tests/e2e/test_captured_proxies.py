"""Captured and body-made arrays are proxies while tracing: NumPy code on them alone replays.

Each test runs the same steps eagerly on state of its own and compiled, and compares results
and state after every call (docs/tracing.md, "Captured arrays are read by reference").
"""
import collections
import dataclasses
import functools
import threading
import types

import numpy as np
import pytest
from numpy import zeros

import fusejit
from tests.oracle import assert_same

RUNNING = np.zeros(3)
SCALE = np.ones(3)
CALLS = 0


def test_an_untraced_update_of_a_global_before_a_traced_one_is_replayed():
    def ema(x):
        RUNNING[...] *= 0.9                  # no traced value in it
        RUNNING[...] += 0.1 * x
        return x * 1.0

    compiled, expected = fusejit.compile(ema), np.zeros(3)
    RUNNING[...] = 0
    for step in range(4):
        x = np.full(3, step + 1.0)
        compiled(x)
        expected *= 0.9
        expected += 0.1 * x
        assert_same(expected, RUNNING)
    assert compiled.cache_info()["traces"] == 1


class BatchNorm:
    def __init__(self):
        self.mean, self.momentum = np.zeros(4), 0.1

    def __call__(self, x):
        mu = x.mean(axis=0)
        self.mean *= 1 - self.momentum       # running statistics, untraced then traced
        self.mean += self.momentum * mu
        return x - mu


def test_running_statistics_on_self_are_replayed():
    compiled, model, expected = fusejit.compile(BatchNorm.__call__), BatchNorm(), BatchNorm()
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.standard_normal((8, 4))
        assert_same(expected(x), compiled(model, x))
        assert_same(expected.mean, model.mean)
    assert compiled.cache_info()["traces"] == 1


def _decay_scale():
    SCALE[...] *= 0.5


def _scaled(x):
    buffer = np.zeros(x.shape)
    buffer[:] = x
    return buffer * SCALE.sum()


def test_helpers_of_the_same_module_see_proxies_and_module_state_is_kept():
    def body(x):
        _decay_scale()
        return _scaled(x)

    compiled, expected = fusejit.compile(body), np.ones(3)
    SCALE[...] = 1
    for step in range(3):
        x = np.full(3, step + 1.0)
        expected *= 0.5
        assert_same(x * expected.sum(), compiled(x))
        assert_same(expected, SCALE)
    assert compiled.cache_info()["traces"] == 1 and globals()["_scaled"] is _scaled


def test_rebinding_a_captured_global_array_runs_eagerly():
    def rebind(x):
        global RUNNING
        RUNNING = RUNNING + x
        return x

    compiled, original = fusejit.compile(rebind), RUNNING
    try:
        compiled(np.ones(3))
        assert type(RUNNING) is np.ndarray and compiled.cache_info()["eager_signatures"] == 1
        assert "global RUNNING rebound" in compiled.explain(np.ones(3)).reason
    finally:
        globals()["RUNNING"] = original


def test_returning_self_returns_the_object_and_attributes_stay_arrays():
    class Model:
        def __init__(self):
            self.w = np.ones(2)

        def step(self, g):
            self.w -= g
            return self

    compiled, model = fusejit.compile(Model.step), Model()
    for _ in range(3):
        assert compiled(model, np.ones(2)) is model
    assert type(model.w) is np.ndarray
    assert_same(np.full(2, -2.0), model.w)


def test_buffers_made_with_names_imported_from_numpy_are_traced():
    def one_hot(labels):
        out = zeros((labels.shape[0], 3))
        out[np.arange(labels.shape[0]), labels] = 1.0
        return out

    compiled = fusejit.compile(one_hot)
    for labels in (np.array([0, 2, 1]), np.array([2, 2, 0])):
        assert_same(one_hot(labels), compiled(labels))
    assert compiled.cache_info()["eager_signatures"] == 0


def test_values_of_constants_alone_are_computed_once_as_constants():
    def masked(x):
        causal = np.tril(np.ones((x.shape[0], x.shape[0]), dtype=bool))
        return np.where(causal, x, 0.0)

    compiled = fusejit.compile(masked)
    x = np.arange(16.0).reshape(4, 4)
    assert_same(masked(x), compiled(x))
    text = str(compiled.explain(x))
    assert "0 host ops" in text and "bool[4,4] constant computed at" in text


def test_other_threads_see_the_real_module_and_objects_while_a_trace_runs():
    seen = []
    started, release = threading.Event(), threading.Event()

    def slow(x):
        started.set()
        release.wait(5)
        return x * SCALE

    def watch():
        started.wait(5)
        seen.append((type(SCALE), type(globals()["np"].zeros(2))))
        release.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    fusejit.compile(slow)(np.ones(3))
    watcher.join()
    assert seen == [(np.ndarray, np.ndarray)]


def test_constants_the_body_makes_and_updates_in_place_are_replayed():
    def shifted(x):
        eye = np.eye(3)
        eye *= 2                             # first used by a write: applied once, not twice
        eye[0, 0] += 1.0
        rows = np.full((3, 3), [1.0, 2.0, 3.0])
        rows[1] *= 2
        return x @ eye + rows

    compiled = fusejit.compile(shifted)
    for scale in (1.0, 2.0, 3.0):
        x = scale * np.arange(9.0).reshape(3, 3)
        assert_same(shifted(x), compiled(x))


class Node:
    def __init__(self):
        self.w, self.scale, self.me = np.ones(3), 3.0, self


DEFAULT = Node()
MODEL = Node()
CACHE: dict = {}


def test_argument_objects_keep_their_identity_while_traced():
    def scaled(node, x):
        same = node is DEFAULT and node.me is node
        return x * node.w * (node.scale if same else 1.0)

    compiled = fusejit.compile(scaled)
    for _ in range(3):
        assert_same(scaled(DEFAULT, np.ones(3)), compiled(DEFAULT, np.ones(3)))
    assert type(DEFAULT.w) is np.ndarray


def test_untraced_updates_of_arrays_held_by_global_objects_are_replayed():
    def decay(x):
        MODEL.w *= 0.5
        return x + MODEL.w

    compiled, expected = fusejit.compile(decay), np.ones(3)
    MODEL.w = np.ones(3)
    for _ in range(3):
        expected *= 0.5
        assert_same(np.ones(3) + expected, compiled(np.ones(3)))
    assert compiled.cache_info()["traces"] == 1


def test_static_arguments_and_default_arguments_see_proxies():
    def step(x, node, buffer=np.ones(3)):   # noqa: B008 -- a default array, on purpose
        buffer *= 0.5
        node.w *= 0.5
        return x + buffer + node.w

    compiled, node = fusejit.compile(step, static_argnames=("node",)), Node()
    expected = np.ones(3)
    for _ in range(3):
        expected *= 0.5
        assert_same(np.ones(3) + 2 * expected, compiled(np.ones(3), node))


def test_a_made_buffer_kept_in_a_global_cache_runs_eagerly_and_stays_an_array():
    def cached(x):
        CACHE.setdefault(x.shape, np.empty(x.shape))
        CACHE[x.shape][...] = x
        return CACHE[x.shape] * 2

    compiled = fusejit.compile(cached)
    for scale in (1.0, 2.0):
        assert_same(np.full(3, 2 * scale), compiled(np.full(3, scale)))
    assert type(CACHE[(3,)]) is np.ndarray
    assert compiled.cache_info()["eager_signatures"] == 1


def test_globals_seen_from_the_body_are_the_module_s():
    def lookup(x):
        global CALLS
        present = "SCALE" in globals() and globals().get("MODEL") is MODEL
        del CALLS
        return x * (2.0 if present else 1.0)

    compiled = fusejit.compile(lookup)
    assert_same(np.full(2, 2.0), compiled(np.ones(2)))
    assert "CALLS" not in globals()
    globals()["CALLS"] = 0


class WithTable:
    table = np.arange(3.0)                   # on the class, not the instance

    def step(self, x):
        return x + self.table


def test_class_attributes_are_read_again_on_every_call():
    compiled, model = fusejit.compile(WithTable.step), WithTable()
    for fill in (0.0, 100.0, 101.0):
        WithTable.table[...] = fill
        assert_same(np.full(3, fill), compiled(model, np.zeros(3)))


# Two names bound to one array while tracing are one capture (a write through one is seen
# through the other); a call after one of them is rebound traces again, never reads the other.
ALIAS_A = np.ones(3)
ALIAS_B = ALIAS_A


def _read_both_globals(x):
    return x + ALIAS_A + 2 * ALIAS_B


def _write_one_global_read_the_other(x):
    ALIAS_A[...] += 1
    return x * ALIAS_B


def _steps_on_globals(body):
    global ALIAS_A, ALIAS_B
    ALIAS_A = ALIAS_B = np.ones(3)
    x, seen = np.ones(3), []
    for rebind in (None, None, "B", "alias", "A"):
        if rebind == "B":
            ALIAS_B = np.full(3, 10.0)
        elif rebind == "alias":
            ALIAS_B = ALIAS_A
        elif rebind == "A":
            ALIAS_A = np.full(3, 5.0)
        seen += [body(x), ALIAS_A.copy(), ALIAS_B.copy()]
    return seen


def _assert_same_steps(steps, body, compiled) -> None:
    for expected, got in zip(steps(body), steps(compiled), strict=True):
        assert_same(expected, got)
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["traces"] == 2   # one more, for the rebinding


@pytest.mark.parametrize("body", [_read_both_globals, _write_one_global_read_the_other])
def test_two_globals_bound_to_one_array_are_each_read_through_their_own_name(body):
    original = ALIAS_A, ALIAS_B
    try:
        _assert_same_steps(_steps_on_globals, body, fusejit.compile(body))
    finally:
        globals().update(ALIAS_A=original[0], ALIAS_B=original[1])


class Holder:
    def __init__(self, w):
        self.w = w


def _read_both_holders(a, b):
    return a.w * 2 + b.w


def _write_one_holder_read_the_other(a, b):
    a.w += 1
    return b.w * 1.0


def _steps_on_two_holders(body):
    shared = np.ones(3)
    a, b, seen = Holder(shared), Holder(shared), []
    for rebind in (None, None, "b", "alias"):
        if rebind == "b":
            b.w = np.full(3, 10.0)
        elif rebind == "alias":
            a.w = b.w
        seen += [body(a, b), a.w.copy(), b.w.copy()]
    return seen


@pytest.mark.parametrize("body", [_read_both_holders, _write_one_holder_read_the_other])
def test_two_argument_objects_sharing_an_array_are_each_read_again(body):
    _assert_same_steps(_steps_on_two_holders, body, fusejit.compile(body))


class TwoNames:
    def __init__(self):
        self.a = self.b = np.ones(3)

    def read_both(self, x):
        return x + self.a + 2 * self.b

    def write_one_read_the_other(self, x):
        self.a += 1
        return x * self.b


def _steps_on_one_object(method, compile_it):
    model, x, seen = TwoNames(), np.ones(3), []
    body = getattr(model, method)
    body = fusejit.compile(body) if compile_it else body
    for rebind in (None, None, "b", "alias"):
        if rebind == "b":
            model.b = np.full(3, 10.0)
        elif rebind == "alias":
            model.b = model.a
        seen += [body(x), model.a.copy(), model.b.copy()]
    return seen, body


@pytest.mark.parametrize("method", ["read_both", "write_one_read_the_other"])
def test_two_attributes_of_self_bound_to_one_array_are_each_read_again(method):
    expected, _ = _steps_on_one_object(method, False)
    got, compiled = _steps_on_one_object(method, True)
    for want, have in zip(expected, got, strict=True):
        assert_same(want, have)
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["traces"] == 2


PAIR = (ALIAS_A, ALIAS_A)   # arrays in a tuple are read as plain arrays, found by a search


def test_a_plain_array_reachable_through_two_paths_is_read_through_either():
    global PAIR

    def second(x):
        return x + PAIR[1]

    compiled, original, shared, x = fusejit.compile(second), PAIR, np.ones(3), np.ones(3)
    try:
        PAIR = (shared, shared)
        for _ in range(2):
            assert_same(second(x), compiled(x))
        PAIR = (shared, np.full(3, 10.0))
        assert_same(np.full(3, 11.0), compiled(x))
    finally:
        PAIR = original


class _Layer:
    def __init__(self, value):
        self.w = np.full(3, value)


class _Stack:
    def __init__(self):
        self.layers = [_Layer(1.0), _Layer(2.0)]
        self.extra = {"a": _Layer(0.5)}


def _through_layers(net, x):
    for layer in net.layers:
        x = x * layer.w
    for layer in net.extra.values():
        x = x + layer.w
    return x


def test_a_list_or_dict_of_layers_that_changed_size_is_traced_again():
    # The Python loops ran once per layer while tracing: a replay after an append would
    # have skipped the new layer. Back at the old sizes, the first path applies again.
    compiled, net, x = fusejit.compile(_through_layers), _Stack(), np.ones(3)
    changes = [lambda: None, lambda: net.layers.append(_Layer(3.0)),
               lambda: net.extra.update(b=_Layer(4.0)), lambda: net.layers.pop(),
               lambda: net.extra.pop("b"), lambda: setattr(net.layers[0], "w", np.zeros(3))]
    for change in changes:
        change()
        assert_same(_through_layers(net, x), compiled(net, x))
    info = compiled.cache_info()
    assert info["traces"] == 4 and info["hits"] == 2 and info["eager_calls"] == 0


@dataclasses.dataclass(slots=True)
class _SlottedLayer:
    w: np.ndarray


def test_an_array_in_a_slot_is_read_by_reference():
    # Before, a slot's array was copied into the program as a constant.
    def scaled(layer, x):
        return layer.w * x

    compiled, layer, x = fusejit.compile(scaled), _SlottedLayer(np.ones(3)), np.arange(3.0)
    for change in (lambda: None, lambda: setattr(layer, "w", np.full(3, 5.0)),
                   lambda: layer.w.__setitem__(slice(None), 7.0)):
        change()
        assert_same(scaled(layer, x), compiled(layer, x))
    assert compiled.cache_info()["hits"] == 2


class _CheckedDict(dict):
    def __setitem__(self, key, value):       # its own code: never given the proxies
        if not isinstance(value, np.ndarray):
            raise TypeError("arrays only")
        super().__setitem__(key, value)


class _Params(dict):
    pass


class _Items(list):
    pass


class _Slotted:
    __slots__ = ("m", "w")

    def __init__(self):
        self.m, self.w = np.zeros(3), np.ones(3)


@dataclasses.dataclass(frozen=True, slots=True)
class _FrozenSlots:
    m: np.ndarray
    w: np.ndarray


def _momentum_item(state, g):
    state["m"] *= 0.9                       # no traced value in it: replayed all the same
    state["m"] += g
    return state["w"] - state["m"]


def _momentum_attr(state, g):
    state.m[...] *= 0.9
    np.add(state.m, g, out=state.m)
    return state.w - state.m


def _momentum_list(state, g):
    state[0] *= 0.9
    state[0] += g
    return state[1] - state[0]


@pytest.mark.parametrize("body, make", [
    (_momentum_item, lambda: collections.OrderedDict(m=np.zeros(3), w=np.ones(3))),
    (_momentum_item, lambda: collections.defaultdict(list, m=np.zeros(3), w=np.ones(3))),
    (_momentum_item, lambda: _Params(m=np.zeros(3), w=np.ones(3))),
    (_momentum_list, lambda: _Items([np.zeros(3), np.ones(3)])),
    (_momentum_attr, _Slotted),
    (_momentum_attr, lambda: _FrozenSlots(np.zeros(3), np.ones(3))),
], ids=["OrderedDict", "defaultdict", "dict-subclass", "list-subclass", "slots", "frozen-slots"])
def test_arrays_in_container_subclasses_and_slots_are_proxies_too(body, make):
    # They were read as plain arrays: the decay, with no traced value in it, ran only while
    # tracing, and every replay dropped it (momentum 4.0 where NumPy gives 3.439).
    eager, got = make(), make()
    compiled = fusejit.compile(body)
    for step in range(4):
        g = np.full(3, 1.0 + step)
        assert_same(body(eager, g), compiled(got, g))
        for before, after in zip(_arrays(eager), _arrays(got), strict=True):
            assert_same(before, after)
            assert type(after) is np.ndarray
    assert compiled.cache_info()["eager_signatures"] == 0


def _arrays(state):
    if isinstance(state, dict):
        return [state["m"], state["w"]]
    return list(state) if isinstance(state, list) else [state.m, state.w]


@pytest.mark.parametrize("kind", [collections.OrderedDict, _CheckedDict])
def test_a_traced_value_bound_to_an_item_of_a_dict_subclass_runs_eagerly(kind):
    # Replayed, the item kept its first value (5.7 where NumPy gives 8.13 at the third call).
    def ema(state, x):
        state["m"] = state["m"] * 0.9 + x     # a replay cannot rebind the item
        return state["m"].sum()

    eager, got = (kind(m=np.ones(3)) for _ in range(2))
    compiled = fusejit.compile(ema)
    for step in range(3):
        assert_same(ema(eager, np.full(3, step)), compiled(got, np.full(3, step)))
        assert_same(eager["m"], got["m"])
        assert type(got["m"]) is np.ndarray
    assert f"bound to an item of a dict or list subclass ({kind.__name__})" in str(
        compiled.explain(got, np.ones(3)))


def test_a_dict_subclass_with_its_own_setitem_keeps_its_arrays():
    # Its __setitem__ would be given proxies, which are not ndarrays: it is read as before.
    def forward(params, x):
        return np.tanh(x @ params["w"]) + params["b"]

    params = _CheckedDict(w=np.eye(3), b=np.arange(3.0))
    compiled = fusejit.compile(forward)
    for step in range(3):
        x = np.full((2, 3), step - 1.0)
        assert_same(forward(params, x), compiled(params, x))
    assert compiled.cache_info()["eager_signatures"] == 0


def _chain(depth: int) -> types.SimpleNamespace:
    """``net.inner.inner...w``: ``depth`` objects below ``net``, the last holding ``w``."""
    node = types.SimpleNamespace(w=np.ones(3))
    for _ in range(depth):
        node = types.SimpleNamespace(inner=node)
    return node


def _innermost(net):
    while hasattr(net, "inner"):
        net = net.inner
    return net


def _same_decay(decayed, depth: int):
    """Three calls of ``decayed`` on a ``_chain(depth)`` each, eagerly and compiled, compared;
    the compiled function and its chain."""
    eager, got = _chain(depth), _chain(depth)
    compiled = fusejit.compile(decayed)
    for step in range(3):
        x = np.full(3, step + 1.0)
        assert_same(decayed(eager, x), compiled(got, x))
        assert_same(_innermost(eager).w, _innermost(got).w)
    return compiled, got


def test_an_array_five_steps_down_changed_by_numpy_code_alone_is_replayed():
    # ``net.inner.inner.inner.inner.w``: swapped for a proxy, so the decay is traced
    def decayed(net, x):
        net.inner.inner.inner.inner.w *= 0.5
        return x * net.inner.inner.inner.inner.w

    compiled, _ = _same_decay(decayed, 4)
    assert compiled.cache_info()["eager_signatures"] == 0


def test_an_array_deeper_than_the_objects_walked_changed_before_its_traced_use_runs_eagerly():
    # Read as a plain array (more than OBJECT_DEPTH steps down): the decay ran only while
    # tracing, and each replay read the array without it.
    def decayed(net, x):
        _innermost(net).w *= 0.5
        return x * _innermost(net).w

    compiled, got = _same_decay(decayed, 13)
    assert "was changed by NumPy code with no traced value in it" in str(
        compiled.explain(got, np.ones(3)))


def test_a_dict_subclass_with_arrays_in_items_and_attributes_proxies_both():
    def scaled(params, x):
        params.scale *= 0.5                 # an attribute of the dict subclass
        params["w"] *= 2.0                  # and one of its items
        return x * params.scale * params["w"]

    def make():
        params = _Params(w=np.ones(3))
        params.scale = np.ones(3)
        return params

    eager, got = make(), make()
    compiled = fusejit.compile(scaled)
    for step in range(3):
        x = np.full(3, step + 1.0)
        assert_same(scaled(eager, x), compiled(got, x))
        assert_same(eager.scale, got.scale)
        assert_same(eager["w"], got["w"])
    assert compiled.cache_info()["eager_signatures"] == 0


_Pair = collections.namedtuple("_Pair", "x h")
_TUPLE = (np.zeros(3), np.zeros(3))


def _from_global_tuple(o, g):
    x, h = _TUPLE
    return g * (1 - h * h) + x       # h * h: NumPy code on captured arrays alone


def _from_attribute(o, g):
    x, h = o.cache
    return g * (1 - h * h) + x


def _from_named_tuple(o, g):
    return g * (1 - o.pair.h * o.pair.h) + o.pair.x


def _from_nested_tuple(o, g):
    x, (h,) = o.nested
    return g * (1 - h * h) + x


def _from_a_list_of_tuples(o, g):
    x, h = o.caches[0]
    return g * (1 - h * h) + x


def _bind(o, x, h):
    global _TUPLE
    _TUPLE = (x, h)
    o.cache, o.pair, o.nested, o.caches = (x, h), _Pair(x, h), (x, (h,)), [(x, h)]


@pytest.mark.parametrize("body", [_from_global_tuple, _from_attribute, _from_named_tuple,
                                  _from_nested_tuple, _from_a_list_of_tuples],
                         ids=lambda body: body.__name__.strip("_"))
def test_arrays_in_tuples_of_captured_state_are_read_by_reference(body):
    # A tuple cannot take proxies in place: a copy holding them stands in while tracing.
    # Read as plain arrays, h * h was a constant of the first call.
    compiled, o = fusejit.compile(body), types.SimpleNamespace()
    for step in range(4):
        _bind(o, np.full(3, float(step)), np.full(3, 0.5 * step))
        held = o.cache
        g = np.ones(3)
        assert_same(body(o, g), compiled(o, g))
        assert o.cache is held          # the caller's tuple, put back after the trace
    assert compiled.cache_info()["hits"] == 3


def _closure_over_a_tuple():
    cache = (np.zeros(3), np.zeros(3))

    def body(g):
        x, h = cache
        return g * (1 - h * h) + x
    return body, cache


def test_arrays_in_a_tuple_a_closure_holds_are_read_by_reference():
    body, cache = _closure_over_a_tuple()
    compiled = fusejit.compile(body)
    for step in range(4):
        cache[0][...], cache[1][...] = step, 0.5 * step
        assert_same(body(np.ones(3)), compiled(np.ones(3)))
    assert compiled.cache_info()["hits"] == 3


class _Dense:
    def __init__(self):
        self.w, self.cache = np.linspace(-1, 1, 20).reshape(4, 5), None

    def forward(self, x):
        h = np.tanh(x @ self.w)
        self.cache = (x, h)               # read back by backward, a compiled method too
        return h

    def backward(self, g):
        x, h = self.cache
        dz = g * (1 - h * h)
        self.dw = x.T @ dz
        return dz @ self.w.T


def test_a_forward_cache_tuple_read_by_a_compiled_backward_is_each_calls():
    eager, layer = _Dense(), _Dense()
    forward, backward = fusejit.compile(layer.forward), fusejit.compile(layer.backward)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal((8, 4))
        assert_same(eager.forward(x), forward(x))
        assert_same(eager.backward(np.ones((8, 5))), backward(np.ones((8, 5))))
        assert_same(eager.dw, layer.dw)
    # each traces twice (the cache and dw are set where there were none), then replays
    assert forward.cache_info()["hits"] == 3 and backward.cache_info()["hits"] == 3


class _Cached:
    def __init__(self):
        self.w = np.arange(3.0)

    def step(self, x):
        self.cache = {"h": x * self.w}     # a dict set where there was none
        return self.cache["h"] + 1


def test_a_dict_of_traced_values_set_where_there_was_none_compiles_on_the_next_call():
    eager, model = _Cached(), _Cached()
    compiled = fusejit.compile(model.step)
    for step in range(5):
        x = np.full(3, step + 1.0)
        assert_same(eager.step(x), compiled(x))
        assert_same(eager.cache["h"], model.cache["h"])
    info = compiled.cache_info()
    assert info["traces"] == 2 and info["hits"] == 3 and info["eager_calls"] == 0


class _Linear:
    def __init__(self):
        self.w, self.bias, self.scale = np.arange(1.0, 4.0), None, None

    def forward(self, x):
        y = x * self.w
        if self.bias is not None:          # an optional parameter bound after compiling
            y = y + self.bias
        return self._scaled(y)

    def _scaled(self, y):                  # read in a method the body calls
        return y if self.scale is None else y * self.scale


def _forward(layer, x):
    return layer.forward(x)


compiled_forward = pytest.mark.parametrize(
    "compile_it", [lambda layer: fusejit.compile(layer.forward),
                   lambda layer: functools.partial(fusejit.compile(_forward), layer)],
    ids=["method", "argument-object"])


@compiled_forward
def test_an_attribute_that_held_none_and_now_holds_an_array_traces_again(compile_it):
    eager, layer = _Linear(), _Linear()
    compiled = compile_it(layer)
    steps = [("bias", None), ("bias", np.full(3, 10.0)), ("scale", np.full(3, 2.0)),
             ("bias", None), ("scale", None)]
    for name, value in steps:
        for model in (eager, layer):
            setattr(model, name, value)
        for _ in range(2):
            x = np.ones(3)
            assert_same(eager.forward(x), compiled(x))


class _Scaled:
    def __init__(self):
        self.w, self.scale, self.mode = np.arange(1.0, 4.0), 2.0, "tanh"

    def forward(self, x):
        y = x * self.w * self.scale
        return np.tanh(y) if self.mode == "tanh" else y


@compiled_forward
def test_a_number_or_string_attribute_rebound_after_compiling_takes_a_path_of_its_own(
        compile_it):
    eager, layer = _Scaled(), _Scaled()
    compiled = compile_it(layer)
    x = np.linspace(-1, 1, 3)
    for name, value in (("scale", 2.0), ("scale", 0.5), ("mode", "linear"), ("scale", 2.0),
                        ("mode", "tanh")):
        for model in (eager, layer):
            setattr(model, name, value)
        for _ in range(2):
            assert_same(eager.forward(x), compiled(x))
    compiled = getattr(compiled, "func", compiled)   # the compiled function under a partial
    assert compiled.cache_info()["traces"] == 4   # (2.0, tanh) serves the last call again
    (tree,) = compiled._entries.values()
    assert all(path.fast_run is not None for path in tree.paths)   # checked there too


class _ScaledPair(_Pair):
    def scale(self):
        return getattr(self, "k", 1.0)


def test_a_named_tuple_with_attributes_of_its_own_keeps_them_while_traced():
    def body(o, x):
        return x * o.p.scale() * o.p.x

    p = _ScaledPair(np.ones(3), np.zeros(3))
    p.k = 3.0
    o = types.SimpleNamespace(p=p)
    compiled = fusejit.compile(body)
    for step in range(3):
        o.p.x[...] = step
        assert_same(body(o, np.ones(3)), compiled(o, np.ones(3)))
