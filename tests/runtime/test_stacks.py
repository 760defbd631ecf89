"""Returned concatenations whose parts kernels write straight into the result (runtime/stacks)."""
import copy

import numpy as np

import fusejit
from bench.harness import peak_memory
from bench.models import lstm
from fusejit.runtime import stacks
from tests.oracle import assert_same


def _parts_in_rows(compiled, *args) -> int:
    """How many kernel outputs the replay writes straight into a stacked result."""
    program = compiled.entry_for(*args).paths[0].program
    return sum(len(step.fn.rows) for step in program.steps if isinstance(step.fn, stacks.IntoRows))


def _check(fn, make_args, calls=3):
    """Compiled against eager on fresh arguments, ``calls`` times; the compiled function."""
    compiled = fusejit.compile(fn)
    for call in range(calls):
        args = make_args(call)
        expected = fn(*copy.deepcopy(args))
        assert_same(expected, compiled(*args))
    assert compiled.cache_info()["traces"] == 1, compiled.cache_info()   # the rest replayed
    return compiled


def _rnn(xs, h, w):
    hs = []
    for x in xs:
        h = np.tanh(x + h * w)
        hs.append(h)
    return np.stack(hs)


def _inputs(call, steps=5):
    rng = np.random.default_rng(call)
    return (rng.standard_normal((steps, 3, 8)).astype(np.float32),
            rng.standard_normal((3, 8)).astype(np.float32), np.float32(0.5))


def test_each_step_writes_its_part_into_the_stacked_result():
    compiled = _check(_rnn, _inputs)
    assert _parts_in_rows(compiled, *_inputs(0)) == 5


def test_the_lstms_replay_peak_memory_with_its_arena_is_at_most_eager_numpys():
    # Its sixteen hidden states lived in the arena until np.stack copied them out: 5.4 MB
    # against eager NumPy's 4.3 MB at the bench's size (689 KB against 547 KB here).
    (xs, h, c, params), _ = lstm.make_inputs(size="quick")
    compiled = fusejit.compile(lstm.lstm)
    for _ in range(3):
        assert_same(lstm.lstm(xs, h, c, params), compiled(xs, h, c, params),
                    {np.dtype(np.float32): (2e-5, 2e-6)})
    # the last hidden state is written over a product that dies in its kernel: copied
    assert _parts_in_rows(compiled, xs, h, c, params) == 15
    assert compiled.cache_info()["hits"] == 2
    eager = peak_memory(lambda: lstm.lstm(xs, h, c, params))
    replay = peak_memory(lambda: compiled(xs, h, c, params))
    assert replay <= eager, (replay, eager)


def test_a_part_also_returned_stays_an_array_of_its_own():
    def fn(xs, h, w):
        hs = [np.tanh(x + h * w) for x in xs]
        return np.stack(hs), hs[-1]

    compiled = _check(fn, _inputs)
    stacked, last = compiled(*_inputs(7))
    assert not np.shares_memory(stacked, last)
    assert _parts_in_rows(compiled, *_inputs(7)) == 4   # the last one is copied


def test_a_part_a_later_kernel_could_write_over_is_not_stacked():
    # hs[0] * 2 is hs[0]'s last reader: its kernel may take hs[0]'s buffer over, which must
    # not be the stacked result's rows.
    def fn(xs, h, w):
        hs = [np.tanh(x + h * w) for x in xs]
        return np.stack(hs), hs[0] * 2 + 1

    _check(fn, _inputs)


def test_a_part_written_in_place_after_it_was_stacked():
    def fn(xs, h, w):
        hs = [np.tanh(x + h * w) for x in xs]
        stacked = np.stack(hs)
        hs[1][0] = 7.0
        return stacked, hs[1] + 1

    _check(fn, _inputs)


def test_a_result_written_in_place_keeps_its_parts_apart():
    # Were hs[0] written into the result, stacked[0] = 0 would write over it before its sum
    # reads it. The graph returns the write's result, not the concatenation's, so nothing is
    # stacked (stacks.find also refuses a concatenation whose result is written).
    def fn(xs, h, w):
        hs = [np.tanh(x + h * w) for x in xs]
        stacked = np.stack(hs)
        stacked[0] = 0.0
        return stacked, hs[0].sum(axis=1)   # a reduction: it cannot take hs[0] over

    compiled = _check(fn, _inputs)
    assert not _parts_in_rows(compiled, *_inputs(0))


def test_two_stacks_from_the_same_kernels():
    def fn(xs, h, w):
        hs, cs = [], []
        c = h
        for x in xs:
            c = np.tanh(x + c * w)
            h = c * 2 + h
            hs.append(h)
            cs.append(c)
        return np.stack(hs), np.stack(cs)

    compiled = _check(fn, _inputs)
    assert _parts_in_rows(compiled, *_inputs(0)) == 10


def test_concatenations_along_other_axes_are_copied_and_arguments_copied_into_rows():
    def fn(xs, h, w):
        parts = [np.tanh(x + h * w) for x in xs]
        return np.concatenate(parts, axis=1), np.concatenate([h, parts[0], h])

    compiled = _check(fn, _inputs)
    assert _parts_in_rows(compiled, *_inputs(0)) == 1   # parts[0]; h is copied twice


def test_explain_counts_the_stacked_result_and_not_the_parts_written_into_it():
    compiled = _check(_rnn, _inputs)
    memory = compiled.explain(*_inputs(0)).memory
    # the result (5 steps of 3x8 float32) from the first step on; each step's kernel writes
    # its row and allocates nothing; eager NumPy also holds every h until np.stack copies them
    assert memory["peak_bytes"] == 5 * 3 * 8 * 4
    assert memory["eager_peak_bytes"] == 2 * 5 * 3 * 8 * 4
