"""Direct launches of a kernel Numba compiled, for a launch site whose argument types are fixed.

Numba's ``_Kernel.launch`` builds a flat argument list (per array: meminfo 0, parent 0, size,
itemsize, data pointer, shape..., strides...; per integer: its ctypes value) and hands it to
``cuda.core.launch``; before that its dispatcher types every argument and wraps every array,
about 0.1 ms of Python per launch. ``Direct`` builds the same list from the site's fixed shapes
and strides and the arrays' pointers.

It is used only after the first launch (through the dispatcher) showed that the list it builds
equals the one Numba built for the same arguments (strides of length-1 dims aside: they are
never multiplied by anything but 0). Anything else (a debug kernel, argument extensions,
another argument type, a numba-cuda that builds the list differently, a launch that raises)
leaves the site on the dispatcher.
"""
from __future__ import annotations

import ctypes
import functools
import logging

log = logging.getLogger("fusejit.cuda")


def first_launch(dispatcher, blocks, threads, stream, args, launch):
    """Launch through the dispatcher (``launch``), then a checked ``Direct`` or None."""
    seen = []
    launch(dispatcher, blocks, threads, stream, args,
           callback=lambda kernel, config: seen.append((kernel, config.stream)))
    if not seen:
        return None
    try:
        return Direct.checked(*seen[0], args)
    except Exception as exc:  # noqa: BLE001 -- any surprise keeps the dispatcher's launches
        log.debug("direct launches of %s declined: %s", dispatcher, exc)
        return None


class _Array:
    def __init__(self, value):
        self.shape, self.strides = tuple(value.shape), tuple(value.strides)
        self.dtype, self.ndim = value.dtype, len(value.shape)
        self.head = (0, 0, int(value.size), int(value.dtype.itemsize))
        self.layout = (*self.shape, *self.strides)


class Direct:
    def __init__(self, kernel, specs: list):
        self.function = kernel._codelibrary.get_cufunc().kernel
        self.specs = specs
        self._configs: dict = {}

    @classmethod
    def checked(cls, kernel, core_stream, args) -> Direct | None:
        from numba.cuda import types
        if kernel.debug or kernel.extensions or getattr(kernel, "cooperative", False) or \
                getattr(kernel, "launch_config_sensitive", False):
            return None
        specs = []
        for argtype, value in zip(kernel.argument_types, args, strict=True):
            if isinstance(argtype, types.Array) and hasattr(value, "gpu_data"):
                specs.append(_Array(value))
            elif isinstance(argtype, types.Integer) and isinstance(value, int):
                specs.append(getattr(ctypes, f"c_{argtype}"))
            else:
                return None
        direct = cls(kernel, specs)
        mine, theirs, retr = direct.arguments(args), [], []
        for argtype, value in zip(kernel.argument_types, args, strict=True):
            kernel._prepare_args(argtype, value, core_stream, retr, theirs)
        if retr or mine is None or not _same(mine, theirs, direct._ignored()):
            log.debug("direct launches of %s declined: argument lists differ", kernel)
            return None
        return direct

    def arguments(self, args) -> list | None:
        """The flat argument list, or None when an array is not as at the first launch."""
        out = []
        for spec, value in zip(self.specs, args, strict=True):
            if not isinstance(spec, _Array):
                out.append(spec(value))
                continue
            if value.strides != spec.strides or value.shape != spec.shape or \
                    value.dtype != spec.dtype:
                return None
            out += spec.head
            out.append(value.device_ctypes_pointer.value or 0)
            out += spec.layout
        return out

    def launch(self, blocks, threads, stream, args) -> bool:
        arguments = self.arguments(args)
        if arguments is None:
            return False
        found = self._configs.get((blocks, threads, stream))
        if found is None:
            found = self._configs[(blocks, threads, stream)] = _config(blocks, threads, stream)
        try:
            _core_launch()(found[0], found[1], self.function, *arguments)
        except Exception as exc:  # noqa: BLE001 -- the dispatcher launches it instead
            log.debug("a direct launch failed (%s); through Numba's dispatcher", exc)
            return False
        return True

    def _ignored(self) -> set[int]:
        """Positions in the list of strides of length-1 (or empty) dims."""
        ignored, position = set(), 0
        for spec in self.specs:
            if not isinstance(spec, _Array):
                position += 1
                continue
            strides_at = position + 5 + spec.ndim
            ignored.update(strides_at + d for d, n in enumerate(spec.shape) if n <= 1)
            position += 5 + 2 * spec.ndim
        return ignored


def _same(mine: list, theirs: list, ignored: set[int]) -> bool:
    if len(mine) != len(theirs):
        return False
    for position, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if position in ignored:
            continue
        if type(a) is not type(b) and not (isinstance(a, int) and isinstance(b, int)):
            return False
        if getattr(a, "value", a) != getattr(b, "value", b):
            return False
    return True


@functools.cache
def _core_launch():
    from cuda.core import launch
    return launch


def _config(blocks, threads, stream):
    """(cuda.core stream, LaunchConfig) as Numba's launch makes them."""
    from cuda.core import LaunchConfig
    from numba.cuda._compat import CUDA_CORE_GE_1_0
    from numba.cuda.cudadrv import driver
    from numba.cuda.errors import normalize_kernel_dimensions
    grid, block = normalize_kernel_dimensions(blocks, threads)
    cooperative = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": False}
    return (driver._to_core_stream(stream),
            LaunchConfig(grid=grid, block=block, shmem_size=0, **cooperative))
