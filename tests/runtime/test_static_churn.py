"""A Python int argument that changes on every call (a step count) is static by design: after a
few new signatures that differ only in it, one warning names it and what to pass instead."""
import logging

import numpy as np

import fusejit


def _step(m, g, t):
    m *= 0.9
    m += g / (1 - 0.9**t)


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "is static" in r.getMessage()]


def test_an_int_changing_on_every_call_is_named_once(caplog):
    compiled = fusejit.compile(_step)
    with caplog.at_level(logging.WARNING, logger="fusejit"):
        for t in range(1, 8):
            compiled(np.zeros(3), np.ones(3), t)
    (message,) = _warnings(caplog)
    assert "_step: the Python int t is static, and it took 4 values in a row" in message
    assert "np.int64(...)" in message


def test_ints_inside_containers_and_keywords_are_named_by_their_path(caplog):
    def scaled(x, cfg, n=1):
        return x * cfg["k"] * n

    compiled = fusejit.compile(scaled)
    with caplog.at_level(logging.WARNING, logger="fusejit"):
        for k in range(4):
            compiled(np.ones(2), {"k": k})
        for n in range(4):
            compiled(np.ones(2), {"k": 1}, n=n)
    assert [m.split(".scaled: ")[1].split(" is static")[0] for m in _warnings(caplog)] == [
        "the Python int cfg['k']", "the Python int n"]


def test_no_warning_for_a_traced_step_a_few_values_or_two_ints_changing_together(caplog):
    def two(x, a, b):
        return x * a + b

    with caplog.at_level(logging.WARNING, logger="fusejit"):
        traced = fusejit.compile(_step)
        for t in range(1, 8):
            traced(np.zeros(3), np.ones(3), np.int64(t))
        assert traced.cache_info()["traces"] == 1
        few = fusejit.compile(_step)
        for t in range(1, 4):
            few(np.zeros(3), np.ones(3), t)
        together = fusejit.compile(two)
        for k in range(6):
            together(np.ones(2), k, k)
    assert _warnings(caplog) == []
