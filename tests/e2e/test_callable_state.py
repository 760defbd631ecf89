"""State kept by callables the body reaches through values, not names: a closure given as an
argument or held by an object or a list (``nonlocal avg; avg = ...``), a bound method or a
partial given as an argument (``self.avg = ...`` of the object it binds). A replay would not
make their changes; each call answers as eager Python does, and the cells and objects hold
concrete values, never fusejit's proxies.
"""
import functools

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

ONES = np.ones(2)


def make_ema():
    avg = np.zeros(2)

    def update(v):
        nonlocal avg
        avg = 0.5 * avg + v
        return avg
    return update


def make_counter():
    n = 0

    def bump(v):
        nonlocal n
        n += 1
        return v * n
    return bump


def call_it(x, fn):
    return fn(x) * 1


class Holder:
    def __init__(self, fn):
        self.fn = fn

    def forward(self, x):
        return self.fn(x) * 1


HOOKS = []


def first_hook(x):
    return HOOKS[0](x) * 1


def _runs(make):
    """(eager results, compiled results, the two callables) over four calls."""
    eager_fn, compiled_fn = make(), make()
    compiled = fusejit.compile(call_it)
    eager = [call_it(ONES, eager_fn) for _ in range(4)]
    return eager, [compiled(ONES, compiled_fn) for _ in range(4)], eager_fn, compiled_fn


@pytest.mark.parametrize("make", [make_ema, make_counter], ids=["array-cell", "count-cell"])
def test_a_closure_given_as_an_argument_keeps_its_state(make):
    eager, compiled, _, fn = _runs(make)
    assert_same(eager, compiled)
    assert type(fn.__closure__[0].cell_contents) in (np.ndarray, int)


def test_a_closure_held_by_an_object_keeps_its_state():
    eager, model = Holder(make_ema()), Holder(make_ema())
    compiled = fusejit.compile(model.forward)
    assert_same([eager.forward(ONES) for _ in range(4)], [compiled(ONES) for _ in range(4)])
    assert type(model.fn.__closure__[0].cell_contents) is np.ndarray


def test_a_closure_held_in_a_global_list_keeps_its_state():
    HOOKS[:] = [make_counter()]
    eager = [first_hook(ONES) for _ in range(3)]
    HOOKS[:] = [make_counter()]
    compiled = fusejit.compile(first_hook)
    assert_same(eager, [compiled(ONES) for _ in range(3)])


def test_a_closure_that_only_reads_its_cells_compiles_once():
    scale = make_counter()
    scale(ONES)   # n == 1 from now on

    def read_only(v, k=scale.__closure__[0]):
        return v * k.cell_contents
    compiled = fusejit.compile(call_it)
    assert_same([call_it(ONES, read_only)] * 3, [compiled(ONES, read_only) for _ in range(3)])
    assert compiled.cache_info()["traces"] == 1


class Ema:
    def __init__(self):
        self.avg, self.steps = np.zeros(2), 0

    def update(self, v):
        self.avg = 0.5 * self.avg + v
        return self.avg

    def count(self, v):
        self.steps += 1
        return v * self.steps


def _update(ema, v):
    return ema.update(v)


BOUND = {
    "bound-method": lambda e: e.update,
    "partial-of-a-function": lambda e: functools.partial(_update, e),
    "partial-of-a-method": lambda e: functools.partial(Ema.update, e),
}


@pytest.mark.parametrize("name", list(BOUND))
def test_an_object_a_callable_argument_binds_is_updated_by_each_replay(name):
    eager_ema, compiled_ema = Ema(), Ema()
    eager_fn, compiled_fn = BOUND[name](eager_ema), BOUND[name](compiled_ema)
    compiled = fusejit.compile(call_it)
    for _ in range(5):
        assert_same(call_it(ONES, eager_fn), compiled(ONES, compiled_fn))
        assert_same(eager_ema.avg, compiled_ema.avg)
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (1, 0)


def test_a_count_kept_by_a_bound_method_argument_is_kept():
    eager_ema, compiled_ema = Ema(), Ema()
    compiled = fusejit.compile(call_it)
    eager = [call_it(ONES, eager_ema.count) for _ in range(3)]
    assert_same(eager, [compiled(ONES, compiled_ema.count) for _ in range(3)])
    assert compiled_ema.steps == 3


def test_a_traced_value_handed_to_a_list_s_append_is_an_array_each_call():
    def log_it(x, log):
        log(x * 2)
        return x
    eager, got = [], []
    compiled = fusejit.compile(log_it)
    for scale in (1.0, 2.0, 3.0):
        log_it(ONES * scale, eager.append)
        compiled(ONES * scale, got.append)
    assert [type(v) for v in got] == [np.ndarray] * 3
    assert_same(eager, got)


def _counts_in_a_closure_of_its_own(x):
    total = 0

    def add(v):
        nonlocal total
        total += 1
        return v * total
    return add(x) + add(x)


def _counts_in_a_closure_it_makes(x):
    bump = make_counter()
    return bump(x) + bump(x)


@pytest.mark.parametrize("fn", [_counts_in_a_closure_of_its_own, _counts_in_a_closure_it_makes])
def test_a_closure_the_body_makes_is_no_state_and_compiles(fn):
    compiled = fusejit.compile(fn)
    for scale in range(4):
        assert_same(fn(ONES * scale), compiled(ONES * scale))
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (1, 0)


def make_lazy():
    w = None

    def scaled(v):
        nonlocal w
        if w is None:
            w = np.full(2, 2.0)
        return v * w
    return scaled


def test_a_closure_that_makes_its_array_once_compiles_on_the_next_call():
    eager, compiled_fn = make_lazy(), make_lazy()
    compiled = fusejit.compile(call_it)
    for scale in range(4):
        assert_same(call_it(ONES * scale, eager), compiled(ONES * scale, compiled_fn))
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"], info["hits"]) == (2, 0, 2)


class Hooked:
    def __init__(self, hook):
        self.hook, self.hooks = hook, [hook]

    def forward(self, x):
        return self.hook(x) * 1

    def forward_first(self, x):
        return self.hooks[0](x) * 1


@pytest.mark.parametrize("name", list(BOUND))
@pytest.mark.parametrize("method", ["forward", "forward_first"])
def test_an_object_a_callable_attribute_binds_is_updated_by_each_replay(name, method):
    eager_ema, compiled_ema = Ema(), Ema()
    eager = getattr(Hooked(BOUND[name](eager_ema)), method)
    compiled = fusejit.compile(getattr(Hooked(BOUND[name](compiled_ema)), method))
    for scale in range(4):
        assert_same(eager(ONES * scale), compiled(ONES * scale))
        assert_same(eager_ema.avg, compiled_ema.avg)
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (1, 0)


def _counts_in_a_recursive_closure(x):
    count = 0

    def rec(n):
        nonlocal count
        count += 1
        return x if n == 0 else rec(n - 1) * 1.5
    return rec(3) + count


def _counts_rows(x):
    rows = 0

    def row(r):
        nonlocal rows
        rows += 1
        return r * 2
    return np.apply_along_axis(row, 1, x) + rows


@pytest.mark.parametrize("fn", [_counts_in_a_recursive_closure, _counts_rows])
def test_a_closure_the_body_makes_and_runs_is_no_state(fn):
    compiled = fusejit.compile(fn)
    for scale in range(4):
        x = np.ones((2, 2)) * scale
        assert_same(fn(x), compiled(x))
    assert compiled.cache_info()["eager_calls"] == 0


def make_tracker():
    best = (0, 0.0)

    def track(step):
        nonlocal best
        best = (step, 1.0)
    return track, lambda: best


def test_a_closure_rebinding_a_tuple_is_state_and_compiles_once_it_holds_still():
    track, best = make_tracker()

    def step(x, i, hook):
        hook(i)
        return x * 2
    compiled = fusejit.compile(step)
    for _ in range(4):
        assert_same(ONES * 2, compiled(ONES, 5, track))
    assert best() == (5, 1.0)
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (2, 0)
