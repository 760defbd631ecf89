"""A progress line on stderr while a program's first run compiles its kernels.

Shown once compiling has taken a second and stderr is a terminal (``FUSEJIT_PROGRESS=0``
never, ``=1`` whatever stderr is): a timer draws it then, while the first slow kernel is still
compiling, and each finished kernel redraws it. On a terminal the line is redrawn in place;
elsewhere (a CI log) two plain lines say that compiling started and how long it took."""
from __future__ import annotations

import sys
import threading
import time

from .. import config

DELAY_S = 1.0


class Progress:
    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.shown = False
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        chosen = config.progress()
        self.enabled = terminal if chosen is None else chosen
        self.redraw = terminal
        self.closed = False
        self._lock = threading.Lock()   # the timer's thread draws too
        self._timer = None
        if self.enabled:
            self._timer = threading.Timer(DELAY_S, self._draw)
            self._timer.daemon = True
            self._timer.start()

    def step(self, what: str = "") -> None:
        self.done += 1
        if self.enabled and time.perf_counter() - self.started >= DELAY_S:
            self._draw(what)

    def _draw(self, what: str = "") -> None:
        with self._lock:
            if not self.closed:
                self._write(what)

    def _write(self, what: str) -> None:
        if self.redraw:
            width = 24
            filled = width * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (width - filled)
            self.stream.write(f"\rfusejit: compiling {self.label} [{bar}] "
                              f"{self.done}/{self.total} {what[:30]:<30}")
        elif not self.shown:
            self.stream.write(f"fusejit: compiling {self.label} ({self.total} kernels)\n")
        self.stream.flush()
        self.shown = True

    def close(self, failed: bool = False) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self.closed = True
            if self.shown:
                elapsed = time.perf_counter() - self.started
                start, pad = ("\r", " " * 50) if self.redraw else ("", "")
                done = "stopped compiling" if failed else "compiled"
                self.stream.write(f"{start}fusejit: {done} {self.label} in {elapsed:.1f} s"
                                  f"{pad}\n")
                self.stream.flush()
