"""Hashable, printable spellings of NumPy index keys (``x[:, ::2, None, idx]``).

A key is a tuple of items: ``("slice", start, stop, step)``, ``("int", i)``, ``("newaxis",)``,
``("ellipsis",)``, ``("array", k)`` (the k-th array operand of the node) and
``("const", tuple_of_ints, shape)`` (a literal integer/boolean list written in the source).
"""
from __future__ import annotations

import numpy as np


def encode(index, arrays=None) -> tuple:
    """Turn a NumPy index into a hashable key; array operands are appended to ``arrays``."""
    items = index if isinstance(index, tuple) else (index,)
    return tuple(_encode_item(item, arrays) for item in items)


def _encode_item(item, arrays):
    if isinstance(item, slice):
        return ("slice", _int_or_none(item.start), _int_or_none(item.stop),
                _int_or_none(item.step))
    if item is None:
        return ("newaxis",)
    if item is Ellipsis:
        return ("ellipsis",)
    if isinstance(item, (bool, np.bool_)):
        return ("const", (bool(item),), ())
    if isinstance(item, (int, np.integer)):
        return ("int", int(item))
    if isinstance(item, (list, tuple, np.ndarray)):
        arr = np.asarray(item)
        return ("const", tuple(arr.ravel().tolist()), arr.shape, arr.dtype.str)
    if arrays is None:
        raise TypeError(f"unsupported index item {item!r}")
    arrays.append(item)
    return ("array", len(arrays) - 1)


def _int_or_none(value):
    return None if value is None else int(value)


def decode(key: tuple, arrays=()) -> tuple:
    """Inverse of :func:`encode`, with the array operands substituted."""
    return tuple(_decode_item(item, arrays) for item in key)


def _decode_item(item, arrays):
    tag = item[0]
    if tag == "slice":
        return slice(*item[1:])
    if tag == "int":
        return item[1]
    if tag == "newaxis":
        return None
    if tag == "ellipsis":
        return Ellipsis
    if tag == "array":
        return arrays[item[1]]
    values, shape = item[1], item[2]
    dtype = item[3] if len(item) > 3 else bool
    return np.array(values, dtype=dtype).reshape(shape)


def is_basic(key: tuple) -> bool:
    """True when indexing with ``key`` returns a view (no arrays, no lists)."""
    return all(item[0] in ("slice", "int", "newaxis", "ellipsis") for item in key)


def text(key: tuple) -> str:
    """``[:, ::2, None, %3]`` -- how a key reads in IR dumps."""
    return "[" + ", ".join(_item_text(item) for item in key) + "]"


def _item_text(item) -> str:
    tag = item[0]
    if tag == "slice":
        start, stop, step = ("" if v is None else str(v) for v in item[1:])
        return f"{start}:{stop}" + (f":{step}" if step else "")
    if tag == "int":
        return str(item[1])
    if tag == "newaxis":
        return "None"
    if tag == "ellipsis":
        return "..."
    if tag == "array":
        return f"${item[1]}"
    values = np.array(item[1]).reshape(item[2]).tolist()
    return repr(values)
