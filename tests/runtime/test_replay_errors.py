"""Replays that cannot run and traces that raise: each case says so, and nothing retraces in a
loop or crashes ``explain``."""
import logging

import numpy as np
import pytest

import fusejit
from fusejit.runtime import program
from tests.oracle import assert_same


def shifted(x):
    y = np.zeros_like(x)          # the kernel filling y reads no input
    y[1:] = x[:-1] * 2
    return y


def scattered(x, idx):
    out = np.zeros_like(x[:4])
    np.add.at(out, idx, x)
    return out * 2


def shifted_inputs(seed):
    return (np.random.default_rng(seed).standard_normal(8),)


def scattered_inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((10, 3)), rng.integers(0, 4, 10)


@pytest.mark.parametrize("fn, make_inputs", [(shifted, shifted_inputs),
                                             (scattered, scattered_inputs)])
def test_a_step_with_no_inputs_replays_without_tracing_again(fn, make_inputs):
    compiled = fusejit.compile(fn)
    for seed in range(4):
        assert_same(fn(*make_inputs(seed)), compiled(*make_inputs(seed)))
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (1, 3, 0)


def test_an_internal_replay_error_makes_the_signature_eager_and_says_so(monkeypatch, caplog):
    monkeypatch.delenv("FUSEJIT_STRICT", raising=False)

    def broken_replay(prog):
        def replay(inputs):
            raise NameError("name 's9' is not defined")
        return replay

    monkeypatch.setattr(program, "straight_line", broken_replay)
    compiled = fusejit.compile(shifted)
    with caplog.at_level(logging.WARNING, logger="fusejit"):
        for seed in range(4):
            assert_same(shifted(*shifted_inputs(seed)), compiled(*shifted_inputs(seed)))
    info = compiled.cache_info()
    assert (info["traces"], info["paths"], info["eager_signatures"]) == (1, 0, 1)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "internal: replaying raised NameError" in warnings[0]
    assert "internal: replaying raised NameError" in str(compiled.explain(*shifted_inputs(0)))


def overflows(a):
    return a + 200                # NumPy 2 raises OverflowError for an int8 array


def mismatched(a, b):
    return a + b                  # ValueError: operands could not be broadcast together


@pytest.mark.parametrize("fn, args, error", [
    (overflows, (np.array([1, 2], np.int8),), "OverflowError"),
    (mismatched, (np.ones(3), np.ones(4)), "ValueError"),
])
def test_explain_after_a_call_whose_trace_raised(fn, args, error):
    compiled = fusejit.compile(fn)
    with pytest.raises(Exception) as raised:
        compiled(*args)
    assert type(raised.value).__name__ == error
    info = compiled.cache_info()
    assert (info["signatures"], info["paths"], info["traces"]) == (0, 0, 0)
    text = str(compiled.explain(*args))
    assert f"status: tracing raised {error}: " in text
    assert compiled.cache_info() == info
