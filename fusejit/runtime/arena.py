"""A per-thread memory arena for intermediate kernel outputs, reused across calls.

Fresh NumPy buffers for large intermediates cost a page fault per 4 KiB page on every call;
the arena is allocated once per thread and each intermediate gets a fixed, 64-byte aligned
offset in it (first fit over buffer lifetimes, so buffers live at the same time never overlap).
Kernel outputs, matrix products and concatenations (``out=``) qualify when the caller can never
see them: not graph outputs, not viewed by an output, not handed to an opaque NumPy call (which
might keep a view of it). An elementwise kernel whose output takes over an input that dies
there (``plan_memory.in_place_outputs``: never one the caller sees) writes over it: at its
offset in the arena, or in its array when it is a product left to NumPy.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

import numpy as np

from .. import config
from ..ir import Graph, Var
from ..passes.plan_memory import assign_offsets, caller_reachable, in_place_outputs, lifetimes

ALIGN = 64
# ops that can write into a given buffer (matmul and concatenate through ``out=``)
ARENA_OPS = ("fused", "matmul", "concatenate")
# NumPy gets ``out=`` only for results this large: a small one comes from malloc's free lists
# (no page faults to save), and the keyword costs NumPy more than the allocation.
OUT_MIN_BYTES = 64 * 1024


def arena_offsets(graph: Graph, writes=frozenset(),
                  apart=frozenset()) -> tuple[dict[Var, int], int, dict[Var, Var]]:
    """Offsets for the kernel, matmul and concatenate outputs that may live in the arena, the
    arena size, and the kernel outputs written in place (output -> donor input). ``writes``:
    the setitems that write into their target (``passes.in_place_writes``), whose results
    keep the target's buffer alive. ``apart``: outputs stored elsewhere (``stacks``)."""
    eligible = _eligible(graph, writes) - set(apart)
    donors = in_place_outputs(graph, writes)
    _follow_donors(eligible, donors)
    spans = {var: span for var, span in lifetimes(graph, writes).items() if var in eligible}
    offsets = assign_offsets(spans, ALIGN, donors)
    size = max((offsets[v] + v.type.nbytes for v in offsets), default=0)
    return offsets, size, donors


def _follow_donors(eligible: set[Var], donors: dict[Var, Var]) -> None:
    """An output written over a donor outside the arena (a product too small for ``out=``) is
    that donor's new array, so it leaves the arena too (donors are in schedule order)."""
    for out, donor in donors.items():
        if donor not in eligible:
            eligible.discard(out)


def _eligible(graph: Graph, writes) -> set[Var]:
    exposed = caller_reachable(graph, writes)
    return {out for node in graph.nodes if node.op in ARENA_OPS for out in node.outputs
            if out not in exposed and out.type.size > 0
            and (node.op == "fused" or out.type.nbytes >= OUT_MIN_BYTES)}


class Arena:
    """Per-thread storage; ``views(step)`` gives that step's preallocated output arrays.

    Arenas are kept between calls up to ``FUSEJIT_ARENA_MAX_MB`` over all programs and threads
    (``ArenaBudget``): a function called with many shapes would otherwise hold one per shape.
    The one being allocated is always kept; an evicted one is allocated again at its next call
    (one evicted while its thread replays: from its next step on, the earlier steps' arrays
    staying alive through their references)."""

    def __init__(self, size: int, layouts: dict[int, tuple]):
        # step index -> per output: (offset, shape, dtype), or None (the step allocates it)
        self.size, self.layouts = size, layouts
        self.by_thread: dict[int, dict] = {}
        self.first = min(layouts, default=None)

    def views(self, step: int) -> tuple:
        thread = threading.get_ident()
        cached = self.by_thread.get(thread)
        if cached is None:
            cached = self.by_thread[thread] = self._build()
            BUDGET.add(self, thread)
        elif step == self.first:
            BUDGET.touch(self, thread)
        return cached[step]

    def _build(self) -> dict[int, tuple]:
        memory = np.empty(self.size + ALIGN, np.uint8)
        base = (-memory.ctypes.data) % ALIGN
        views = {}
        for step, layout in self.layouts.items():
            outs = [None if spec is None else _view(memory, base + spec[0], *spec[1:])
                    for spec in layout]
            # a list tells the kernel to allocate its None entries; a tuple is complete
            views[step] = tuple(outs) if None not in layout else outs
        return views


def _view(memory, offset, shape, dtype):
    count = int(np.prod(shape, dtype=np.int64))
    flat = memory[offset: offset + count * np.dtype(dtype).itemsize].view(dtype)
    return flat.reshape(shape)


class ArenaBudget:
    """The arenas kept between calls, least recently used first; adding one evicts the oldest
    others (their thread's views: the arrays in use stay alive through their references)
    while the total is over the bound."""

    def __init__(self):
        self.lock = threading.RLock()   # ``forget`` may run from the garbage collector
        self.kept: OrderedDict[tuple[int, int], tuple] = OrderedDict()
        self.total = 0

    def add(self, arena: Arena, thread: int) -> None:
        limit = config.arena_max_bytes(ARENA_MAX_MB)
        key = (id(arena), thread)
        with self.lock:
            self._evict(key)
            if not any(k[0] == key[0] for k in self.kept):   # its first thread
                weakref.finalize(arena, self.forget, id(arena))
            self.kept[key] = (weakref.ref(arena), thread, arena.size)
            self.total += arena.size
            for other in list(self.kept):
                if self.total <= limit or other == key:
                    break
                self._evict(other)

    def release(self) -> int:
        """Drops every kept arena (each is allocated again at its next call); returns their
        bytes. The bench does this before measuring a call's peak memory, so that the arena a
        program keeps between calls counts as the call's own."""
        with self.lock:
            total = self.total
            for key in list(self.kept):
                self._evict(key)
            return total

    def forget(self, arena_id: int) -> None:
        """A collected arena's entries (its memory went with it)."""
        with self.lock:
            for key in [k for k in self.kept if k[0] == arena_id]:
                self._evict(key)

    def touch(self, arena: Arena, thread: int) -> None:
        with self.lock:
            key = (id(arena), thread)
            if key in self.kept:
                self.kept.move_to_end(key)

    def _evict(self, key) -> None:
        entry = self.kept.pop(key, None)
        if entry is None:
            return
        ref, thread, size = entry
        self.total -= size
        owner = ref()
        if owner is not None:
            owner.by_thread.pop(thread, None)


ARENA_MAX_MB = 256
BUDGET = ArenaBudget()


def _new_lock() -> None:
    # a child forked while another thread held the lock would wait on it for ever
    BUDGET.lock = threading.RLock()


os.register_at_fork(after_in_child=_new_lock)

