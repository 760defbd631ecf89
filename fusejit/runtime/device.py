"""Device arrays (``__cuda_array_interface__``) at the edges of a call: the tracer runs on host
copies; results go back to the device when the caller gave device arrays."""
from __future__ import annotations

import numpy as np

from ..tracer import flatten, unflatten


def is_device_array(value) -> bool:
    """Numba/CuPy device arrays; the CUDA simulator's fake ones say ``__cuda_ndarray__``."""
    if isinstance(value, np.ndarray):
        return False
    try:
        return hasattr(value, "__cuda_array_interface__") or bool(
            getattr(value, "__cuda_ndarray__", False))
    except Exception:  # noqa: BLE001 -- a __getattr__ raising KeyError: not a device array
        return False


def to_host(value):
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    import cupy  # a CuPy array: the only other producer we accept
    return cupy.asnumpy(value)


def host_copies(args, kwargs):
    """(args, kwargs) with device arrays replaced by host copies, and which leaves they were."""
    leaves, treedef = flatten((args, kwargs))
    device = [i for i, leaf in enumerate(leaves) if is_device_array(leaf)]
    if not device:
        return args, kwargs, ()
    host = [to_host(leaf) if i in device else leaf for i, leaf in enumerate(leaves)]
    new_args, new_kwargs = unflatten(treedef, host)
    return new_args, new_kwargs, tuple(device)


def copy_into(target, value) -> None:
    """Write ``value`` into an argument array, wherever it lives."""
    if is_device_array(target):
        target.copy_to_device(np.ascontiguousarray(value) if isinstance(value, np.ndarray)
                              else value)
    else:
        np.copyto(target, value)


def to_device(tree):
    from numba import cuda
    leaves, treedef = flatten(tree)
    return unflatten(treedef, [cuda.to_device(_transferable(leaf))
                               if isinstance(leaf, np.ndarray) else leaf for leaf in leaves])


def _transferable(array: np.ndarray) -> np.ndarray:
    """A result the traced call made as a strided view (``x[::-1]``) goes up as a contiguous
    copy: CUDA transfers contiguous buffers only."""
    if array.flags.c_contiguous or array.flags.f_contiguous:
        return array
    return np.ascontiguousarray(array)
