"""Device arrays for the CUDA runtime: uploads, downloads, strided views and layouts.

A *layout* is ``(shape, strides, offset)`` in bytes over a contiguous root buffer. The runtime
computes the layout of every view (reshape, permute, broadcast, getitem...) once, when it
lowers the program, by applying the NumPy view op to a stand-in array; at run time a view is
just a device array over the root's memory. Numba's device arrays and the simulator's fake
ones differ here, so both are handled in this one place.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops


def simulator_active() -> bool:
    from numba.core import config
    return bool(config.ENABLE_CUDASIM)


def is_device_array(value) -> bool:
    """A ``__cuda_array_interface__`` object (the simulator's fake arrays only say
    ``__cuda_ndarray__``: their attribute lookups forward to a NumPy array)."""
    if isinstance(value, np.ndarray):
        return False
    return (getattr(type(value), "__cuda_ndarray__", False)
            or hasattr(value, "__cuda_array_interface__"))


def as_numba(value):
    """A Numba device array for any ``__cuda_array_interface__`` object (CuPy...)."""
    from numba import cuda
    if hasattr(value, "gpu_data") or hasattr(value, "_ary"):
        return value
    return cuda.as_cuda_array(value)


def is_c_contiguous(array) -> bool:
    strides, expected = tuple(array.strides), contiguous_strides(array.shape,
                                                                array.dtype.itemsize)
    return all(s == e for s, e, n in zip(strides, expected, array.shape, strict=True) if n > 1)


def contiguous_strides(shape, itemsize) -> tuple[int, ...]:
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def recycle() -> None:
    """Buffers of arrays that died since the last call become reusable (``cuda_pool``)."""
    if not simulator_active():
        from .cuda_pool import POOL
        POOL.recycle()


def upload(array: np.ndarray, stream):
    array = np.ascontiguousarray(array)
    if simulator_active():
        from numba import cuda
        return cuda.to_device(array, stream=stream)
    device = empty(array.shape, array.dtype, stream)
    device.copy_to_device(array, stream=stream)
    return device


def everything(array) -> tuple:
    """The key selecting all of ``array`` (Numba's device arrays take no ``...``)."""
    return (slice(None),) * len(array.shape)


def download(array, stream) -> np.ndarray:
    if any(s < 0 for s in array.strides):
        # Numba copies no negative strides to the host (NotImplementedError on a GPU; the
        # simulator allows it): a contiguous copy on the device first (its assignment kernel)
        from numba import cuda
        copy = cuda.device_array(tuple(array.shape), array.dtype, stream=stream)
        copy[everything(copy)] = array
        array = copy
    return array.copy_to_host(stream=stream)


def empty(shape, dtype, stream):
    """A fresh C-contiguous device array (from the buffer pool on a GPU)."""
    if simulator_active():
        from numba import cuda
        return cuda.device_array(tuple(shape), np.dtype(dtype), stream=stream)
    from .cuda_pool import POOL
    return POOL.empty(shape, dtype, stream)


def view(root, shape, strides, offset: int, dtype):
    """A device array of ``shape``/``strides`` (bytes) at byte ``offset`` into ``root``'s
    memory (``root`` is contiguous)."""
    dtype = np.dtype(dtype)
    if simulator_active():
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        raw = root._ary.reshape(-1).view(np.uint8)
        return FakeCUDAArray(np.ndarray(tuple(shape), dtype, buffer=raw, offset=offset,
                                        strides=tuple(strides)))
    size = int(np.prod(shape, dtype=np.int64))
    data = root.gpu_data.view(offset) if size else None
    return device_array(tuple(shape), tuple(strides), dtype, root.stream, data)


_TEMPLATES: dict = {}
TEMPLATES_KEPT = 4096
INIT_FIELDS = ("ndim", "_dummy", "shape", "strides", "dtype", "size", "alloc_size")


def device_array(shape: tuple, strides: tuple, dtype, stream, gpu_data):
    """``DeviceNDArray(shape, strides, dtype, stream=stream, gpu_data=gpu_data)``, its layout
    fields copied from an earlier array of the same layout: Numba's constructor rebuilds them
    in Python (about 10 us), and the runtime makes views of the same layouts every call. Only
    the fields ``__init__`` sets are copied (cached properties hold the data pointer)."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    key = (shape, strides, np.dtype(dtype))
    fields = _TEMPLATES.get(key)
    if fields is None or gpu_data is None:
        array = DeviceNDArray(shape, strides, dtype, stream=stream, gpu_data=gpu_data)
        if len(_TEMPLATES) >= TEMPLATES_KEPT:
            _TEMPLATES.clear()
        if array.size:
            _TEMPLATES[key] = {name: getattr(array, name) for name in INIT_FIELDS}
        return array
    array = DeviceNDArray.__new__(DeviceNDArray)
    array.__dict__.update(fields)
    array.gpu_data, array.stream = gpu_data, stream
    return array


def padded(array):
    """0-d arrays travel to kernels as shape-(1,) views."""
    if array.ndim:
        return array
    return view_of(array, (1,), (array.dtype.itemsize,))


def broadcast(array, shape):
    """``array`` seen with ``shape`` by NumPy's broadcasting (zero strides), a value's
    leading length-1 dims beyond ``shape`` dropped as assignment drops them."""
    shape = tuple(shape)
    if tuple(array.shape) == shape:
        return array
    dims = list(zip(array.shape, array.strides, strict=True))
    while len(dims) > len(shape) and dims[0][0] == 1:
        dims.pop(0)
    lead = len(shape) - len(dims)
    strides = [0] * lead + [0 if n == 1 else s for (n, s) in dims]
    return view_of(array, shape, tuple(strides))


def view_of(array, shape, strides):
    """Another shape over the same first element (used for 0-d padding)."""
    if simulator_active():
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        return FakeCUDAArray(np.lib.stride_tricks.as_strided(array._ary, shape, strides))
    return device_array(tuple(shape), tuple(strides), array.dtype, array.stream,
                        array.gpu_data)


# -- layouts ------------------------------------------------------------------------------------
class NeedsCopy(Exception):
    """The view cannot be expressed over its root (a reshape of a non-contiguous layout, a
    negative stride): the runtime copies instead."""


def root_layout(var_type):
    shape = tuple(var_type.shape)
    return shape, contiguous_strides(shape, var_type.dtype.itemsize), 0


def view_layouts(node, layout, root_bytes: int, dtype) -> list[tuple]:
    """The layouts of a view node's outputs, given its input's layout over a root buffer of
    ``root_bytes`` bytes."""
    shape, strides, offset = layout
    stand_in = np.ndarray(shape, dtype, buffer=np.empty(max(root_bytes, 1), np.uint8),
                          offset=offset, strides=strides)
    base = stand_in.__array_interface__["data"][0] - offset
    attrs = dict(node.attrs)
    if node.op == "reshape":
        try:
            results = (np.reshape(stand_in, attrs["shape"], copy=False),)
        except ValueError as exc:
            raise NeedsCopy("reshape of a non-contiguous layout") from exc
    else:
        results = ops.get(node.op).impl(stand_in, **attrs)
        results = results if isinstance(results, tuple) else (results,)
    layouts = []
    for result in results:
        result = np.asarray(result)
        if any(s < 0 for s in result.strides) or not np.may_share_memory(result, stand_in):
            raise NeedsCopy(f"{node.op} gives a layout a device view cannot express")
        layouts.append((result.shape, result.strides,
                        result.__array_interface__["data"][0] - base))
    return layouts
