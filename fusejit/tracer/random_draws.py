"""Random draws: a body that draws from a random generator that outlives the call runs
eagerly, so each call draws new numbers, as it does in NumPy.

A draw is a side effect the graph cannot hold: NumPy's generators are Cython methods, which
no trace or profile hook sees, and their results reach the graph as constants, which every
replay would repeat. Instead the generators the body can reach are looked at before it runs
and again after, and a changed state makes the signature run eagerly:

- NumPy's global ``RandomState`` (``np.random.rand``, ``np.random.normal``...) and Python's
  ``random`` module;
- each generator (``RNG_TYPES``) within ``captures.OBJECT_DEPTH`` steps of the body's roots
  (its arguments, ``self``, the globals its code names, its closure cells and defaults):
  ``rng``, ``self.rng`` (a class attribute too), ``cfg["rng"]``, a ``partial``'s argument,
  a function's default;
- those below the globals that other code the body runs loads (``code_reads``:
  ``RNG.normal(...)`` in a helper), as that code is entered.

As the trace ends the same places are searched again: a generator found there that was not
there before was made by the body and kept (``if self.rng is None: self.rng = ...``), and
the next call would draw on from it. A generator made in the body from a fixed seed and
dropped (``np.random.default_rng(0)``) draws the same numbers on every call, so its draws
stay constants. One seeded from the operating system's entropy (``default_rng()``,
``random.Random()``, ``secrets``) draws new ones: the body's frames are watched
(``type_checks.watched``) for the code that reads it (``ENTROPY``). NumPy reads it for
``RandomState(seed)`` too, before it reseeds, so such a body runs eagerly as well.
"""
from __future__ import annotations

import contextlib
import functools
import random
import secrets
import types

import numpy as np

from ..logs import topic
from .captures import (
    OBJECT_DEPTH,
    SEQUENCES,
    _children,
    _root_value,
    found_path,
    path_key,
    walked,
)

log = topic("trace")

RNG_TYPES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator,
             np.random.SeedSequence, random.Random)
_WALK_LIMIT = 10_000   # objects opened below each root: a huge dict is not searched whole
_LEAVES = (np.ndarray, np.generic, str, bytes, int, float, complex, bool, type(None))

# the code that reads the operating system's entropy (``default_rng()`` and ``RandomState()``
# seed themselves through ``secrets.randbits``, ``SystemRandom.getrandbits``), by id: every
# frame the body starts is looked up here
ENTROPY = {id(f.__code__) for f in [*vars(random.SystemRandom).values(),
                                    *vars(secrets).values()]
           if isinstance(f, types.FunctionType)}
_SEED = id(random.Random.seed.__code__)   # ``Random()`` and ``Random(None)``: entropy too


class Draws:
    """The generators a trace watches, each with its state before the body ran, and where
    it found them (looked at again as the trace ends: a generator the body made and kept)."""

    def __init__(self):
        self.watched: dict = {}   # id(generator) -> (generator, state, label)
        self.sources: dict = {}   # place key -> (source, label)
        self.leaves: list = []    # the traced call's argument leaves (``leaf`` sources)
        self.entropy: str = ""    # what read fresh entropy, if anything did

    def watch(self, rng, label: str) -> None:
        if id(rng) in self.watched or issubclass(type(rng), random.SystemRandom):
            return
        try:
            self.watched[id(rng)] = (rng, state_of(rng), label)
        except Exception:   # noqa: BLE001 -- a subclass's own ``getstate`` raised
            log.debug("not watched: %s", label, exc_info=True)

    def watch_globals(self) -> None:
        self.watch(np.random.mtrand._rand, "np.random")
        self.watch(random._inst, "random")

    def watch_roots(self, roots, leaves: list) -> None:
        """The generators within ``OBJECT_DEPTH`` steps of ``roots`` (``captures.Roots``)."""
        self.leaves = leaves
        for source, label in roots.candidates:
            self.watch_source(source, found_path(source, label, ())[2])

    def watch_source(self, source: tuple, label: str) -> None:
        """The generators below one root (``global rng``, ``closure rng``, ``self``)."""
        key = path_key(source, ())
        if key not in self.sources:
            self.sources[key] = (source, label)
            for found, path in _below(source, label, self.leaves):
                self.watch(found, path)

    def frame_started(self, frame) -> None:
        """``type_checks.watched`` calls this for each frame the body starts."""
        code = id(frame.f_code)
        if code in ENTROPY or (code == _SEED and frame.f_locals.get("a") is None):
            self.entropy = self.entropy or getattr(frame.f_code, "co_qualname",
                                                     frame.f_code.co_name)

    def drawn(self) -> list[str]:
        """What the body drew from: the generators whose state moved, those it made and kept
        where the next call reaches them (``if self.rng is None: self.rng = ...``), and the
        operating system's entropy."""
        moved = [label for rng, state, label in self.watched.values()
                 if not _same(state, state_of(rng))]
        for source, label in list(self.sources.values()):
            moved += [f"{path} (made by the body and kept)" for found, path in
                      _below(source, label, self.leaves) if id(found) not in self.watched]
        if self.entropy:
            moved.append(f"the operating system's entropy, read by {self.entropy} (as a "
                         f"generator made without a seed does)")
        return moved


def is_generator(obj) -> bool:
    """By its type alone: ``isinstance`` would ask a lazy object for its ``__class__``."""
    return issubclass(type(obj), RNG_TYPES)


def state_of(rng):
    """What a generator's next draws follow from, comparable with ``==`` (arrays as bytes),
    and how many children its seed sequence spawned (``rng.spawn(1)``)."""
    if isinstance(rng, random.Random):
        return rng.getstate()
    if isinstance(rng, np.random.SeedSequence):
        return rng.n_children_spawned
    if isinstance(rng, np.random.Generator):
        rng = rng.bit_generator
    state = rng.get_state(legacy=False) if isinstance(rng, np.random.RandomState) \
        else rng.state
    spawned = getattr(getattr(rng, "seed_seq", None), "n_children_spawned", None)
    return _comparable(state), spawned


def _comparable(value):
    if isinstance(value, dict):
        return tuple((k, _comparable(v)) for k, v in value.items())
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    return value


def _same(before, after) -> bool:
    try:
        return bool(before == after)
    except Exception:   # noqa: BLE001 -- a state that does not compare: moved, to be safe
        return False


def _below(source, label: str, leaves) -> list:
    """(generator, path) within ``OBJECT_DEPTH`` steps of a root, opening each object once
    and at most ``_WALK_LIMIT`` of them; none where the root cannot be read (an empty
    cell)."""
    try:
        return list(_generators(_root_value(source, leaves), OBJECT_DEPTH, label, set()))
    except Exception:   # noqa: BLE001 -- a deleted global, the user's own code raised
        return []


def _generators(obj, depth: int, path: str, opened: set):
    if is_generator(obj):
        yield obj, path
        return
    if depth == 0 or len(opened) >= _WALK_LIMIT or issubclass(type(obj), _LEAVES) \
            or id(obj) in opened or not walked(obj, OBJECT_DEPTH - depth):
        return
    opened.add(id(obj))
    for (step, key), child in _inner(obj):
        if not issubclass(type(child), _LEAVES):
            yield from _generators(child, depth - 1, f"{path}.{key}" if step == "attr"
                                   else f"{path}[{key!r}]", opened)


def _inner(obj) -> list:
    """``captures._children``, and what a generator also hides in: a partial's arguments, a
    bound method's object, a function's defaults and closure cells, an object's class."""
    cls = type(obj)
    if issubclass(cls, functools.partial):
        return [(("attr", "func"), obj.func), *_items(obj.args), *_items(obj.keywords)]
    if cls is types.MethodType:
        return [(("attr", "__self__"), obj.__self__), (("attr", "__func__"), obj.__func__)]
    if cls is types.FunctionType:
        return [*_items(obj.__defaults__ or ()), *_items(obj.__kwdefaults__ or {}),
                *_cells(obj)]
    found = _children(obj)
    if not issubclass(cls, (type, types.ModuleType, dict, *SEQUENCES)):
        found += [(("attr", k), v) for base in cls.__mro__ for k, v in vars(base).items()
                  if is_generator(v)]   # ``self.rng`` of a class attribute
    return found


def _items(values) -> list:
    pairs = values.items() if isinstance(values, dict) else enumerate(values)
    return [(("item", k), v) for k, v in pairs]


def _cells(fn) -> list:
    """A function's closure cells that hold a value, by their names."""
    found = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        with contextlib.suppress(ValueError):   # a cell not yet bound
            found.append((("attr", name), cell.cell_contents))
    return found


def settle(recorder) -> None:
    """Run the signature eagerly where the body drew from a generator that outlives it."""
    moved = recorder.draws.drawn()
    if not moved:
        return
    consts = [c.description.split(" at ")[-1] for c in recorder.captures
              if c.source[0] == "const"]
    where = f"; its draws reached the program at {', '.join(consts)}" if consts else ""
    recorder.set_fallback(f"the body drew random numbers from {', '.join(moved)}{where}: a "
                          f"replay would repeat them, so this signature runs eagerly (pass "
                          f"the random arrays in as arguments to compile it)", None)
