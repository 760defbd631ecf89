"""Untraced code (a method, another module's function) that computes from its module's
global arrays alone (``W * 2.0``): the body reads the result as a traced value, so a replay
computes it from the arrays as they are then (``tracer/untraced_reads.py``)."""
import numpy as np

import fusejit
from tests.e2e import capture_state
from tests.oracle import assert_same

STATE = {"v": np.zeros(3)}


class Reader:
    def read(self):
        return STATE["v"] + 0.0   # no traced value in it


READER = Reader()


def through_a_method(x, d):
    d["v"] = x * 2.0
    return READER.read() + x


def through_another_module(x):
    return x + capture_state.doubled() + capture_state.table_plus(1.0)


def test_another_modules_helper_reads_its_arrays_as_they_are_on_every_call():
    compiled = fusejit.compile(through_another_module)
    x = np.arange(2.0)
    for step in range(4):
        if step == 2:
            capture_state.W[...] = 5.0
        if step == 3:
            capture_state.W = np.full(2, 7.0)
            capture_state.TABLE["v"] = np.full(2, 1.0)
        assert_same(through_another_module(x), compiled(x))
    assert type(capture_state.W) is np.ndarray
    assert type(capture_state.TABLE["v"]) is np.ndarray
    assert compiled.cache_info()["traces"] == 1
    capture_state.W, capture_state.TABLE["v"] = np.zeros(2), np.zeros(2)


def test_a_method_reads_the_global_dict_as_it_is_and_as_the_argument_stored_it():
    compiled = fusejit.compile(through_a_method)
    x = np.arange(3.0)
    for step, aliased in enumerate([False, False, True, True, False]):
        seen = []
        for fn in (through_a_method, compiled):
            STATE["v"] = np.full(3, 10.0 * step)
            d = STATE if aliased else {"v": np.zeros(3)}
            seen.append((fn(x + step, d), d["v"]))
        assert_same(*seen)
        assert type(STATE["v"]) is np.ndarray
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (2, 0)


def through_numba(x):
    return x + capture_state.total_of_w()


def test_a_frame_that_hands_its_global_to_a_numba_function_keeps_the_plain_array():
    capture_state.W = np.full(2, 3.0)
    compiled = fusejit.compile(through_numba)
    assert_same(through_numba(np.arange(2.0)), compiled(np.arange(2.0)))
    assert type(capture_state.W) is np.ndarray
    capture_state.W = np.zeros(2)
