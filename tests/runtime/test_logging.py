"""FUSEJIT_LOG output: printed once, naming the user's line where a guard failed."""
import io
import logging
import os
import subprocess
import sys

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
    line = _branchy.__code__.co_firstlineno + 1
    assert lines == [f"fusejit.guards: guard failed: bool() == True at test_logging.py:{line} "
                     "(_branchy)"]
    assert not [r for r in app.records if r.name.startswith("fusejit")]


_DEBUG_APP = """
import logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.name)
logging.basicConfig(level=logging.DEBUG, handlers=[Keep()])
import numpy as np
import fusejit
f = fusejit.compile(lambda x: np.tanh(x) * 2 + 1)
x = np.ones((4, 8), np.float32)
f(x); f(x)
assert f.cache_info()["kernels_compiled"] >= 1, f.cache_info()
print(sum(n.startswith("numba") for n in records), sum(n.startswith("fusejit") for n in records))
"""


def test_numba_debug_records_stay_out_of_an_application_debug_log(tmp_path):
    env = {**os.environ, "FUSEJIT_CACHE_DIR": str(tmp_path)}
    env.pop("FUSEJIT_LOG", None)
    done = subprocess.run([sys.executable, "-c", _DEBUG_APP], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    numba_records, fusejit_records = map(int, done.stdout.split())
    assert (numba_records, fusejit_records > 0) == (0, True)


def test_a_level_the_application_set_on_numba_is_kept():
    numba_logger = logging.getLogger("numba")
    saved = numba_logger.level
    numba_logger.setLevel(logging.DEBUG)
    try:
        logs.quiet_numba()
        assert numba_logger.level == logging.DEBUG
    finally:
        numba_logger.setLevel(saved)
