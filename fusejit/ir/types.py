"""Tensor types: a static shape and a NumPy dtype, printed as ``f32[32,128]``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_SHORT = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}
_LONG = {short: long for long, short in _SHORT.items()}
SHORT_NAMES = tuple(_SHORT.values())
SUPPORTED_DTYPES = frozenset(np.dtype(name) for name in _SHORT)


def numeric(dtype) -> bool:
    """A dtype the IR takes: bool, integer, float or complex (not object, structured, string
    or datetime)."""
    return np.dtype(dtype).kind in "biufc"


def short_dtype(dtype) -> str:
    """``float32`` -> ``f32``; the spelling used in IR text and CLI argument specs."""
    return _SHORT[np.dtype(dtype).name]


def parse_dtype(text: str) -> np.dtype:
    """Inverse of :func:`short_dtype`; also accepts NumPy's own names."""
    return np.dtype(_LONG.get(text, text))


@dataclass(frozen=True)
class TensorType:
    """Shape and dtype of a value. ``weak`` marks a Python float (NEP 50 weak scalar)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        weak = "~" if self.weak else ""
        return f"{weak}{short_dtype(self.dtype)}[{dims}]"


def type_of(value) -> TensorType:
    """The TensorType of a concrete NumPy array or scalar."""
    arr = np.asarray(value)
    return TensorType(arr.shape, arr.dtype)
