"""How the dicts and lists a trace reached other than as arguments relate to the arguments'
own: which of them is an argument's, and which are one object.

A trace that stores into containers is right only for calls where those containers relate
as they did while tracing:

- the body reads ``STATE["v"]`` through a global and stores ``d["v"] = x * 2`` into its
  argument ``d``: eagerly it reads its own store back when called as ``f(x, STATE)`` and the
  global's old item when called as ``f(x, other)``;
- ``a.m["w"] = ...`` then ``b.m["w"] * x``: the read sees the store only where ``a.m is b.m``.

Each such trace lists its *places* (``places_of``): the containers captured arrays are read
through, those ``self.m[k] = ...`` stores into, and those where the argument's copy stood in
while tracing (``capture_proxies._Swaps.stand_in``). A call's *relation* gives each place
the position of the argument container it is (``("arg", k)``), or the first place that is
the same object. The runtime keys a call whose relation differs from the one its entry was
traced under apart (``CompiledFunction._related``), so it traces anew and sees the aliasing
as it is. Traces that store nothing have no places: their captures are read again through
their paths on every call, whoever else holds them."""
from __future__ import annotations

from dataclasses import dataclass

from ..tracer.captures import path_key, reach


@dataclass(frozen=True, eq=False)
class Place:
    """A container reached from ``source`` (as in ``captures.Capture``) by ``steps``
    (("attr", name) / ("item", key)); places are equal where their paths are."""

    source: tuple
    steps: tuple

    def __eq__(self, other):
        return type(other) is Place and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    @property
    def key(self) -> tuple:
        return path_key(self.source, self.steps)

    def container(self, leaves):
        """The object there now; None where the path fails."""
        return reach(self.source, self.steps, leaves)


def places_of(trace, owner) -> tuple[Place, ...]:
    """The places of a trace whose relation matters (``()`` for most traces): it stores into
    an argument's or an object's container, or an argument's copy stood in somewhere."""
    item_writes = [w for w in trace.attr_writes if w.keys]
    if not (trace.item_stores or item_writes or trace.substituted):
        return ()
    found = [Place(c.source, c.steps) for c in trace.containers]
    found += [Place(("object", owner) if w.leaf is None else ("leaf", w.leaf),
                    (*w.steps, ("attr", w.name))) for w in item_writes]
    found += [Place(source, steps) for source, steps in trace.substituted]
    return merged((), tuple(found))


def merged(known: tuple, new: tuple) -> tuple:
    """``known`` and the places of ``new`` not among them, in order."""
    for place in new:
        if place not in known:
            known += (place,)
    return known


def relation(places: tuple, containers: list, leaves) -> tuple:
    """For each place: ("arg", k) where it holds the k-th container of the arguments
    (``containers``: their ids, as ``key.make_key`` lists them), the position of the first
    place holding the same object, or None where its path fails."""
    first: dict = {}
    held = []   # keeps each object alive while ids are compared (a property's new object)
    found = []
    for position, place in enumerate(places):
        obj = place.container(leaves)
        held.append(obj)
        if obj is None:
            found.append(None)
        elif id(obj) in containers:
            found.append(("arg", containers.index(id(obj))))
        else:
            found.append(first.setdefault(id(obj), position))
    return tuple(found)
