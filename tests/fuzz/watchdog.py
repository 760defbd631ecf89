"""A fuzz program that runs too long ends the run loudly, on the terminal.

pytest captures file descriptor 2 while a test runs, so a traceback faulthandler writes there
dies with the process. ``terminal(config)`` opens the real stderr past pytest's capture, and
``deadline`` arms two alarms on it: a Python timer that names the program shortly before the
limit (it needs the GIL, so it is best effort), and faulthandler's C thread, which writes every
thread's traceback and exits even if compiled code holds the GIL.
"""
from __future__ import annotations

import faulthandler
import os
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager

NOTICE_S = 5.0     # how long before the limit the program is named


def terminal(config):
    """A text file on the terminal's stderr, written through pytest's output capture."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:                  # -p no:capture
        return os.fdopen(os.dup(sys.stderr.fileno()), "w")
    with capture.global_and_fixture_disabled():
        return os.fdopen(os.dup(sys.stderr.fileno()), "w")


@contextmanager
def deadline(seconds: float, describe: Callable[[], str], out, notice_s: float = NOTICE_S):
    """Run the block; if it takes ``seconds``, write ``describe()`` (``notice_s`` before) and
    every thread's traceback to ``out`` and exit the process with status 1."""
    notice = max(seconds - notice_s, 0.0)
    timer = threading.Timer(notice, _notice, (notice, seconds, describe, out))
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(seconds, exit=True, file=out)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        timer.cancel()


def _notice(after: float, seconds: float, describe: Callable[[], str], out) -> None:
    out.write(f"\nfuzz: a program is still running after {after:g} s; at {seconds:g} s the "
              f"process exits with every thread's traceback. The program:\n{describe()}\n")
    out.flush()
