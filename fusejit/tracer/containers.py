"""Writes into the dicts and lists of the arguments (``v["m"] = b1 * v["m"] + g``,
``state.append(h)``, ``del cache[k]``).

The body runs on copies of the argument containers (``unflatten`` builds them around the
proxies), so such a write would reach neither the caller's container nor the replay. Each
container is paired with its copy before recording. A copy whose keys are as they were and
whose replaced items are all values the body computed from traced ones (arrays, NumPy
scalars, Python floats) becomes an ``ItemStore``: the trace returns those items beside its
result, and the runtime stores them into the caller's container after each replay (``vel[k] =
mu * vel[k] - lr * g[k]``, ``config["velocity"] = v``). Any other change (items added or
removed, untraced values, a container passed twice, one that captured arrays are read through
too) makes the trace an eager fallback; so does a change to a static dict or list, which the
body gets itself (``pair_statics``). Either way the caller's containers get the new items
(concrete values, the caller's own nested containers), as the eager call would have given
them. In-place writes into the arrays they hold (``params[k] -= lr * g[k]``) are traced as
usual.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .context import unwrap
from .pytree import DEEPEST


@dataclass
class Pair:
    original: dict | list
    copy: dict | list
    items: list          # the copy's (key, item) pairs before recording
    label: str
    path: tuple = ()     # the argument (position or keyword name), then the keys down to it


@dataclass(frozen=True)
class ItemStore:
    """Items the body stored into an argument's dict or list: ``keys`` of the container at
    ``path`` (the argument's position or keyword name, then keys), in the order the trace
    returns their new values after its result."""
    path: tuple
    keys: tuple


def share_repeated(args, kwargs, proxy_args, proxy_kwargs) -> tuple[tuple, dict]:
    """The copies with one copy per container: a dict or list passed twice (``f(d, d)``) is
    one object in the body, as eagerly, so an item stored through one name is read through
    the other."""
    seen: dict = {}

    def shared(original, copy):
        kind = type(original)
        if not _walked(original) or type(copy) is not kind:
            return copy
        if id(original) in seen:
            return seen[id(original)]
        if isinstance(original, tuple):
            items = [shared(o, c) for o, c in zip(original, copy, strict=True)]
            copy = kind(*items) if kind is not tuple else tuple(items)
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
        _pair(original, copy, f"argument {index}", pairs, (index,))
    for name, original in kwargs.items():
        _pair(original, proxy_kwargs[name], f"argument {name}", pairs, (name,))
    return pairs


def _walked(value) -> bool:
    """A dict, list, tuple or namedtuple: the containers the body gets copies of."""
    kind = type(value)
    return kind is dict or kind is list or kind is tuple or (
        isinstance(value, tuple) and hasattr(kind, "_fields"))


def _pair(original, copy, label: str, pairs: list, path: tuple,
          within: frozenset = frozenset()) -> None:
    """``within``: the ids of the containers above (a static list that holds itself)."""
    if not _walked(original) or type(copy) is not type(original) or id(original) in within \
            or len(within) >= DEEPEST:
        return
    if not isinstance(original, tuple):
        pairs.append(Pair(original, copy, _items(copy), label, path))
    within = within | {id(original)}
    for key, item in _items(original):
        _pair(item, copy[key], f"{label}[{key!r}]", pairs, (*path, key), within)


def _items(container) -> list:
    if type(container) is dict:
        return list(container.items())
    return list(enumerate(container))


def _changed(pair: Pair) -> bool:
    now = _items(pair.copy)
    return len(now) != len(pair.items) or any(
        key != old_key or item is not old_item
        for (key, item), (old_key, old_item) in zip(now, pair.items, strict=True))


def detect_container_writes(recorder, pairs: list[Pair]) -> tuple[list[ItemStore], list]:
    """The replayable stores and the new items they put (the trace returns them), in order;
    any other change sets the recorder's fallback. The caller's containers get every change."""
    changed = [pair for pair in pairs if _changed(pair)]
    read = _read_through_captures(recorder) if changed else set()
    stores: list[ItemStore] = []
    items: list = []
    for pair in changed:
        why = _unreplayable(pair, pairs, read)
        if why:
            recorder.set_fallback(f"side effect that replay would lose: the body changed the "
                                  f"items of {pair.label}{why}", loc=None)
            continue
        before = dict(pair.items)
        keys = tuple(key for key, item in _items(pair.copy) if item is not before[key])
        stores.append(ItemStore(pair.path, keys))
        items += [pair.copy[key] for key in keys]
    _give_back(pairs, changed)
    return stores, items


def pair_statics(fn) -> list[Pair]:
    """The dicts and lists a partial binds (``static_argnames`` values, a user's partial):
    the body gets them as they are, not copies, so each is paired with itself."""
    if not isinstance(fn, functools.partial):
        return []
    pairs: list[Pair] = []
    for name, value in fn.keywords.items():
        _pair(value, value, f"static argument {name}", pairs, (name,))
    for index, value in enumerate(fn.args):
        _pair(value, value, f"partial argument {index}", pairs, (index,))
    return pairs


def detect_static_writes(recorder, pairs: list[Pair]) -> None:
    """Items the body stored into a static dict or list run the signature eagerly: the key
    holds that container by id, and a replay would not store them again. The container gets
    the concrete values, never proxies."""
    changed = [pair for pair in pairs if _changed(pair)]
    if changed:
        recorder.set_fallback(f"side effect that replay would lose: the body changed the "
                              f"items of {changed[0].label}", loc=None)
    _give_back(pairs, changed)


def container_at(path: tuple, args, kwargs):
    """The container at ``path``: an argument's position or keyword name, then keys."""
    root, *keys = path
    target = args[root] if type(root) is int else kwargs[root]
    for key in keys:
        target = target[key]
    return target


def _read_through_captures(recorder) -> set[int]:
    """ids of the containers captured arrays were read through (``STATE`` of ``STATE["v"]``):
    a replay stores its items after its program ran, and the program read the old ones."""
    from .captures import container_checks
    paths = [(path.source, path.steps, record.description) for record in recorder.captures
             for path in (record, *recorder.aliases(record))]
    return {id(c) for c in (check.container(recorder.leaves)
                            for check in container_checks(paths, recorder.leaves))
            if c is not None}


def _unreplayable(pair: Pair, pairs: list[Pair], read: set[int]) -> str:
    """Why a replay cannot store the pair's new items ("" when it can); ``read``: the ids of
    the containers captured arrays were read through."""
    if [key for key, _ in _items(pair.copy)] != [key for key, _ in pair.items]:
        return " (items added or removed)"
    if sum(other.copy is pair.copy for other in pairs) > 1:
        return " (the container is passed more than once)"
    if id(pair.original) in read:
        return " (it is read through a global, closure or object too)"
    before = dict(pair.items)
    if not all(_traced_value(item) for key, item in _items(pair.copy)
               if item is not before[key]):
        return " (not all of them traced values)"
    return ""


def _traced_value(item) -> bool:
    """An array, NumPy scalar or Python float the body computed: returned, the replay makes
    it anew (``config["t"] += 1`` on a float ``t``)."""
    from .scalars import TracedFloat
    from .side_effects import traced
    return isinstance(item, TracedFloat) or traced(item, (np.ndarray, np.generic, float))


def _give_back(pairs: list[Pair], changed: list[Pair]) -> None:
    """The changed copies' items, concrete, into the caller's containers."""
    originals = {id(pair.copy): pair.original for pair in pairs}
    restore = lambda item: originals[id(item)] if id(item) in originals else unwrap(item)
    for pair in changed:
        if type(pair.original) is dict:
            new = {key: restore(item) for key, item in pair.copy.items()}
            pair.original.clear()
            pair.original.update(new)
        else:
            pair.original[:] = [restore(item) for item in pair.copy]
