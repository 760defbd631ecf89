"""Items a trace stored into its arguments' dicts and lists (``tracer.containers.ItemStore``:
``vel[k] = mu * vel[k] - lr * g[k]``), stored again into the caller's containers after each
replay. The replay returns them after the result; ``Stored`` carries both to the call."""
from __future__ import annotations

from dataclasses import dataclass

from ..tracer.containers import container_at


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
