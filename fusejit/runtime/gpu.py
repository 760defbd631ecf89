"""Is a GPU there? Asked lazily: importing numba.cuda costs time on CPU-only machines."""
from __future__ import annotations

import functools
import os
import sys


@functools.cache
def cuda_available() -> bool:
    """A GPU, or Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    if _surely_no_gpu():
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 -- a broken driver means "no GPU", never a crash
        return False


@functools.cache
def gpu_usable() -> bool:
    """A real GPU (the simulator is for tests, never chosen by ``target="auto"``)."""
    from numba.core import config
    return cuda_available() and not config.ENABLE_CUDASIM


def _surely_no_gpu() -> bool:
    """On Linux without NVIDIA device nodes there is no GPU: skip importing numba.cuda (~0.6 s)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return False
    return sys.platform.startswith("linux") and not os.path.exists("/dev/nvidiactl")
