"""Plain Python values read from globals and closure cells are read again before each replay:
rebound to another value, the call takes a path traced for it, as eager NumPy would answer."""
import math
import sys

import numpy as np
import pytest

import fusejit
from fusejit.runtime.program import GuardFailed
from fusejit.tracer import flatten
from tests.oracle import assert_same

SCALE = 2.0
ROWS = 2
USE_BIAS = True
HELPER_SCALE = 0.5
MISSING_LATER = 1.5
LR = 0.1

here = sys.modules[__name__]


def entry_of(compiled, path=0):
    (tree,) = compiled._entries.values()
    return tree.paths[path]


def test_a_rebound_global_takes_a_path_of_its_own_and_an_equal_value_keeps_the_path(
        monkeypatch):
    compiled = fusejit.compile(lambda x: x * SCALE + 1)
    x = np.arange(4, dtype=np.float32)
    for value, traces in ((2.0, 1), (float("2.0"), 1), (3.0, 2), (2.0, 2), (3.0, 2)):
        monkeypatch.setattr(here, "SCALE", value)
        assert_same(x * value + 1, compiled(x))
        assert compiled.cache_info()["traces"] == traces
    assert compiled.cache_info()["hits"] == 3


def test_a_global_int_that_sets_a_shape(monkeypatch):
    def body(x):
        return np.tanh(x.reshape(ROWS, -1)).sum(axis=1)

    compiled = fusejit.compile(body)
    x = np.linspace(-1, 1, 12)
    for rows in (2, 3, 2, 4):
        monkeypatch.setattr(here, "ROWS", rows)
        for _ in range(2):
            assert_same(body(x), compiled(x))


def test_a_global_flag_that_picks_a_branch(monkeypatch):
    def body(x):
        y = x * 2
        if USE_BIAS:
            y = y + 1
        return y

    compiled = fusejit.compile(body)
    x = np.ones(3)
    for flag in (True, False, True, False):
        monkeypatch.setattr(here, "USE_BIAS", flag)
        assert_same(body(x), compiled(x))
    assert compiled.cache_info()["traces"] == 2


def _halved(x):
    return x * HELPER_SCALE


def test_a_global_read_by_a_helper_of_the_same_module(monkeypatch):
    compiled = fusejit.compile(lambda x: _halved(x) - 1)
    x = np.ones(3, np.float32)
    for value in (0.5, 0.25, 0.25):
        monkeypatch.setattr(here, "HELPER_SCALE", value)
        assert_same(x * value - 1, compiled(x))


def test_a_closure_number_changed_by_its_enclosing_function():
    def make():
        k = 2.0

        def body(x):
            return np.exp(x) * k

        def set_k(value):
            nonlocal k
            k = value
        return body, set_k

    body, set_k = make()
    compiled = fusejit.compile(body)
    x = np.linspace(0, 1, 5)
    for value in (2.0, 4.0, 4.0, 2.0):
        set_k(value)
        assert_same(body(x), compiled(x))
    assert compiled.cache_info()["traces"] == 2


def test_a_global_of_another_type_is_another_value_and_nan_is_nan(monkeypatch):
    compiled = fusejit.compile(lambda x: x * SCALE)
    x = np.arange(3, dtype=np.int32)
    for value in (2, 2.0, np.float32(2.0), math.nan, float("nan")):
        monkeypatch.setattr(here, "SCALE", value)
        assert_same(x * value, compiled(x))   # int32, float64, float32, NaN: eager's dtype
    assert compiled.cache_info()["traces"] == 4


def test_a_deleted_global_raises_pythons_error_as_eagerly():
    global MISSING_LATER
    compiled = fusejit.compile(lambda x: x + MISSING_LATER)
    x = np.ones(2)
    assert_same(x + 1.5, compiled(x))
    del MISSING_LATER
    try:
        with pytest.raises(NameError, match="MISSING_LATER"):
            compiled(x)
    finally:
        MISSING_LATER = 1.5
    assert_same(x + 1.5, compiled(x))


def test_the_fast_and_the_general_entry_both_check_the_global(monkeypatch):
    compiled = fusejit.compile(lambda x: x * SCALE)
    x = np.ones(3)
    compiled(x)
    compiled(x)
    entry = entry_of(compiled)
    assert entry.fast_run is not None
    monkeypatch.setattr(here, "SCALE", 5.0)
    leaves = flatten(((x,), {}))[0]
    for run in (entry.fast_run, entry._run):
        with pytest.raises(GuardFailed, match="global SCALE was 2.0 when traced, now 5.0"):
            run(leaves)


def test_a_global_that_changes_every_call_runs_eagerly_past_max_traces_and_says_why(
        monkeypatch):
    compiled = fusejit.compile(lambda x: x * LR, max_traces=3)
    x = np.ones(2)
    for step in range(6):
        monkeypatch.setattr(here, "LR", step + 1.0)
        assert_same(x * LR, compiled(x))
    assert compiled.cache_info()["traces"] == 3
    assert compiled.cache_info()["eager_calls"] == 3
    text = str(compiled.explain(x))
    assert "global LR was 3.0 when traced, now 4.0" in text
    assert "as an argument" in text
    assert "global LR == 1.0, as traced (read again before each replay)" in text


def test_an_attribute_the_body_counts_with_is_the_state_watch_not_a_read():
    class Counter:
        def __init__(self):
            self.t = 0

        def step(self, x):
            self.t += 1
            return x * 2

    model = Counter()
    compiled = fusejit.compile(model.step)
    for _ in range(4):
        assert_same(np.ones(2) * 2, compiled(np.ones(2)))
    assert model.t == 4
    assert "self.t changed" in str(compiled.explain(np.ones(2)))
