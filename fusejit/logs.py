"""Diagnostics go through ``logging`` under the ``fusejit`` logger.

``FUSEJIT_LOG=info`` or ``debug`` sets the level for everything; a comma list of topics
(``FUSEJIT_LOG=fusion,guards,cache``) turns on debug output for just those: ``trace``,
``fusion``, ``guards``, ``cache``, ``compile``, ``runtime``. With ``FUSEJIT_LOG`` set, fusejit
prints its records to stderr itself and does not pass them on to the root logger.

Numba's own loggers log every compiler step at debug level (thousands of records per kernel, and
the formatting slows compiling down). Unless the application has set a level on the ``numba``
logger, importing fusejit sets it to WARNING, so ``logging.basicConfig(level=logging.DEBUG)``
shows fusejit's records without Numba's.
"""
from __future__ import annotations

import logging
import os

TOPICS = ("trace", "fusion", "guards", "cache", "compile", "runtime")
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


def configure(spec: str | None = None) -> None:
    """Apply ``FUSEJIT_LOG`` (or ``spec``); without either, leave logging to the application."""
    quiet_numba()
    spec = os.environ.get("FUSEJIT_LOG", "") if spec is None else spec
    words = [w.strip().lower() for w in spec.split(",") if w.strip()]
    if not words:
        return
    root = logging.getLogger("fusejit")
    if not any(getattr(h, "_fusejit", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        handler._fusejit = True
        root.addHandler(handler)
        root.propagate = False   # the application's own handlers would print each line again
    root.setLevel(logging.WARNING)
    for word in words:
        if word in LEVELS:
            root.setLevel(LEVELS[word])
        elif word in TOPICS:
            logging.getLogger(f"fusejit.{word}").setLevel(logging.DEBUG)
        else:
            root.warning("FUSEJIT_LOG: unknown level or topic %r (topics: %s)", word,
                         ", ".join(TOPICS))


def quiet_numba() -> None:
    """Keep Numba's compiler-internal debug records out of the application's logs."""
    numba_logger = logging.getLogger("numba")
    if numba_logger.level == logging.NOTSET:
        numba_logger.setLevel(logging.WARNING)


def topic(name: str) -> logging.Logger:
    return logging.getLogger(f"fusejit.{name}")
