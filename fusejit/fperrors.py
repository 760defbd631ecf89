"""Whether NumPy is asked to raise (or call a handler) on floating-point errors, and its
floating-point warnings collected to be issued from the user's line.

Under ``np.errstate(divide="raise")`` or ``np.seterr(all="raise")`` eager NumPy raises
``FloatingPointError`` where compiled kernels would return inf or NaN, so such calls (and
traces recorded under it) run eagerly. The check reads NumPy's error-state context variable
(about 30 ns) and calls ``np.geterr()`` only when that object changes.
"""
from __future__ import annotations

import dis
import functools
import warnings

import numpy as np

try:
    from numpy._core.umath import _extobj_contextvar as _STATE
except ImportError:  # another NumPy layout: ask np.geterr every time
    _STATE = None

REASON = ("np.errstate / np.seterr asks NumPy to raise (or call a handler) on floating-point "
          "errors, which compiled kernels do not check")
_seen: list = [None, False]   # the last error-state object seen, and its verdict


def raising() -> bool:
    if _STATE is None:
        return _verdict()
    state = _STATE.get()
    if state is not _seen[0]:
        _seen[:] = [state, _verdict()]
    return _seen[1]


def _verdict() -> bool:
    return any(mode in ("raise", "call") for mode in np.geterr().values())


FILTER_REASON = ("the body turns NumPy's floating-point warnings into errors "
                 "(warnings.simplefilter('error')), which compiled kernels do not raise")


def body_raises_warnings(filters_at_start: tuple) -> bool:
    """Whether the body changed the warning filters (``warnings.catch_warnings`` with
    ``simplefilter("error")``) so that NumPy's RuntimeWarning now raises: then whether it
    raises depends on data, and ``except RuntimeWarning`` takes another branch, which a replay
    cannot follow. Filters set around the call are the caller's: tracing raises under them as
    eagerly, and replays do not warn (README)."""
    filters = tuple(warnings.filters)
    if filters == filters_at_start:
        return False
    deciding = _deciding(filters)   # not the caller's own entry (``python -W error``); one
    #                                 the body added equal to it is another object
    return deciding is not _deciding(filters_at_start) and deciding is not None and \
        deciding[0] == "error"


CAUGHT_REASON = ("NumPy's floating-point warnings raise under an 'error' warnings filter "
                 "and the body catches exceptions there: whether its except branch runs "
                 "depends on data, which compiled kernels do not check")


def catches_raised_warnings(frames) -> bool:
    """Whether NumPy's RuntimeWarning raises now (``python -W error``: the caller's filter,
    which replays do not honour) where user code of the body (``frames``) has an except
    clause: ``try: np.log(x) except RuntimeWarning:`` would take another branch."""
    deciding = _deciding(tuple(warnings.filters))
    return deciding is not None and deciding[0] == "error" and \
        any(_catches(frame.f_code) for frame in frames)


@functools.lru_cache(maxsize=1024)
def _catches(code) -> bool:
    """The code has an ``except SomeError`` clause (not a bare ``except:``, which Python's
    bytecode does not tell from a ``finally``)."""
    return any(ins.opname in ("CHECK_EXC_MATCH", "JUMP_IF_NOT_EXC_MATCH")
               for ins in dis.get_instructions(code))


def _deciding(filters: tuple):
    """The first filter that would act on NumPy's ``RuntimeWarning``, or None."""
    for entry in filters:
        _, message, category, module, _ = entry
        if issubclass(RuntimeWarning, category) and module is None and \
                (message is None or message.match("divide by zero encountered")):
            return entry
    return None


class _Log:
    """Receives NumPy's floating-point warnings: in ``"log"`` mode NumPy hands each message
    (``"Warning: divide by zero encountered in log\\n"``) to ``write``."""

    def __init__(self):
        self.messages: list[str] = []

    def write(self, message: str) -> None:
        self.messages.append(message.removeprefix("Warning: ").strip())


def collecting(compute, *args, **kwargs):
    """``(compute(*args, **kwargs), messages)``: the floating-point warnings NumPy would have
    issued are collected instead (only where every error kind is in NumPy's default modes,
    warn or ignore: a user's own log or call handler is left alone)."""
    modes = np.geterr()
    watched = {kind: "log" for kind, mode in modes.items() if mode == "warn"}
    if not watched or any(mode not in ("warn", "ignore") for mode in modes.values()):
        return compute(*args, **kwargs), []
    log = _Log()
    with np.errstate(call=log, **watched):
        result = compute(*args, **kwargs)
    return result, log.messages


def warn_from(frame, messages) -> None:
    """Issue each message as a RuntimeWarning from ``frame``'s line, as NumPy does from the
    line that called it; the user's warning filters apply (``"error"`` raises it here)."""
    module_globals = frame.f_globals
    registry = module_globals.setdefault("__warningregistry__", {})
    for message in messages:
        warnings.warn_explicit(message, RuntimeWarning, frame.f_code.co_filename,
                               frame.f_lineno, module_globals.get("__name__", "<string>"),
                               registry)
