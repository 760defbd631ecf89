"""Captured arrays: ndarrays a traced body reads that were not passed as arguments.

A capture is found by a *path* the runtime re-reads on every call (a global name, a closure
cell, attributes of a static argument object such as ``self``), so rebinding a global or
updating ``self.W`` outside is seen. An array reachable by no path (created in the body) is a
constant: the capture holds a copy taken when the trace first read it.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import sys
import types
from dataclasses import dataclass, field

import numpy as np

from ..ir import TensorType
from .code_reads import getattr_names
from .loc import classify, in_stdlib

MAX_DEPTH = 3   # attribute/item steps below a root: self.layers[0]["w"] is three
# steps below a root within which the arrays of objects, lists and dicts are swapped for
# proxies and the objects snapshotted: ``model.blocks[0].attn.c_proj.w`` is five,
# ``net._modules["0"]._modules["attn"]._params["w"]`` seven
OBJECT_DEPTH = 12
_WALK_LIMIT = 20_000   # objects looked into for one array no shorter path reaches
MAX_ITEMS = 10_000   # items of a list, tuple or dict looked into past MAX_DEPTH steps
_NO_ARRAYS = (int, float, complex, str, bytes, type(None), np.ndarray, np.generic)
SEQUENCES = (list, tuple, collections.deque)   # and their subclasses: items by position


@dataclass(frozen=True)
class Capture:
    """``source`` is ("global", globals_dict, name), ("cell", cell), ("leaf", leaf_index),
    ("object", obj) or ("const", array); ``steps`` are ("attr", name) / ("item", key).
    ``aliases``: Captures of the other paths that held the same array while tracing
    (``B = A``, ``a.w is b.w``): one capture, so a write through one name is seen through the
    others; a replay applies only while they all still hold it (``aliases_hold``)."""

    description: str
    type: TensorType
    source: tuple = field(default=(), compare=False, repr=False)
    steps: tuple = field(default=(), compare=False, repr=False)
    aliases: tuple = field(default=(), compare=False, repr=False)

    def resolve(self, leaves: list) -> np.ndarray | None:
        """The current array (re-read through the path every call); None when a captured
        view's base no longer has the layout the view was taken from, or the path no longer
        leads anywhere (``del layer.b``, a deleted global: trace again)."""
        kind = self.source[0]   # ``_root_value``, inlined: this runs for every capture
        try:
            if kind == "global":
                obj = self.source[1][self.source[2]]
            elif kind == "cell":
                obj = self.source[1].cell_contents
            elif kind == "leaf":
                obj = leaves[self.source[1]]
            else:
                obj = self.source[1]
            for step, key in self.steps:
                if step == "attr":
                    obj = getattr(obj, key)
                elif step == "item":
                    obj = obj[key]
                else:
                    obj = _view_again(_array_of(obj), key)
        except (AttributeError, LookupError, ValueError, TypeError):
            return None
        return _array_of(obj)

    def aliases_hold(self, leaves: list, array: np.ndarray) -> bool:
        """Whether every alias (a Capture of the same array) still reaches ``array``, what
        ``resolve`` gave."""
        for alias in self.aliases:
            try:
                other = alias.resolve(leaves)
            except Exception:  # noqa: BLE001 -- a deleted name: not the same array
                return False
            if other is not array and not (_is_view_path(alias.steps, self.steps)
                                            and _same_memory(other, array)):
                return False
        return True


def _is_view_path(*paths) -> bool:
    """A path ending in a ``view`` step makes a new view object on every call."""
    return any(steps and steps[-1][0] == "view" for steps in paths)


def _same_memory(a, b) -> bool:
    """Two views of the same elements, laid out alike (views taken again every call)."""
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.shape == b.shape
            and a.strides == b.strides and a.dtype == b.dtype
            and a.flags.writeable == b.flags.writeable
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def path_key(source: tuple, steps: tuple) -> tuple:
    """A hashable identity of a path (its roots by id: a globals dict, a cell, an object)."""
    return tuple(p if type(p) in (str, int) else id(p) for p in source), steps


def _array_of(obj):
    """The array itself where another thread's trace has swapped in its proxy for now."""
    return obj if type(obj) is np.ndarray else getattr(obj, "swapped_array", obj)


def _view_geometry(view: np.ndarray, base) -> tuple | None:
    """How ``view`` sits in ``base``, a captured array holding all of its elements (``W.T``,
    ``W[::-1]``, ``W[:, :3]`` of a captured ``W``): a ``("view", geometry)`` step that takes
    the same view of the base every call. None unless ``base`` is a C- or F-contiguous array
    of the view's dtype (no gaps: every address in its extent is one of its elements) whose
    extent holds the view's."""
    if (type(base) is not np.ndarray or base.dtype != view.dtype or view.size == 0
            or not (base.flags.c_contiguous or base.flags.f_contiguous)):
        return None
    start = base.__array_interface__["data"][0]
    low, high = _extent(view)
    offset = low - start
    if offset < 0 or high > start + base.nbytes or offset % view.itemsize:
        return None
    first = (view.__array_interface__["data"][0] - start) // view.itemsize
    return ("view", (first, view.shape, view.strides, base.shape, base.strides, base.dtype))


def _extent(view: np.ndarray) -> tuple[int, int]:
    """The lowest address of ``view``'s elements and one past its highest element's end."""
    low = high = view.__array_interface__["data"][0]
    for length, stride in zip(view.shape, view.strides, strict=True):
        if stride < 0:
            low += stride * (length - 1)
        else:
            high += stride * (length - 1)
    return low, high + view.itemsize


def _view_again(base, geometry) -> np.ndarray | None:
    first, shape, strides, base_shape, base_strides, dtype = geometry
    if (type(base) is not np.ndarray or base.shape != base_shape or base.dtype != dtype
            or base.strides != base_strides):
        return None
    order = "C" if base.flags.c_contiguous else "F"
    return np.lib.stride_tricks.as_strided(base.reshape(-1, order=order)[first:], shape,
                                           strides)


def _arrays(obj, depth, steps=()):
    """(steps, array) for the arrays reachable from obj within ``depth`` levels."""
    if type(obj) is np.ndarray:     # not a Tracer stored on self while tracing
        yield steps, obj
        return
    if depth == 0:
        return
    for step, child in _children(obj):
        yield from _arrays(child, depth - 1, (*steps, step))


def _children(obj):
    """(step, child) pairs below a container or plain object; none below one that raises
    when looked at (a lazy settings object whose ``__getattribute__`` raises until set up)."""
    try:
        return _children_of(obj)
    except Exception:   # noqa: BLE001 -- the user's own code raised
        return []


def _children_of(obj):
    if isinstance(obj, dict):
        return [(("item", k), v) for k, v in obj.items()]
    if isinstance(obj, SEQUENCES):
        return [(("item", i), v) for i, v in enumerate(obj)]
    if isinstance(obj, (types.ModuleType, type)):   # ``cls.table``, ``config.W`` of user code
        return [(("attr", k), v) for k, v in vars(obj).items() if not k.startswith("__")
                and not isinstance(v, types.ModuleType)] if user_code(obj) else []
    if isinstance(obj, (types.FunctionType, np.ndarray)):
        return []
    if isinstance(obj, functools.partial):   # ``P = partial(lin, W)``: ``W`` by reference
        return [(("attr", "args"), obj.args), (("attr", "keywords"), obj.keywords),
                (("attr", "func"), obj.func)]
    attrs = getattr(obj, "__dict__", None)
    slots = slot_items(obj)
    if not isinstance(attrs, dict):
        return [(("attr", k), v) for k, v in slots]
    on_class = [(k, v) for k, v in vars(type(obj)).items()
                if type(v) is np.ndarray and k not in attrs]   # ``self.table`` of the class
    return [(("attr", k), v) for k, v in [*attrs.items(), *slots, *on_class]
            if not k.startswith("__")]


def held_deep(obj) -> bool:
    """Whether a walk looks into ``obj`` more than ``MAX_DEPTH`` steps below a root (down to
    ``OBJECT_DEPTH``): a list, tuple, deque or dict, a ``SimpleNamespace``, a partial, a bound
    method, or a function or object of code outside Python's own library (a model's layers,
    from a file, a notebook cell or an installed package; not a logger's handlers). A list,
    tuple or dict of more than ``MAX_ITEMS`` items is data (a tokenizer's merges), not
    layers."""
    if isinstance(obj, (dict, *SEQUENCES)):
        return len(obj) <= MAX_ITEMS
    if isinstance(obj, (types.SimpleNamespace, functools.partial, types.MethodType)):
        return True
    if isinstance(obj, types.FunctionType):
        return not in_stdlib(obj.__code__.co_filename)
    name = getattr(type(obj), "__module__", None)
    module = sys.modules.get(name)
    filename = getattr(module, "__file__", None)
    if filename is None:   # ``__main__`` of a notebook or ``python -c``, exec'd code
        return name not in sys.builtin_module_names
    return classify(filename) == "user" and not in_stdlib(filename)


def walked(obj, steps: int) -> bool:
    """Whether a walk looks into ``obj``, ``steps`` below a root: any within ``MAX_DEPTH``,
    past it those ``held_deep``."""
    return steps < MAX_DEPTH or held_deep(obj)


def breadth_first(root, opened: set, limit: int):
    """(steps, object, its ``_children``) of ``root`` and what it holds, level by level down
    to ``OBJECT_DEPTH`` steps, those ``walked``, each once (``opened``: shared with other
    roots, ``limit`` objects in all)."""
    level = [((), root)]
    for depth in range(OBJECT_DEPTH + 1):
        below = []
        for steps, obj in level:
            if id(obj) in opened or len(opened) >= limit or not walked(obj, depth):
                continue
            opened.add(id(obj))
            children = _children(obj)
            yield steps, obj, children
            below += [((*steps, step), child) for step, child in children
                      if not issubclass(type(child), _NO_ARRAYS)]
        level = below


def user_code(obj) -> bool:
    """A module or class defined in user code (not NumPy's, nor the standard library's)."""
    module = obj if isinstance(obj, types.ModuleType) else sys.modules.get(obj.__module__)
    filename = getattr(module, "__file__", None)
    return filename is not None and classify(filename) == "user"


def slot_names(cls) -> list[str]:
    """The ``__slots__`` names of ``cls`` and its bases (not ``__dict__``/``__weakref__``)."""
    names = []
    for base in getattr(cls, "__mro__", ()):
        slots = vars(base).get("__slots__", ())
        names += [_mangled(base, s) for s in ([slots] if isinstance(slots, str) else slots)
                  if s not in ("__dict__", "__weakref__")]
    return names


def _mangled(cls, name: str) -> str:
    """A slot's attribute name: ``__v`` of class ``S`` is ``_S__v``, as Python stores it."""
    if name.startswith("__") and not name.endswith("__") and cls.__name__.strip("_"):
        return f"_{cls.__name__.lstrip('_')}{name}"
    return name


def slot_items(obj) -> list[tuple[str, object]]:
    """(name, value) of each slot of ``obj`` that holds a value."""
    items = []
    for name in slot_names(type(obj)):
        with contextlib.suppress(AttributeError):
            items.append((name, object.__getattribute__(obj, name)))
    return items


def _search(obj, target, depth):
    """Every steps path from obj to target (identity), ``depth`` levels down: obj's own
    children first, then the paths below each child in turn."""
    if obj is target:
        yield ()
        return
    if depth == 0:
        return
    children = _children(obj)
    for step, child in children:
        if child is target:
            yield (step,)
    for step, child in children:
        if child is not target:
            for found in _search(child, target, depth - 1):
                yield (step, *found)


def _steps_text(steps) -> str:
    text = ""
    for step, key in steps:
        if step == "view":
            return text + "[view]"
        text += f".{key}" if step == "attr" else f"[{key!r}]"
    return text


def code_names(code) -> set[str]:
    """Global and attribute names read by a code object and the code objects nested in it,
    and the names it gives ``getattr`` (``getattr(self, "k")``)."""
    names = set(code.co_names) | getattr_names(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names


@dataclass
class Roots:
    """Where the traced function can reach arrays from: (source, label) candidates."""

    candidates: list = field(default_factory=list)
    # id(a function's __defaults__ or __kwdefaults__) -> (the function, that attribute's name)
    defaults: dict = field(default_factory=dict)

    @classmethod
    def of(cls, fn, arg_leaves: list, leaf_paths: list[str]) -> Roots:
        roots = cls()
        fn = getattr(fn, "__wrapped__", fn)
        if isinstance(fn, functools.partial):   # its bound arguments, then its function
            roots.candidates += [(("object", v), f"partial argument {k}") for k, v in
                                 [*enumerate(fn.args), *fn.keywords.items()]]
            fn = fn.func
        self_obj, func = bound_parts(fn)
        if self_obj is not None:
            roots.candidates.append((("object", self_obj), "self"))
        code = getattr(func, "__code__", None)
        if code is not None:
            roots.add_globals(func.__globals__, code)
            cells = func.__closure__ or ()
            for name, cell in zip(code.co_freevars, cells, strict=False):
                roots.candidates.append((("cell", cell), name))
            for name in ("__defaults__", "__kwdefaults__"):
                defaults = getattr(func, name)
                if defaults:   # ``def f(x, cfg=STATE): return cfg`` returns STATE itself
                    roots.candidates.append((("object", defaults), "default"))
                    roots.defaults[id(defaults)] = (func, name)
        for index, (leaf, path) in enumerate(zip(arg_leaves, leaf_paths, strict=True)):
            if not isinstance(leaf, (np.ndarray, np.generic, int, float, str, bytes)):
                roots.candidates.append((("leaf", index), path))
                roots.add_callable(leaf, path)
        return roots

    def add_callable(self, fn, path: str) -> None:
        """What a function given as an argument reaches (``grad_fn(w)``: ``callable_parts``).
        The cache key holds the function itself (a bound method: its object and function),
        so these are the same objects on every call of that signature, read again as the
        body's own."""
        for source, value, label, defaults_of in callable_parts(fn, path):
            self.candidates.append((source, label))
            if defaults_of is not None:
                self.defaults[id(value)] = defaults_of

    def read_again(self, source, steps) -> tuple:
        """(source, steps) of a path to read on every call: one through a function's defaults
        starts at the function (``f.__defaults__ = (...)`` rebinds them)."""
        owner = self.defaults.get(id(source[1])) if source[0] == "object" else None
        if owner is None:
            return source, steps
        return ("object", owner[0]), (("attr", owner[1]), *steps)

    def add_globals(self, globals_dict: dict, code) -> None:
        """The globals the code names, then the other global arrays (``eval("W")``)."""
        globals_dict = getattr(globals_dict, "real", globals_dict)   # a traced copy's overlay
        names = code_names(code)
        for name in sorted(names):
            if name in globals_dict:
                self.candidates.append((("global", globals_dict, name), name))
        self.candidates += [(("global", globals_dict, name), name) for name, value in
                            list(globals_dict.items())
                            if type(value) is np.ndarray and name not in names]


def callable_parts(fn, label: str, depth: int = 3):
    """(source, value, label, defaults of) for what a function given as an argument reaches:
    a partial's bound arguments (then its function, ``depth`` partials down), a bound
    method's object, a function's closure cells and its defaults (``defaults of``: the
    function and ``"__defaults__"`` or ``"__kwdefaults__"``, else None)."""
    if depth == 0:
        return
    if isinstance(fn, functools.partial):
        for k, value in [*enumerate(fn.args), *fn.keywords.items()]:
            yield ("object", value), value, f"{label}.args[{k!r}]", None
        yield from callable_parts(fn.func, label, depth - 1)
        return
    if isinstance(fn, types.MethodType):
        yield ("object", fn.__self__), fn.__self__, f"{label}.__self__", None
        fn = fn.__func__
    if type(fn) is not types.FunctionType:
        return
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:   # not bound yet
            continue
        yield ("cell", cell), value, f"{label}.<closure {name}>", None
    for name in ("__defaults__", "__kwdefaults__"):
        defaults = getattr(fn, name)
        if defaults:
            yield ("object", defaults), defaults, f"{label}.{name}", (fn, name)


def names_of(codes) -> set[str]:
    """The names the code objects (and the code nested in them) read: ``code_names``."""
    return set().union(*map(code_names, codes))


def method_owner(fn):
    """The object a compiled bound method is bound to, or a compiled callable object itself
    (its ``__call__``'s ``self``), also through the partial that binds its static arguments;
    None for anything else."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return bound_parts(fn)[0]


def bound_parts(fn) -> tuple:
    """(the object a method is bound to or None, the function): ``obj.f`` and ``cls.f`` of a
    classmethod, and a callable object, whose ``__call__`` is the function."""
    if isinstance(fn, types.MethodType):
        return fn.__self__, fn.__func__
    if not isinstance(fn, (types.FunctionType, type, types.BuiltinFunctionType)):
        try:   # as defined: a staticmethod's function is not bound to the object
            call = inspect.getattr_static(type(fn), "__call__")
        except AttributeError:
            call = None
        if type(call) is types.FunctionType:
            return fn, call
    return None, fn


class ContainerChanged(LookupError):
    """A list, tuple, deque or dict on a capture's path holds other items than while tracing:
    another number of them, or (a dict) other keys or the same keys in another order. The
    body's Python loop over it (``for l in net.layers``, ``for k in self.d``,
    ``list(P.values())``) ran once per item, in that order, so the replay does not apply."""


@dataclass(frozen=True)
class ContainerCheck:
    """A container a capture's path steps into by an item, and its ``container_layout``
    while tracing; ``verify``, before every replay, raises ``ContainerChanged`` when it has
    another one. One check per container, however many captures read through it."""

    description: str
    source: tuple
    steps: tuple    # from the root to the container
    layout: object

    def container(self, leaves: list):
        """The container, read again through the path; None where the path fails."""
        return reach(self.source, self.steps, leaves)

    def verify(self, leaves: list) -> None:
        obj = self.container(leaves)
        if obj is None:
            return
        now = container_layout(obj)
        if now != self.layout:
            raise ContainerChanged(f"{self.description} now holds {_layout_text(now)}, "
                                   f"not {_layout_text(self.layout)}")


def container_layout(obj):
    """What a replay compares of a container: a dict's keys in order (a tuple: the keys of
    the largest dicts a body reads are a few hundred, compared in C), a list's, tuple's or
    deque's length (an int); None for anything else. Subclasses alike (``OrderedDict``,
    ``defaultdict``, a ``list`` subclass): their items are not in the cache key."""
    if isinstance(obj, dict):
        return tuple(obj)
    if isinstance(obj, SEQUENCES):
        return len(obj)
    return None


def _layout_text(layout) -> str:
    if isinstance(layout, tuple):
        return f"the keys {list(layout)!r:.200}"
    return "something else" if layout is None else f"{layout} items"


def container_checks(paths, leaves) -> tuple:
    """A ``ContainerCheck`` for each container that the (source, steps, description) paths
    step into by an item, as it is now (after the trace), each container once."""
    checks: dict = {}
    for source, steps, description in paths:
        root = description.removesuffix(_steps_text(steps))   # ``global P``, ``self``
        try:
            obj = _root_value(source, leaves)
            for depth, (step, key) in enumerate(steps):
                if step == "view":
                    break
                layout = container_layout(obj) if step == "item" else None
                prefix = steps[:depth]
                if layout is not None and path_key(source, prefix) not in checks:
                    checks[path_key(source, prefix)] = ContainerCheck(
                        root + _steps_text(prefix), source, prefix, layout)
                obj = getattr(obj, key) if step == "attr" else obj[key]
        except Exception:  # noqa: BLE001 -- the body changed the path: nothing to check
            continue
    return tuple(checks.values())


def reach(source, steps, leaves):
    """What ``steps`` (("attr", name) / ("item", key)) lead to from ``source``, read again;
    None where the path fails."""
    try:
        obj = _root_value(source, leaves)
        for step, key in steps:
            obj = getattr(obj, key) if step == "attr" else obj[key]
    except Exception:  # noqa: BLE001 -- a capture's own read fails there too
        return None
    return obj


def _root_value(source, leaves):
    kind = source[0]
    if kind == "global":
        return source[1][source[2]]
    if kind == "cell":
        return source[1].cell_contents
    if kind == "leaf":
        return leaves[source[1]]
    return source[1]


def find_captures(array: np.ndarray, roots: Roots, leaves: list,
                  extra: Roots | None = None) -> list:
    """(source, steps, description) of every path reaching ``array`` (none: a constant).
    The first is the capture's; the body may have read it through any of them."""
    candidates = roots.candidates + (extra.candidates if extra else [])
    found = []
    for source, label in candidates:
        try:
            value = _root_value(source, leaves)
        except (KeyError, ValueError, AttributeError):  # an empty cell, a deleted global
            continue
        found += [found_path(source, label, steps) for steps in _search(value, array, MAX_DEPTH)]
        if isinstance(array.base, np.ndarray):
            geometry = _view_geometry(array, array.base)
            found += [found_path(source, label, (*steps, geometry)) for steps in
                      (_search(value, array.base, MAX_DEPTH) if geometry else ())]
    if not found and isinstance(array.base, np.ndarray):
        found = list(_views_of_some_capture(array, candidates, leaves))
    return found or _found_deeper(array, candidates, leaves)


def _found_deeper(array, candidates, leaves) -> list:
    """The first path to ``array`` more than ``MAX_DEPTH`` steps below a root
    (``net.blocks[0].attn.proj.w`` in a class whose arrays stay plain ones), each object
    looked into once; none (a constant) within ``OBJECT_DEPTH`` steps."""
    opened: set = set()
    for source, label in candidates:
        try:
            value = _root_value(source, leaves)
        except (KeyError, ValueError, AttributeError):
            continue
        steps = first_path(value, array, opened)
        if steps is not None:
            return [found_path(source, label, steps)]
    return []


def first_path(root, target, opened: set) -> tuple | None:
    """The steps of a shortest path from ``root`` to ``target`` (identity), breadth first,
    each object once, ``_WALK_LIMIT`` objects in all (with those other roots opened)."""
    for steps, _, children in breadth_first(root, opened, _WALK_LIMIT):
        for step, child in children:
            if child is target:
                return (*steps, step)
    return None


def _views_of_some_capture(array, candidates, leaves):
    """A view whose base no path reaches (``W[1]`` of ``W = np.arange(6.).reshape(2, 3)``:
    the base is the unnamed ``arange``; ``F.T[0]`` of a Fortran-ordered ``F``) found as a view
    of a reachable contiguous array that holds all of its elements."""
    for source, label in candidates:
        try:
            value = _root_value(source, leaves)
        except (KeyError, ValueError, AttributeError):
            continue
        for steps, candidate in _arrays(value, MAX_DEPTH):
            if candidate is not array and np.may_share_memory(candidate, array):
                geometry = _view_geometry(array, candidate)
                if geometry is not None:
                    yield found_path(source, label, (*steps, geometry))


def found_path(source, label, steps):
    kind = {"global": "global ", "cell": "closure "}.get(source[0], "")
    return source, steps, f"{kind}{label}{_steps_text(steps)}"
