"""Writes into the caller's arrays made while a replay runs, undone if the replay fails.

A program may write an update of an argument (``cache[:, t] = k``) straight into the caller's
array when nothing reads its old contents afterwards (``passes.in_place_writes``). A replay can
still fail after that write: a guard that does not hold, a step that raises. The caller then
traces again, which runs the body eagerly on the same arrays, so they must hold what they held
before the replay: ``recording()`` keeps each written region's old contents and puts them back,
last write first, when its block raises.

Outside ``recording()`` no journal is kept, and a write into a caller's array is made on a copy
instead, as the IR states it (``write``)."""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..ir import indexing

_local = threading.local()


@contextlib.contextmanager
def recording():
    """Keep a journal of the writes into the caller's arrays; undo them if the block raises."""
    outer = getattr(_local, "journal", None)
    journal = _local.journal = []
    try:
        yield
    except BaseException:
        for target, key, old in reversed(journal):
            target[key] = old
        raise
    finally:
        _local.journal = outer


def writer(op: str, encoded_key, journaled: bool):
    """The step function of a ``setitem`` or ``scatter_add`` that writes into its target.
    ``journaled``: the target is the caller's array (its old contents go to the journal)."""
    def write(target, value, *index_arrays):
        journal = getattr(_local, "journal", None) if journaled else None
        if type(target) is not np.ndarray or not target.flags.writeable or \
                (journaled and journal is None):
            target, journal = np.array(target, copy=True), None   # as the IR states it
        key = indexing.decode(encoded_key, index_arrays)
        if journal is not None:  # reading the region first raises IndexError before a write
            journal.append((target, _kept(encoded_key, index_arrays, key),
                            np.array(target[key], copy=True)))
        if op == "setitem":
            target[key] = value
        else:
            np.add.at(target, key, value)
        return (target,)
    write.__name__ = f"{op}_in_place"
    return write


def _kept(encoded_key, index_arrays, key):
    """The key for undoing the write later: its index arrays copied (one may be a view of the
    written array, ``a[a[:2]] = 5``, or live in the arena a later step reuses)."""
    if not index_arrays:
        return key
    return indexing.decode(encoded_key, [np.array(a, copy=True) for a in index_arrays])
