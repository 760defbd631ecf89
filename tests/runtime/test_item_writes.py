"""Items of a list or dict attribute replaced by traced arrays (``self.m[k] = b1 * self.m[k] +
g``, NumPy's usual Adam) replay: the container stays the caller's object and gets a new array
per item on every call, as eagerly (``side_effects._item_write``). What a replay cannot redo
(a traced Python float stored, keys added on every call) still runs eagerly; keys added once
(a lazily made moment) trace again on the next call, which compiles."""
import copy

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


class Adam:
    def __init__(self, params, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = [np.zeros_like(v) for v in params.values()]

    def step(self, params, grads, t):
        for i, k in enumerate(params):
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * grads[k]
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * grads[k] ** 2
            m_hat = self.m[k] / (1 - self.b1 ** t)
            v_hat = self.v[i] / (1 - self.b2 ** t)
            params[k] -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return self.m["w"].sum()


def problem(seed=0):
    rng = np.random.default_rng(seed)
    params = {"w": rng.standard_normal((4, 3)).astype(np.float32),
              "b": rng.standard_normal(3).astype(np.float32)}
    grads = [{k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
             for _ in range(4)]
    return params, grads


def test_an_optimizer_storing_new_moments_replays_as_numpy():
    params, grads = problem()
    mine, eager = copy.deepcopy(params), copy.deepcopy(params)
    opt_mine, opt_eager = Adam(mine), Adam(eager)
    compiled = fusejit.compile(opt_mine.step)
    m_dict, v_list, kept = opt_mine.m, opt_mine.v, []
    for t, g in enumerate(grads, start=1):
        assert_same(opt_eager.step(eager, g, float(t)), compiled(mine, g, float(t)))
        for k in params:
            assert_same(eager[k], mine[k])
            assert_same(opt_eager.m[k], opt_mine.m[k])
        for a, b in zip(opt_eager.v, opt_mine.v, strict=True):
            assert_same(a, b)
        kept.append((opt_mine.m["w"], opt_mine.m["w"].copy()))
    assert opt_mine.m is m_dict and opt_mine.v is v_list      # the same containers
    for array, values in kept:      # each call stored a new array; none was written later
        np.testing.assert_array_equal(array, values)
    assert len({id(array) for array, _ in kept}) == len(kept)
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (1, 3, 0)


class Lazy:
    def __init__(self):
        self.m = {}

    def step(self, g):
        if "g" not in self.m:
            self.m["g"] = np.zeros_like(g)
        self.m["g"] = self.m["g"] * 0.5 + g
        self.total = self.m["g"].sum().item()
        return self.m["g"]


class History:
    def __init__(self):
        self.loss = [0.0]

    def step(self, g):
        self.loss[0] = (g * g).sum().item()     # a traced Python float: not an array
        return g * 2


@pytest.mark.parametrize("make", [Lazy, History], ids=["key_added", "python_float"])
def test_what_replay_cannot_store_again_runs_eagerly_with_numpys_state(make):
    mine, eager = make(), make()
    compiled = fusejit.compile(mine.step)
    for g in problem()[1]:
        assert_same(eager.step(g["w"]), compiled(g["w"]))
        assert_same(vars(eager), vars(mine))


class LazyMomentum:
    def __init__(self, lr=0.1, mu=0.9):
        self.v, self.lr, self.mu = {}, lr, mu

    def step(self, params, grads):
        for k, p in params.items():
            if k not in self.v:
                self.v[k] = np.zeros_like(p)
            self.v[k] = self.mu * self.v[k] - self.lr * grads[k]
            p += self.v[k]


def test_moments_made_on_the_first_call_compile_from_the_second():
    params, grads = problem()
    eager_params = copy.deepcopy(params)
    mine, eager = LazyMomentum(), LazyMomentum()
    compiled = fusejit.compile(mine.step)
    for g in grads:
        assert_same(eager.step(eager_params, g), compiled(params, g))
        assert_same((eager_params, eager.v), (params, mine.v))
    info = compiled.cache_info()
    # the first call added the keys (traced, then run as traced); the second traced again
    assert (info["traces"], info["hits"], info["eager_calls"]) == (2, 2, 0)


class Grows:
    def __init__(self):
        self.cache = {}

    def step(self, x):
        self.cache[len(self.cache)] = x * 2
        return x + 1


def test_a_dict_that_gains_a_key_on_every_call_runs_eagerly():
    mine, eager = Grows(), Grows()
    compiled = fusejit.compile(mine.step)
    for step in range(4):
        x = np.arange(3.0) + step
        assert_same(eager.step(x), compiled(x))
        assert_same(eager.cache, mine.cache)
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (2, 0, 2)
    assert "self.cache[1] set to an array float64[3] in the body (a key added)" in \
        str(compiled.explain(np.zeros(3)))


class KeepsArgument:
    def __init__(self):
        self.last, self.cache, self.c = np.zeros(3), None, {"last": np.zeros(3)}

    def step(self, x, y):
        self.last = x                   # the argument itself, eagerly
        y *= 2                          # written, then stored: y itself too
        self.cache = (y, np.tanh(y))    # a forward cache for a backward
        self.c["last"] = x
        return x.sum()


def test_arguments_stored_on_an_object_are_those_very_arrays():
    mine, eager = KeepsArgument(), KeepsArgument()
    compiled = fusejit.compile(mine.step)
    for step in range(4):
        x, y = np.arange(3.0) + step, np.ones(3) * step
        want_y = y.copy()
        assert_same(eager.step(x.copy(), want_y), compiled(x, y))
        assert_same(want_y, y)
        assert mine.last is x and mine.c["last"] is x and mine.cache[0] is y
        assert_same(eager.cache, mine.cache)
    info = compiled.cache_info()
    # the second call traces again: cache was None (pystate), then replays
    assert (info["traces"], info["hits"], info["eager_calls"]) == (2, 2, 0)
