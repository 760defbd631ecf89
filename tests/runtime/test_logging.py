"""FUSEJIT_LOG output: printed once, naming the user's line where a guard failed."""
import io
import logging

import numpy as np
import pytest

import fusejit
from fusejit import logs


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def guard_log():
    root, fusejit_logger = logging.getLogger(), logging.getLogger("fusejit")
    app = Records()    # the application's own handler on the root logger
    root.addHandler(app)
    saved = fusejit_logger.handlers[:], fusejit_logger.propagate, fusejit_logger.level
    fusejit_logger.handlers[:] = []
    logs.configure("guards")
    printed = io.StringIO()
    (handler,) = fusejit_logger.handlers
    handler.setStream(printed)   # what it prints to stderr
    try:
        yield app, printed
    finally:
        root.removeHandler(app)
        fusejit_logger.handlers[:], fusejit_logger.propagate = saved[0], saved[1]
        fusejit_logger.setLevel(saved[2])
        logging.getLogger("fusejit.guards").setLevel(logging.NOTSET)


def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def test_a_failed_guard_is_logged_once_with_the_users_line(guard_log):
    app, printed = guard_log
    compiled = fusejit.compile(_branchy)
    compiled(np.ones(3))
    compiled(-np.ones(3))
    lines = [line for line in printed.getvalue().splitlines() if "guard failed" in line]
    assert lines == ["fusejit.guards: guard failed: bool() == True at test_logging.py:42 "
                     "(_branchy)"]
    assert not [r for r in app.records if r.name.startswith("fusejit")]
