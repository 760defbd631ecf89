"""Code the body calls but the tracer does not see (a method, a function kept in a dict, a
sibling closure) may change a global or closure array in place with no traced value in it.
A replay would skip that change, so the signature runs eagerly (``tracer/audit.py``)."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

DECAYED = np.ones(3)
HALVED = np.ones(3)
SCALED = np.ones(3)
READ_ONLY_HERE = np.arange(3.0)


class Schedule:
    def step(self):
        DECAYED[...] *= 0.5      # the module's own globals: no proxy here


def _halve():
    HALVED[...] *= 0.5


HOOKS = {"halve": _halve}


def through_a_method(x):
    Schedule().step()
    return x + DECAYED


def through_a_dict(x):
    HOOKS["halve"]()
    return x * HALVED


def traced_update(x):
    SCALED[...] *= 0.5           # the body's own line: traced through the proxy
    return x + SCALED + READ_ONLY_HERE


def _reset():
    for array in (DECAYED, HALVED, SCALED):
        array[...] = 1.0


def _compiled_after_eager(fn, calls=3):
    """Three eager calls, then three compiled ones from the same global state, compared."""
    _reset()
    eager = [fn(np.zeros(3)) for _ in range(calls)]
    _reset()
    compiled = fusejit.compile(fn)
    for want in eager:
        assert_same(want, compiled(np.zeros(3)))
    return compiled


@pytest.mark.parametrize("fn", [through_a_method, through_a_dict], ids=["method", "dict"])
def test_an_untraced_change_to_a_global_runs_eagerly(fn):
    compiled = _compiled_after_eager(fn)
    assert "untraced code changed the array" in str(compiled.explain(np.zeros(3)))
    assert compiled.cache_info()["eager_calls"] == 2


def test_a_traced_update_of_a_global_still_compiles():
    assert _compiled_after_eager(traced_update).cache_info()["eager_calls"] == 0


def test_an_untraced_change_to_a_closure_array_runs_eagerly():
    def make():
        state = np.ones(2)

        def decay():
            state[...] *= 0.5

        def body(x):
            decay()
            return x + state
        return body

    eager, compiled = make(), fusejit.compile(make())
    for _ in range(3):
        assert_same(eager(np.zeros(2)), compiled(np.zeros(2)))
    assert compiled.cache_info()["eager_calls"] == 2


STATE = np.zeros((4, 3))


def write_row(state, row, t):
    state[t] = row
    return state[: t + 1].sum(axis=0)


def test_a_global_passed_as_the_argument_the_body_writes_still_compiles():
    # a script's ``step(STATE, ...)``: STATE changes through the traced argument, not untraced
    eager_state = STATE.copy()
    compiled = fusejit.compile(write_row)
    for t in range(3):
        row = np.full(3, t + 1.0)
        assert_same(write_row(eager_state, row, 2), compiled(STATE, row, 2))
        assert_same(eager_state, STATE)
    assert compiled.cache_info()["eager_calls"] == 0
