"""Items a trace stored into its arguments' dicts and lists (``tracer.containers.ItemStore``:
``vel[k] = mu * vel[k] - lr * g[k]``), stored again into the caller's containers after each
replay. The replay returns them after the result; ``Stored`` carries both to the call."""
from __future__ import annotations

from dataclasses import dataclass

from ..tracer.containers import container_at

ALIASED_CONTAINERS = ("a dict or list the body stores into is passed in more than one place, or "
                      "is read through a global, closure or object too: the trace saw one "
                      "container per place")


@dataclass(frozen=True)
class Stored:
    """A replay's answer when the body stored into argument containers."""
    result: object
    items: tuple
    stores: tuple   # ItemStore, their keys in the order of ``items``

    def apply(self, args, kwargs):
        """Stores the items into the containers ``args`` and ``kwargs`` hold; the result."""
        items = iter(self.items)
        for store in self.stores:
            container = container_at(store.path, args, kwargs)
            for key in store.keys:
                container[key] = next(items)
        return self.result


def distinct(args, kwargs, captured=frozenset()) -> bool:
    """Whether no dict or list is held in two places of the arguments, or is one that
    ``captured`` (ids of containers captured arrays are read through) holds. The key tells
    ``f(d, d)`` from ``f(d1, d2)`` (``key._shared``) but not ``f(STATE)`` from ``f(d)`` for a
    body that reads ``STATE``; where the body stores into one, it reads its own stores back
    through the other name eagerly, which a replay of the other case would not."""
    seen = set(captured)
    stack = [*args, *kwargs.values()]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if id(item) in seen:
                return False
            seen.add(id(item))
            stack.extend(item.values() if kind is dict else item)
        elif isinstance(item, tuple):
            stack.extend(item)
    return True


def captured_containers(tree, leaves) -> set[int]:
    """ids of the containers the paths' captured arrays are read through, as they are now."""
    return {id(c) for path in tree.paths for check in path.trace.containers
            for c in (check.container(leaves),) if c is not None}
