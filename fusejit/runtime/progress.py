"""A progress line on stderr while a program's first run compiles its kernels.

Shown when compiling has already taken more than a second and stderr is a terminal
(``FUSEJIT_PROGRESS=0`` never, ``=1`` whatever stderr is)."""
from __future__ import annotations

import sys
import time

from .. import config

DELAY_S = 1.0


class Progress:
    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.shown = False

    def enabled(self) -> bool:
        chosen = config.progress()
        if chosen is not None:
            return chosen
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def step(self, what: str = "") -> None:
        self.done += 1
        if not self.enabled() or time.perf_counter() - self.started < DELAY_S:
            return
        width = 24
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\rfusejit: compiling {self.label} [{bar}] "
                          f"{self.done}/{self.total} {what[:30]:<30}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            elapsed = time.perf_counter() - self.started
            self.stream.write(f"\rfusejit: compiled {self.label} in {elapsed:.1f} s"
                              + " " * 50 + "\n")
            self.stream.flush()
