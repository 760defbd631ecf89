"""Writes into the dicts and lists of the arguments (``v["m"] = b1 * v["m"] + g``,
``state.append(h)``, ``del cache[k]``).

The body runs on copies of the argument containers (``unflatten`` builds them around the
proxies), so such a write would reach neither the caller's container nor the replay. Each
container is paired with its copy before recording; a copy whose items changed (set, added or
removed) makes the trace an eager fallback, and its new items (concrete values, the caller's
own nested containers) are put into the caller's container, as the eager call would have.
In-place writes into the arrays they hold (``params[k] -= lr * g[k]``) are traced as usual.
"""
from __future__ import annotations

from dataclasses import dataclass

from .context import unwrap


@dataclass
class Pair:
    original: dict | list
    copy: dict | list
    items: list          # the copy's (key, item) pairs before recording
    label: str


def share_repeated(args, kwargs, proxy_args, proxy_kwargs) -> tuple[tuple, dict]:
    """The copies with one copy per container: a dict or list passed twice (``f(d, d)``) is
    one object in the body, as eagerly, so an item stored through one name is read through
    the other."""
    seen: dict = {}

    def shared(original, copy):
        kind = type(original)
        if kind not in (dict, list, tuple) or type(copy) is not kind:
            return copy
        if id(original) in seen:
            return seen[id(original)]
        if kind is tuple:
            copy = tuple(shared(o, c) for o, c in zip(original, copy, strict=True))
        else:
            for key, item in _items(original):
                copy[key] = shared(item, copy[key])
        seen[id(original)] = copy
        return copy

    return (tuple(shared(o, c) for o, c in zip(args, proxy_args, strict=True)),
            {name: shared(kwargs[name], copy) for name, copy in proxy_kwargs.items()})


def pair_containers(args, kwargs, proxy_args, proxy_kwargs) -> list[Pair]:
    pairs: list[Pair] = []
    for index, (original, copy) in enumerate(zip(args, proxy_args, strict=True)):
        _pair(original, copy, f"argument {index}", pairs)
    for name, original in kwargs.items():
        _pair(original, proxy_kwargs[name], f"argument {name}", pairs)
    return pairs


def _pair(original, copy, label: str, pairs: list) -> None:
    kind = type(original)
    if kind not in (dict, list, tuple) or type(copy) is not kind:
        return
    if kind is not tuple:
        pairs.append(Pair(original, copy, _items(copy), label))
    for key, item in _items(original):
        _pair(item, copy[key], f"{label}[{key!r}]", pairs)


def _items(container) -> list:
    if type(container) is dict:
        return list(container.items())
    return list(enumerate(container))


def _changed(pair: Pair) -> bool:
    now = _items(pair.copy)
    return len(now) != len(pair.items) or any(
        key != old_key or item is not old_item
        for (key, item), (old_key, old_item) in zip(now, pair.items, strict=True))


def detect_container_writes(recorder, pairs: list[Pair]) -> None:
    changed = [pair for pair in pairs if _changed(pair)]
    if not changed:
        return
    recorder.set_fallback(f"side effect that replay would lose: the body changed the items of "
                          f"{changed[0].label}", loc=None)
    originals = {id(pair.copy): pair.original for pair in pairs}
    restore = lambda item: originals[id(item)] if id(item) in originals else unwrap(item)
    for pair in changed:
        if type(pair.original) is dict:
            new = {key: restore(item) for key, item in pair.copy.items()}
            pair.original.clear()
            pair.original.update(new)
        else:
            pair.original[:] = [restore(item) for item in pair.copy]
