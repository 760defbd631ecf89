"""A body that draws from a random generator that outlives the call runs eagerly, so every
call draws new numbers, the same ones NumPy draws (``tracer/random_draws.py``); draws from a
generator the body seeds itself stay constants of the program."""
import functools
import random
import sys
import types

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same
from tests.runtime import random_draws_helpers as helpers
from tests.runtime.random_draws_helpers import noisy

X = np.linspace(-1, 1, 8, dtype=np.float32)
RNG = np.random.default_rng(0)
CFG = {"rng": np.random.default_rng(3)}


def check_draws_like_numpy(body, fresh):
    """``body`` compiled answers as eagerly call after call from the same generator states
    (``fresh()`` sets them and gives the arguments after ``x``), with new numbers each call,
    and says why it runs eagerly."""
    compiled = fusejit.compile(body)
    args = fresh()
    got = [compiled(X, *args) for _ in range(3)]
    args = fresh()
    want = [body(X, *args) for _ in range(3)]
    for g, w in zip(got, want, strict=True):
        assert_same(w, g)
    assert not np.array_equal(got[0], got[1])
    info = compiled.cache_info()
    assert (info["traces"], info["eager_signatures"], info["eager_calls"]) == (1, 1, 2)
    text = str(compiled.explain(X, *args))
    assert "drew random numbers from" in text
    return text


def reseeded(monkeypatch, holder, name, seed):
    def fresh():
        monkeypatch.setattr(holder, name, np.random.default_rng(seed))
        return ()
    return fresh


def test_a_generator_in_the_bodys_globals(monkeypatch):
    here = sys.modules[__name__]
    text = check_draws_like_numpy(lambda x: x + RNG.standard_normal(x.shape),
                                  reseeded(monkeypatch, here, "RNG", 0))
    assert "from global RNG" in text


def test_a_generator_passed_as_an_argument():
    text = check_draws_like_numpy(lambda x, rng: x * (rng.random(x.shape) > 0.5),
                                  lambda: (np.random.default_rng(1),))
    assert "from rng" in text


def test_a_generator_of_self():
    class Dropout:
        def __init__(self):
            self.rng = np.random.default_rng(2)

        def __call__(self, x):
            return x * (self.rng.random(x.shape) >= 0.25) / 0.75

    layer, twin = Dropout(), Dropout()
    compiled = fusejit.compile(layer.__call__)
    for _ in range(3):
        assert_same(twin(X), compiled(X))
    assert "self.rng" in str(compiled.explain(X))


def test_a_generator_in_a_dict(monkeypatch):
    def fresh():
        monkeypatch.setitem(CFG, "rng", np.random.default_rng(3))
        return ()

    text = check_draws_like_numpy(lambda x: x - CFG["rng"].uniform(size=x.shape), fresh)
    assert "from global CFG['rng']" in text


def test_a_generator_in_a_closure_cell():
    rng = np.random.default_rng(4)

    def fresh():
        rng.bit_generator.state = np.random.default_rng(4).bit_generator.state
        return ()

    text = check_draws_like_numpy(lambda x: x * rng.normal(size=x.shape), fresh)
    assert "from closure rng" in text


def test_a_generator_of_another_modules_helper(monkeypatch):
    """Found as the helper is entered (``code_reads``): no root of the body reaches it."""
    text = check_draws_like_numpy(lambda x: noisy(x) * 2, reseeded(monkeypatch, helpers, "RNG", 7))
    assert "from global tests.runtime.random_draws_helpers.RNG" in text


def test_the_legacy_global_generator():
    def body(x):
        return x + np.random.standard_normal(x.shape)

    check_draws_like_numpy(body, lambda: np.random.seed(5) or ())


def test_pythons_random_module():
    def body(x):
        return x * random.random()

    check_draws_like_numpy(body, lambda: random.seed(6) or ())


def test_a_generator_seeded_in_the_body_compiles():
    def body(x):
        return x + np.random.default_rng(8).standard_normal(x.shape).astype(x.dtype)

    compiled = fusejit.compile(body)
    for _ in range(3):
        assert_same(body(X), compiled(X))
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"], info["hits"]) == (1, 0, 2)


@pytest.mark.parametrize("make", [lambda: np.random.default_rng(),
                                  lambda: np.random.RandomState(),
                                  lambda: random.Random()], ids=["default_rng",
                                                                 "RandomState", "Random"])
def test_a_generator_seeded_from_entropy_in_the_body(make):
    def body(x):
        rng = make()
        return x + (rng.random() if isinstance(rng, random.Random) else rng.random(x.shape))

    compiled = fusejit.compile(body)
    first, second = compiled(X), compiled(X)
    assert not np.array_equal(first, second)
    assert "operating system's entropy" in str(compiled.explain(X))


def test_a_generator_the_body_does_not_draw_from_keeps_the_program():
    rngs = types.SimpleNamespace(rng=np.random.default_rng(9))

    def body(x):
        return x * 2.0 if rngs.rng is not None else x

    compiled = fusejit.compile(body)
    for _ in range(3):
        assert_same(body(X), compiled(X))
    assert compiled.cache_info()["eager_calls"] == 0



class LazyNoise:
    """Makes its generator on the first call and keeps it; ``spawn`` draws no number."""

    def __init__(self):
        self.rng = None

    def __call__(self, x):
        if self.rng is None:
            self.rng = np.random.default_rng(10)
        return x + self.rng.normal(size=x.shape)


def test_a_generator_made_on_the_first_call_and_kept():
    layer, twin = LazyNoise(), LazyNoise()
    compiled = fusejit.compile(layer.__call__)
    for _ in range(3):
        assert_same(twin(X), compiled(X))
    assert "self.rng (made by the body and kept)" in str(compiled.explain(X))


class Shared:
    rng = np.random.default_rng(11)   # a class attribute, read as ``self.rng``

    def __call__(self, x):
        return x + self.rng.spawn(1)[0].normal(size=x.shape)


def test_a_class_attribute_generator_spawned_from(monkeypatch):
    def fresh():
        monkeypatch.setattr(Shared, "rng", np.random.default_rng(11))
        return ()

    layer = Shared()
    text = check_draws_like_numpy(lambda x: layer(x), fresh)
    assert "from closure layer.rng" in text


def test_a_generator_behind_a_partial_and_a_default(monkeypatch):
    def add_noise(x, rng=None):
        return x + rng.normal(size=x.shape)

    def scaled_noise(x, rng=np.random.default_rng(12)):   # noqa: B008 -- the case itself
        return x * rng.normal(size=x.shape)

    noisy = functools.partial(add_noise, rng=np.random.default_rng(13))
    compiled = fusejit.compile(lambda x: noisy(x) + scaled_noise(x))
    first = [compiled(X) for _ in range(2)]
    assert not np.array_equal(*first)
    assert compiled.cache_info()["eager_signatures"] == 1
