"""The body's own ``logging`` calls: a logger fills its level cache on its first call, which is
not state a replay loses (``pystate.library_cache``), so the first trace compiles."""
import logging
import types

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

LOG = logging.getLogger("tests.body_logging")
STATE = types.SimpleNamespace(_t=0)


@pytest.fixture
def records():
    class Keep(logging.Handler):
        def emit(self, record):
            kept.append(record.getMessage())

    kept, handler, level = [], Keep(), LOG.level
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)      # clears the logger's level cache: the next call fills it
    try:
        yield kept
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(level)


def _logged_loss(x):
    loss = (x * x).mean()
    LOG.info("loss %s", loss)
    return loss * 2


class _Model:
    def __init__(self):
        self.log, self.w = LOG, np.arange(4, dtype=np.float32)

    @fusejit.compile
    def __call__(self, x):
        y = (x * self.w).sum()
        self.log.info("y %s", y)
        return y


def test_a_global_logger_logs_while_tracing_and_the_first_trace_compiles(records):
    compiled = fusejit.compile(_logged_loss)
    for k in range(3):
        x = np.random.default_rng(k).random(4).astype(np.float32)
        got = compiled(x)           # first: the trace's call fills the level cache
        assert_same(_logged_loss(x), got)
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (1, 2, 0)
    assert len(records) == 3 + 1     # the eager calls, and the compiled one's trace


def test_a_logger_held_by_self_does_not_make_the_method_trace_again(records):
    model = _Model()
    for k in range(3):
        x = np.random.default_rng(k).random(4).astype(np.float32)
        assert_same((x * model.w).sum(), model(x))
    assert _Model.__call__.cache_info()["traces"] == 1
    assert len(records) == 1


def _count_in_a_private_attribute(x):
    STATE._t += 1               # a SimpleNamespace's private attribute is the user's state
    return x * STATE._t


def test_a_private_attribute_of_a_namespace_is_still_watched():
    compiled = fusejit.compile(_count_in_a_private_attribute)
    for _ in range(3):
        x = np.ones(3)
        STATE._t, want = 0, _count_in_a_private_attribute(x)
        STATE._t, got = 0, compiled(x)
        assert_same(want, got)
    STATE._t = 5
    assert_same(np.full(3, 6.0), compiled(np.ones(3)))
