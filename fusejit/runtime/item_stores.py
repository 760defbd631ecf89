"""Items a trace stored into its arguments' dicts and lists (``tracer.containers.ItemStore``:
``vel[k] = mu * vel[k] - lr * g[k]``), stored again into the caller's containers after each
replay. The replay returns them after the result; ``Stored`` carries both to the call."""
from __future__ import annotations

from dataclasses import dataclass

from ..tracer.containers import container_at

ALIASED_CONTAINERS = ("a dict or list the body stores into is read through a global, closure "
                      "or object too: a replay would read its old items there")


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


def reads_captured(args, kwargs, captured: set[int]) -> bool:
    """Whether the arguments hold a dict or list that captured arrays are read through
    (``captured``: their ids). The key tells ``f(d, d)`` from ``f(d1, d2)`` (``key._shared``)
    but not ``f(STATE)`` from ``f(d)`` for a body that reads ``STATE``: where the body stores
    into the argument, eagerly it reads its own stores back through the global, which a
    replay (it stores after its program ran) would not."""
    if not captured:   # the common case: no captured array is read through a container
        return False
    seen: set[int] = set()
    stack = [*args, *kwargs.values()]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if id(item) in captured:
                return True
            if id(item) not in seen:
                seen.add(id(item))
                stack.extend(item.values() if kind is dict else item)
        elif isinstance(item, tuple):
            stack.extend(item)
    return False


def captured_containers(tree, leaves) -> set[int]:
    """ids of the containers the paths' captured arrays are read through, as they are now."""
    return {id(c) for path in tree.paths for check in path.trace.containers
            for c in (check.container(leaves),) if c is not None}
