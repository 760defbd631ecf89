"""Device arrays (``__cuda_array_interface__``) at the edges of a call: the tracer runs on host
copies; results go back to the device when the caller gave device arrays."""
from __future__ import annotations

import numpy as np

from ..codegen.cuda_arrays import contiguous_strides
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
        from ..codegen.cuda_arrays import download
        return download(value, 0)
    import cupy  # a CuPy array: the only other producer we accept
    return cupy.asnumpy(value)


def host_copies(args, kwargs):
    """(args, kwargs) with device arrays replaced by host copies, and which leaves they were.
    Device arrays that share memory get host copies that share it the same way (``f(d, d)``
    one copy; ``f(d[1:], d[:3])`` views of one copy of the bytes both span), so the body sees
    its writes through one in its reads of the other, as on arrays."""
    try:
        leaves, treedef = flatten((args, kwargs))
    except RecursionError:   # a dict that holds itself (``make_key`` refused it): as it is
        return args, kwargs, ()
    device = [i for i, leaf in enumerate(leaves) if is_device_array(leaf)]
    if not device:
        return args, kwargs, ()
    host = list(leaves)
    for group in _overlapping(leaves, device):
        for index, copy in zip(group, _shared_copies([leaves[i] for i in group]), strict=True):
            host[index] = copy
    new_args, new_kwargs = unflatten(treedef, host)
    return new_args, new_kwargs, tuple(device)


def device_layout(array) -> tuple:
    """``(start, end, pointer, shape, strides, dtype)``: the bytes ``[start, end)`` a device
    array's elements span, from its ``__cuda_array_interface__`` (the simulator's: its NumPy
    array's)."""
    face = getattr(array, "__cuda_array_interface__", None) or \
        array._ary.__array_interface__   # the CUDA simulator's FakeCUDAArray
    dtype, shape = np.dtype(face["typestr"]), tuple(face["shape"])
    strides = tuple(face.get("strides") or contiguous_strides(shape, dtype.itemsize))
    pointer = face["data"][0]
    if 0 in shape:
        return pointer, pointer, pointer, shape, strides, dtype
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    return pointer + low, pointer + high + dtype.itemsize, pointer, shape, strides, dtype


def overlaps_device(target, others) -> bool:
    """Whether the device array ``target``'s bytes overlap any device array's in ``others``."""
    start, stop = device_layout(target)[:2]
    for other in others:
        if is_device_array(other):
            low, high = device_layout(other)[:2]
            if low < stop and start < high:
                return True
    return False


def _overlapping(leaves, device) -> list[list[int]]:
    """The device leaves in groups whose byte spans overlap, transitively."""
    spans = sorted((device_layout(leaves[i])[:2], i) for i in device)
    groups, end = [], None
    for (start, stop), index in spans:
        if groups and start < end:
            groups[-1].append(index)
            end = max(end, stop)
        else:
            groups.append([index])
            end = stop
    return groups


def _shared_copies(arrays: list) -> list:
    """Host copies of device arrays whose memory overlaps, sharing memory as they do."""
    if len(arrays) == 1:
        return [to_host(arrays[0])]
    layouts = [device_layout(a) for a in arrays]
    start, stop = min(lay[0] for lay in layouts), max(lay[1] for lay in layouts)
    raw = _download_bytes(arrays[0], start, stop - start)
    return [np.ndarray(shape, dtype, buffer=raw, offset=pointer - start, strides=strides)
            for _, _, pointer, shape, strides, dtype in layouts]


def _download_bytes(owner, address: int, size: int) -> np.ndarray:
    """``size`` bytes of device memory from ``address`` (within ``owner``'s allocation)."""
    from ..codegen.cuda_arrays import simulator_active
    if simulator_active():   # the simulator's device memory is host memory
        import ctypes
        return np.frombuffer((ctypes.c_char * size).from_address(address), np.uint8).copy()
    from numba import cuda
    face = {"shape": (size,), "typestr": "|u1", "data": (address, False), "version": 3,
            "strides": None}
    return cuda.from_cuda_array_interface(face, owner=owner, sync=True).copy_to_host()


def copy_into(target, value) -> None:
    """Write ``value`` into an argument array, wherever it lives."""
    if is_device_array(target):
        from numba import cuda

        from .cuda import write_into
        write_into(target, value)
        cuda.synchronize()
    else:
        np.copyto(target, to_host(value) if is_device_array(value) else value)


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
