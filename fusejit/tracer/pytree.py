"""Pytrees: nested dict/list/tuple/namedtuple containers whose leaves are arrays or Python values.

``flatten`` visits dicts in insertion order and ``unflatten`` rebuilds them in it: the body
iterates an argument dict (``np.concatenate(list(d.values()))``) and the caller gets a returned
dict in the order eager Python gives. Two dicts with the same keys in another order therefore
have different ``TreeDef``s, and so different cache keys.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree. ``kind`` is "leaf", "dict", "list", "tuple" or "namedtuple";
    ``meta`` holds the dict keys (in insertion order) or the namedtuple class."""

    kind: str
    meta: object = None
    children: tuple[TreeDef, ...] = ()
    digest: int = field(default=0, compare=False, repr=False)
    flat_tuple: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self):
        # Cache keys hash a TreeDef on every call: compute the hash once, bottom-up.
        object.__setattr__(self, "digest", hash((self.kind, self.meta, self.children)))
        object.__setattr__(self, "flat_tuple", self.kind == "tuple" and all(
            child.kind == "leaf" for child in self.children))

    def __hash__(self):
        return self.digest

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self.children)


LEAF = TreeDef("leaf")


def is_traced_leaf(x) -> bool:
    """Exact ``np.ndarray`` (subclasses are static), ``np.generic`` and Python ``float``."""
    return type(x) is np.ndarray or isinstance(x, np.generic) or type(x) is float


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree) -> tuple[list, TreeDef]:
    leaves: list = []
    try:
        treedef = _flatten(tree, leaves)
    except RecursionError:   # a list that holds itself (``L.append(L)``), or lists nested
        leaves = []          # hundreds deep: a leaf where it recurs, or that deep
        treedef = _flatten(tree, leaves, frozenset())
    return leaves, treedef


DEEPEST = 100   # containers nested deeper are leaves, where a flatten ran out of stack


def _flatten(tree, leaves: list, within: frozenset | None = None) -> TreeDef:
    """``within``: the ids of the containers above, where a cycle is looked for."""
    if within is not None and (type(tree) in (dict, list, tuple) or _is_namedtuple(tree)):
        if id(tree) in within or len(within) >= DEEPEST:
            leaves.append(tree)
            return LEAF
        within = within | {id(tree)}
    if type(tree) is dict:
        keys = tuple(tree)
        return TreeDef("dict", keys, tuple(_flatten(tree[k], leaves, within) for k in keys))
    if type(tree) is list:
        return TreeDef("list", None, tuple(_flatten(x, leaves, within) for x in tree))
    if type(tree) is tuple:
        return TreeDef("tuple", None, tuple(_flatten(x, leaves, within) for x in tree))
    if _is_namedtuple(tree):
        return TreeDef("namedtuple", type(tree), tuple(_flatten(x, leaves, within)
                                                       for x in tree))
    leaves.append(tree)
    return LEAF


def unflatten(treedef: TreeDef, leaves):
    if treedef.flat_tuple and len(leaves) == len(treedef.children):
        return tuple(leaves)   # the common result shape, on every replay
    if treedef is LEAF and len(leaves) == 1:
        return leaves[0]
    it = iter(leaves)
    tree = _unflatten(treedef, it)
    if next(it, _END) is not _END:
        raise ValueError("unflatten: too many leaves for the tree structure")
    return tree


_END = object()


def _unflatten(treedef: TreeDef, it):
    if treedef.kind == "leaf":
        leaf = next(it, _END)
        if leaf is _END:
            raise ValueError("unflatten: too few leaves for the tree structure")
        return leaf
    children = [_unflatten(child, it) for child in treedef.children]
    if treedef.kind == "dict":
        return dict(zip(treedef.meta, children, strict=True))
    if treedef.kind == "list":
        return children
    if treedef.kind == "tuple":
        return tuple(children)
    return treedef.meta(*children)


def leaf_paths(treedef: TreeDef, prefix: str = "") -> list[str]:
    """Dotted user-facing paths of each leaf (``p.attn.w``, ``params.0``), in leaf order."""
    if treedef.kind == "leaf":
        return [prefix]
    if treedef.kind == "dict":
        labels = [str(k) for k in treedef.meta]
    elif treedef.kind == "namedtuple":
        labels = list(treedef.meta._fields)
    else:
        labels = [str(i) for i in range(len(treedef.children))]
    paths = []
    for label, child in zip(labels, treedef.children, strict=True):
        paths += leaf_paths(child, f"{prefix}.{label}" if prefix else label)
    return paths
