"""Whether NumPy is asked to raise (or call a handler) on floating-point errors.

Under ``np.errstate(divide="raise")`` or ``np.seterr(all="raise")`` eager NumPy raises
``FloatingPointError`` where compiled kernels would return inf or NaN, so such calls (and
traces recorded under it) run eagerly. The check reads NumPy's error-state context variable
(about 30 ns) and calls ``np.geterr()`` only when that object changes.
"""
from __future__ import annotations

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
