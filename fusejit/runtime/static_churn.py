"""A warning when a Python int argument keeps changing: each of its values is a new signature.

Python ints are static (DESIGN.md §2), so ``adam_step(params, grads, t=step)`` traces and
compiles again on every step, and keeps every program. After ``CHURN`` new signatures in a
row that differ from the one before only in the value of the same int, the function logs one
warning naming that argument and what to pass instead.
"""
from __future__ import annotations

import inspect
from collections import Counter

from ..logs import topic
from .key import _STATIC

log = topic("runtime")
CHURN = 4


class StaticChurn:
    def __init__(self, name: str, signature: inspect.Signature):
        self.name, self.signature = name, signature
        self.previous = None
        self.counts: Counter = Counter()
        self.warned: set = set()

    def new_key(self, key) -> None:
        """Note a new signature's key (``runtime.key.make_key``)."""
        previous, self.previous = self.previous, key
        if previous is None or key[0] == "arrays" or previous[0] == "arrays":
            return
        found: list = []
        if not _int_differences(previous[0], key[0], (), found) or len(found) != 1:
            return
        path = found[0]
        self.counts[path] += 1
        if self.counts[path] + 1 >= CHURN and path not in self.warned:
            self.warned.add(path)
            where = self._describe(path)
            log.warning("%s: the Python int %s is static, and it took %d values in a row: each "
                        "one traces and compiles again. Pass it as np.int64(...) or a float to "
                        "trace it instead (or name it in static_argnames to keep this)",
                        self.name, where, self.counts[path] + 1)

    def _describe(self, path: tuple) -> str:
        """``t``, ``params['lr']`` or ``args[2]``: where the int sits in the call."""
        part, first, *rest = path
        if part == 0:
            positional = [p.name for p in self.signature.parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            head = positional[first] if first < len(positional) else f"args[{first}]"
        else:
            head = str(first)
        return head + "".join(f"[{item!r}]" for item in rest)


def _is_static_int(signature) -> bool:
    return type(signature) is tuple and len(signature) == 3 and signature[0] == _STATIC \
        and signature[1] is int


def _int_differences(a, b, path: tuple, found: list) -> bool:
    """Whether two key structures differ only in static int values; their paths go to
    ``found`` (positions in tuples and lists, keys in dicts)."""
    if a == b:
        return True
    if _is_static_int(a) and _is_static_int(b):
        found.append(path)
        return True
    if not (type(a) is tuple and type(b) is tuple and len(a) == len(b) and a
            and isinstance(a[0], type) and a[0] is b[0]):
        return False
    if a[0] is dict:
        return a[1:3] == b[1:3] and all(_int_differences(x, y, (*path, k), found)
                                        for k, x, y in zip(a[1], a[3], b[3], strict=True))
    return len(a[1]) == len(b[1]) and all(
        _int_differences(x, y, (*path, k), found)
        for k, (x, y) in enumerate(zip(a[1], b[1], strict=True)))
