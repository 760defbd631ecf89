"""Arrays the body writes in place that share memory with another input: the program computes
every value before it writes back, so such a call runs eagerly (and only that call)."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

SHARED = np.zeros(6)


def bump_then_read(a, b):
    b += 1
    return a * 1


def write_out_then_sum(a, b):
    np.add(a, 1, out=b)
    return a.sum()


def set_item_then_read(a, b):
    a[2] = 5
    return b * 1


def bump_both(a, b):
    a += 1
    b += 1
    return a


def bump_global_view(a):
    a += 1
    return a * 0 + SHARED[:3]


def compile_and_trace(fn):
    compiled = fusejit.compile(fn)
    compiled(np.zeros(6)[:3].copy(), np.zeros(3)) if fn is not bump_global_view else \
        compiled(np.zeros(3))
    return compiled


@pytest.mark.parametrize("fn", [bump_then_read, write_out_then_sum, set_item_then_read,
                                bump_both])
@pytest.mark.parametrize("views", [lambda z: (z[:3], z[:3]), lambda z: (z[1:4], z[:3]),
                                   lambda z: (z[:3], z[:6:2])], ids=["same", "shifted", "strided"])
def test_writes_into_an_argument_that_another_argument_overlaps_run_eagerly(fn, views):
    compiled = compile_and_trace(fn)
    eager_memory, compiled_memory = np.arange(6.0), np.arange(6.0)
    assert_same(fn(*views(eager_memory)), compiled(*views(compiled_memory)))
    assert_same(eager_memory, compiled_memory)
    info = compiled.cache_info()
    assert info["aliased_calls"] == 1 and info["traces"] == 1 and info["paths"] == 1


def test_a_written_argument_overlapping_a_captured_array_runs_eagerly():
    compiled = compile_and_trace(bump_global_view)
    SHARED[:] = 0
    eager = bump_global_view(SHARED[1:4])
    SHARED[:] = 0
    assert_same(eager, compiled(SHARED[1:4]))
    assert compiled.cache_info()["aliased_calls"] == 1


def test_arguments_with_one_owner_that_do_not_overlap_replay():
    compiled = compile_and_trace(bump_then_read)
    memory = np.zeros(6)
    for _ in range(2):
        assert_same(np.zeros(3), compiled(memory[3:], memory[:3]))
    assert memory.tolist() == [2, 2, 2, 0, 0, 0]
    info = compiled.cache_info()
    assert info["hits"] == 2 and info["aliased_calls"] == 0


def test_a_buffer_owned_by_another_object_is_compared_by_address():
    compiled = compile_and_trace(bump_then_read)
    buffer = bytearray(np.zeros(6).tobytes())
    a, b = np.frombuffer(buffer)[1:4], np.frombuffer(buffer)[:3]   # two owners: one bytearray
    assert_same(np.array([1.0, 1.0, 0.0]), compiled(a, b))      # a[:2] is b[1:]
    assert compiled.cache_info()["aliased_calls"] == 1


def _double_then_bump(x):
    x *= 2
    x[0] += 1


def test_a_written_argument_that_overlaps_itself_runs_eagerly():
    window = np.lib.stride_tricks.sliding_window_view
    compiled = fusejit.compile(_double_then_bump)
    for k in range(3):
        eager, mine = np.arange(6.0) + k, np.arange(6.0) + k
        _double_then_bump(window(eager, 3, writeable=True))
        compiled(window(mine, 3, writeable=True))
        assert_same(eager, mine)
    assert compiled.cache_info()["aliased_calls"] == 2


def _same_or_difference(x, y):
    return x * 2 if x is y else x - y


def _same_in_a_dict(d):
    return d["a"] * 2 if d["a"] is d["b"] else d["a"] - d["b"]


def test_an_array_passed_twice_is_one_object_in_the_body():
    compiled, in_dict = fusejit.compile(_same_or_difference), fusejit.compile(_same_in_a_dict)
    a, b = np.arange(3.0), np.ones(3)
    for x, y in ((a, a), (a, b), (b, b), (b, a), (a, a)):
        assert_same(_same_or_difference(x, y), compiled(x, y))
        assert_same(_same_in_a_dict({"a": x, "b": y}), in_dict({"a": x, "b": y}))
    assert compiled.cache_info()["signatures"] == 2


def _scale_both(x, y):
    x *= 2
    return y + 1


def test_writes_through_one_of_two_names_for_an_array_are_seen_through_the_other():
    compiled = fusejit.compile(_scale_both)
    for _ in range(3):
        eager, mine = np.arange(3.0), np.arange(3.0)
        assert_same(_scale_both(eager, eager), compiled(mine, mine))
        assert_same(eager, mine)
    assert compiled.cache_info()["hits"] == 2
