"""Items of a list or dict attribute replaced by traced arrays (``self.m[k] = b1 * self.m[k] +
g``, NumPy's usual Adam) replay: the container stays the caller's object and gets a new array
per item on every call, as eagerly (``side_effects._item_write``). What a replay cannot redo
(a key added, a traced Python float stored) still runs eagerly."""
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
