"""Plain values that code the body ran read outside its own module's globals: a helper of
another module (``x * FACTOR``), a method (``x * SCALE``), a module's or class's attribute
(``config.SCALE``, ``Cfg.K``), an attribute of an object or an item of a dict bound to a
global (``CFG.scale``, ``PARAMS["lr"]``).

The body's module is read through its overlay, which notes each global as it is read
(``plain_reads``). Other code runs as it is, so its reads are found from its bytecode instead:
each load of a global and the attribute loads and constant-key subscripts right after it,
and each store through one (``global N; N += 1``, ``config.SCALE = 3``, ``CNT.n += 1``).
``type_checks.watched`` calls ``entering`` the first time a code object runs with its globals
in a trace, before its first line: each such place that holds a plain value
(``pystate.is_plain``) in a user module, a user class, an object's ``__dict__`` or a dict is
noted with what it holds then. As the trace ends (``settle``):

- a place still holding its value is read again before each replay (a ``PlainRead``, or a
  ``ChainRead`` that walks the names from the global again); a replay that finds another
  value takes another path or traces one;
- a place whose value changed during the trace (``helpers.N += 1``) makes the signature run
  eagerly, as the body's own ``global N`` does: a replay would not change it.

A list, set or dict of plain values that the code uses whole (``for d in DIMS``,
``len(NAMES)``: ``whole_uses``) is such a place too, held as its ``pystate.Contents``.

A whole code object is looked at, its branches not taken too: a value that changes where no
traced path read it makes a path trace again. Code of Python's, of installed packages and of
NumPy, SciPy and fusejit is not looked at.
"""
from __future__ import annotations

import dataclasses
import dis
import os
import sys
import types
from dataclasses import dataclass

from ..logs import topic
from . import pystate, whole_uses
from .bytecode import (
    LOADS,
    STORES,
    call_after,
    get_key,
    instructions_of,
    is_key,
    opname,
    subscript_of,
)
from .loc import classify, in_stdlib, per_code
from .plain_reads import PlainRead, ReadAgain

log = topic("trace")

MAX_DEPTH = 4         # names in a chain: ``pkg.config.section.SCALE``
_SELF_NAMES = 13      # in a chain below ``self``: it, then ``captures.OBJECT_DEPTH`` steps
_NAMES = ("LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME")
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
_METHOD_BIT = sys.version_info >= (3, 12)   # LOAD_ATTR's low oparg bit: a method-style load


class Places:
    """What ``entering`` noted in one trace: place -> (its read, whether code loads it)."""

    def __init__(self, draws=None, cells=None):
        self.found: dict = {}
        self.draws = draws   # random_draws.Draws: the generators the code loads are watched
        self.seen: dict = {}   # (id(code), id(globals)) -> code: those looked at
        self.cells = {} if cells is None else cells   # id(code) -> Cells (None: two closures)
        self.handed: dict = {}   # dicts given to parameters read whole: whole_uses.note_handed
        self.pending: dict = {}   # place -> the read of a dict handed on (``settle``)


class Cells:
    """A function's closure cells by name, read as a module's globals are (``get``): the root
    of ``cfg["b"]`` for a closure ``cfg``, a cell the enclosing function may rebind."""

    def __init__(self, names: tuple, cells: tuple, direct: bool = False):
        self.cells = dict(zip(names, cells, strict=True))
        self.direct = direct   # a function run as it is: its cells' own values are read here

    def ids(self) -> list[int]:
        """The cells by identity (cells compare by their contents, arrays too)."""
        return [id(cell) for cell in self.cells.values()]

    def get(self, name: str, default=None):
        cell = self.cells.get(name)
        try:
            return default if cell is None else cell.cell_contents
        except ValueError:   # not bound yet, or deleted
            return default


def note_closure(found: dict, func, direct: bool = False) -> None:
    """``func``'s cells as the root of the chains its code loads from them (``direct``: and of
    the values the cells hold, for a function that runs as it is, not as a traced copy whose
    cells the overlay reads); none where two closures of one code object run in a trace
    (which one a frame reads is not known)."""
    cells = Cells(func.__code__.co_freevars, func.__closure__, direct)
    key = id(func.__code__)
    if key in found and (found[key] is None or found[key].ids() != cells.ids()):
        found[key] = None
    else:
        found[key] = cells


def entering(frame, places: Places) -> None:
    """Note what the places the code of ``frame`` reads or stores through hold now, the first
    time it runs with its globals (equal code objects of two modules compare equal). A place
    that cannot be read without running the user's code (a lazy object, ``__getattr__``) is
    left out, as before this look."""
    module_globals = frame.f_globals
    key = (id(frame.f_code), id(module_globals))
    if key in places.seen:
        return
    places.seen[key] = frame.f_code   # kept alive: its id stays its own
    chains = _chains(frame.f_code)
    if not chains:
        return
    real = getattr(module_globals, "real", None)   # an overlay: its globals are its own reads
    if real is not None:   # the body's module: its globals by name alone, as the overlay's
        module_globals, prefix = real, "global "
    else:
        name = module_globals.get("__name__")
        if isinstance(name, str) and name.startswith("namedtuple_"):
            return   # ``collections.namedtuple``'s ``__new__``, made by ``eval``: Python's
        prefix = f"global {name}." if isinstance(name, str) else "global "
    cells = places.cells.get(id(frame.f_code))
    found = whole_uses.uses(frame.f_code)
    for steps, stored, scope in chains:
        if scope == "cell":   # a copy's cell itself: the overlay's (``plain_reads``)
            if cells is not None and (len(steps) > 1 or cells.direct or
                                      _whole_name(cells, steps, found)):
                _noted(cells, steps, stored, places, "closure ", found)
            continue
        if places.draws is not None:   # ``RNG.normal(...)``, ``get_rng()``: ``random_draws``
            places.draws.watch_source(("global", module_globals, steps[0]), prefix + steps[0])
        if real is None or len(steps) > 1 or _whole_name(module_globals, steps, found):
            _noted(module_globals, steps, stored, places, prefix, found)


def _whole_name(root, steps: tuple, found: frozenset) -> bool:
    """A global or cell the code uses whole that holds a list, set or dict of plain values
    (``for d in DIMS``): the overlay reads only the plain values its names hold."""
    value = root.get(steps[0], pystate.ABSENT)
    handed = isinstance(value, dict) and ("passed", "name", steps[0]) in found
    return len(steps) == 1 and (handed or whole_uses.read_of(found, "name", steps[0], value)
                                is not None)


def _noted(root, steps: tuple, stored: bool, places: Places, prefix: str,
           found: frozenset = frozenset()) -> None:
    try:
        _note(root, steps, stored, places, prefix, found)
    except Exception:   # noqa: BLE001 -- the user's own code raised: not looked at
        log.debug("not read again: %s", steps, exc_info=True)


def settle(places: Places | None, recorder) -> dict:
    """The places to read again before each replay, by place; a changed one runs the signature
    eagerly (``recorder.state_changed``). A place only stored to that kept its value is not
    read again: no path read it. A list or set the code uses whole that the body changed
    (``SEEN.append(n)`` and ``len(SEEN)``) is such state too."""
    kept: dict = {}
    for key, (read, loaded) in (places.found if places is not None else {}).items():
        now = read.now()
        if pystate.changed(read.value, now) or (type(read.value) is pystate.Contents
                                                and whole_uses.state(read.value, now)):
            watch = pystate.Watch(read.label, lambda _root, read=read: read.now(), key)
            if type(read.value) is pystate.Contents:
                watch = whole_uses.watch_of(watch)
            recorder.state_changed(watch, read.value, now)
        elif loaded and (pystate.read_again(read.value) or read.value is pystate.ABSENT
                           or read.value is pystate.PRESENT) \
                and read.holds():   # ABSENT: ``CFG.get("wd", 0.0)`` found no item
            kept[key] = read
    return kept | (_handed_reads(places) if places is not None else {})


@dataclass(frozen=True, eq=False)
class ChainRead(ReadAgain):
    """A plain or named ``value`` the trace read at the end of ``steps`` from the module
    globals ``root`` (or a function's closure ``Cells``): the global's name, then ``(kind,
    name, cls)`` steps (``kind``: "module", "class", "object", "method", "item" or "index",
    a list's). Each replay walks them again, so an object rebound under its global name is
    read anew (``opts = Options(lr=0.1)`` before every call keeps the path), and an inherited
    class attribute shadowed later is found."""

    root: dict
    steps: tuple
    value: object
    label: str

    def now(self):
        try:
            obj = self.root.get(self.steps[0], pystate.ABSENT)
            for kind, name, cls in self.steps[1:]:
                obj = _step(obj, kind, name, cls)
            return obj
        except Exception:   # noqa: BLE001 -- the user's own code raised: not the same
            return pystate.ABSENT


def _step(obj, kind: str, name, cls):
    """``obj.name`` (``obj[name]`` for an item) as the code's load reads it, or ABSENT."""
    if kind == "item":
        return obj.get(name, pystate.ABSENT) if _plain_dict(obj) else pystate.ABSENT
    if kind == "index":
        return _index(obj, name) if type(obj) is list else pystate.ABSENT
    if kind == "module":
        return obj.__dict__.get(name, pystate.ABSENT) if isinstance(obj, types.ModuleType) \
            else pystate.ABSENT
    if kind == "class":
        return in_class(obj, name) if type(obj) is type else pystate.ABSENT
    if kind == "method":   # the function the call runs: the class's, or the object's own
        return pystate.method_of(obj, name) if type(obj) is cls else pystate.ABSENT
    kind, attrs = ("object", obj.__dict__) if type(obj) is cls else \
        _namespace(obj, "attr", name)   # another class: a property of that name, perhaps
    return attrs.get(name, pystate.ABSENT) if kind == "object" else pystate.ABSENT


def in_class(cls, name: str):
    """What the class (or the first base that has it) holds under ``name``, as its
    ``__dict__`` holds it: a staticmethod itself, not the function it hands out."""
    return next((vars(k)[name] for k in cls.__mro__ if name in vars(k)), pystate.ABSENT)


def items_as_attributes(obj) -> bool:
    """A dict subclass that answers attribute loads with its items (``class AttrDict(dict):
    __getattr__ = dict.__getitem__``, or ``dict.get``)."""
    return _plain_dict(obj) and type(obj) is not dict and \
        in_class(type(obj), "__getattr__") in (dict.__getitem__, dict.get)


def _plain_dict(obj) -> bool:
    """A dict, or a subclass reading its items as a dict does (``OrderedDict``,
    ``defaultdict``)."""
    return isinstance(obj, dict) and type(obj).get is dict.get and \
        type(obj).__getitem__ is dict.__getitem__


def _note(module_globals, steps: tuple, stored: bool, places: Places, prefix: str,
          found: frozenset = frozenset()) -> None:
    """Walk ``steps`` from the global through modules, classes, objects, dicts and lists,
    noting each place that holds a plain or named value (the last one even when absent, for a
    store), or a list, set or dict of them that the code uses whole (``found``); a plain
    value ends the walk."""
    walked, obj = [steps[0]], module_globals.get(steps[0], pystate.ABSENT)
    for depth in range(len(steps)):
        if depth:
            kind, name = steps[depth]
            kind, mapping = _namespace(obj, kind, name)
            if mapping is None:
                return
            walked.append((kind, name, type(obj)))
            obj = mapping.get(name, pystate.ABSENT)
        last = depth == len(steps) - 1
        place, held = ("name", steps[0]) if depth == 0 else steps[depth], obj
        if stored is not True and (last or steps[depth + 1][0] == "attr"):
            obj = whole_uses.held(found, *place, obj)
        if last and stored is False and isinstance(held, dict) and ("passed", *place) in found:
            _note_handed(module_globals, steps, walked, held, places, prefix)
        if last and stored == "in" and obj is not pystate.ABSENT:
            obj = pystate.PRESENT   # ``"q" in FLAGS``: whether it is there
        answers = depth and hasattr(type(mapping), "__missing__")   # a subscript does too
        if pystate.read_again(obj) or (obj is pystate.ABSENT and (stored is not False or
                                                                  answers) and last) \
                or obj is pystate.PRESENT:
            label = prefix + _label(steps[:depth + 1])
            read = PlainRead(("global", module_globals, steps[0]), obj, label) \
                if depth == 0 else ChainRead(module_globals, tuple(walked), obj, label)
            key = ("global", id(module_globals), *steps[:depth + 1],
                   *(("in",) if obj is pystate.PRESENT else ()))   # beside a value's read
            first, loaded = places.found.get(key, (read, False))
            places.found[key] = (first, loaded or stored == "in" or not (stored and last))
            #                                        None: a ``.get``; "in": an ``in`` test
        if obj is pystate.ABSENT or obj is pystate.PRESENT or pystate.is_plain(obj) or \
                type(obj) is pystate.Contents:
            return


def _note_handed(module_globals, steps: tuple, walked: list, obj: dict, places: Places,
                 prefix: str) -> None:
    """A dict of plain values handed to a function (``total(CFG)``), which ``settle`` reads
    whole if a function it was handed to reads it whole (``Places.handed``), as it holds
    now, before that code runs."""
    held = pystate.contents(obj)
    if held is not None:
        label = prefix + _label(steps)
        places.pending[("global", id(module_globals), *steps)] = \
            PlainRead(("global", module_globals, steps[0]), held, label) if len(steps) == 1 \
            else ChainRead(module_globals, tuple(walked), held, label)


def _handed_reads(places: Places) -> dict:
    """The pending reads of dicts handed on (``_note_handed``) that a function reads whole,
    as much of them as it reads."""
    found, kept = whole_uses.of((), places.handed), {}
    for key, read in places.pending.items():
        level = whole_uses.handed_level(found, read.now())
        noted = places.found.get(key, (None,))[0]   # as the body itself reads it: ``len(G)``
        if level is None or (noted is not None and not (
                level == "whole" and type(noted.value) is pystate.Contents
                and noted.value.keys_only)):
            continue
        if level == "keys":
            read = dataclasses.replace(read, value=read.value.keys_view())
        if read.holds():
            kept[key] = read
    return kept


def _label(steps: tuple) -> str:
    """``config.SCALE``, ``PARAMS['lr']``: the steps as the code writes them."""
    text = []
    for step in steps:
        text.append(step if isinstance(step, str) else
                    f".{step[1]}" if step[0] == "attr" else f"[{step[1]!r}]")
    return "".join(text)


def _namespace(holder, kind: str, name) -> tuple:
    """(kind, mapping): the mapping an attribute load of ``name`` from ``holder`` reads (a
    user module's, class's or object's ``__dict__``, or the method an object's class
    holds), or ``holder[name]`` (a dict, a list); (None, None) where it reads elsewhere (a
    property, a library's object, a dict subclass with its own ``__getitem__``)."""
    if kind == "item":
        if type(holder) is list and type(name) is int:   # ``SIZES[0]``
            return "index", {name: _index(holder, name)}
        return ("item", holder) if _plain_dict(holder) else (None, None)
    if items_as_attributes(holder) and name not in vars(holder):   # ``CFG.lr`` of an
        return "item", holder                                      # ``AttrDict``
    if isinstance(holder, types.ModuleType):
        return ("module", holder.__dict__) if _users(holder) else (None, None)
    if isinstance(holder, type):
        if type(holder) is not type:   # a metaclass may answer otherwise (an Enum's members)
            return None, None
        for base in holder.__mro__:
            if name in base.__dict__:
                return ("class", base.__dict__) if users_class(base) \
                    else (None, None)
        return None, None
    cls = type(holder)
    if not (cls is types.SimpleNamespace or users_class(cls)
            or getattr(cls, "holds_attributes", False)):   # ``f.scale`` of a compiled ``f``
        return None, None
    if cls is not types.SimpleNamespace and \
            type.__getattribute__(cls, "__getattribute__") is not object.__getattribute__:
        return None, None   # its own attribute lookup
    for base in cls.__mro__:   # a property or slot of that name reads elsewhere
        found = base.__dict__.get(name, pystate.ABSENT)
        if found is not pystate.ABSENT:
            if hasattr(type(found), "__set__") or hasattr(type(found), "__delete__"):
                return None, None
            break
    try:
        attrs = object.__getattribute__(holder, "__dict__")
    except AttributeError:   # slots only
        return None, None
    if type(attrs) is not dict:
        return None, None
    if name not in attrs and isinstance(found, (types.FunctionType, staticmethod, classmethod)):
        return "method", {name: pystate.method_of(holder, name)}   # ``MODEL.forward(x)``
    return "object", attrs


def _index(items: list, k: int):
    return items[k] if -len(items) <= k < len(items) else pystate.ABSENT


def _users(module) -> bool:
    """A module of the user's: not Python's, NumPy's or fusejit's (one made at run time, or
    ``__main__`` of ``python -c``, counts)."""
    if not isinstance(module, types.ModuleType) or module.__name__ in sys.builtin_module_names:
        return False
    file = module.__dict__.get("__file__")   # not ``getattr``: a module's own __getattr__
    return file is None or _users_file(file)


def users_class(cls: type) -> bool:
    """A class of a user module, or of code run without a module in ``sys.modules``
    (``runpy.run_path``, ``exec`` into a namespace): a library's classes are imported."""
    module = sys.modules.get(cls.__module__)
    return _users(module) if module is not None else cls.__module__ != "builtins"


def _users_file(file: str) -> bool:
    """Not Python's (``<frozen importlib._bootstrap>`` too), nor an installed package's (the
    libraries in site-packages keep their own state), nor NumPy's, SciPy's or fusejit's."""
    return classify(file) == "user" and not in_stdlib(file) and not file.startswith(
        "<frozen") and not any(part in file for part in _INSTALLED)


@per_code()
def _chains(code) -> tuple:
    """The chains of names the code loads from or stores through, each (names, stored, scope:
    "global" or "cell", a closure's)."""
    if not _users_file(code.co_filename):
        return ()
    return _scan([ins for ins in dis.get_instructions(code)   # EXTENDED_ARG: in the next
                  if ins.opname != "EXTENDED_ARG"])


def _scan(instructions: list) -> tuple:
    found = set()
    for k, ins in enumerate(instructions):
        if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            found.add(((ins.argval,), True, "global"))
        if ins.opname in ("LOAD_GLOBAL", "LOAD_DEREF"):
            scope = "global" if ins.opname == "LOAD_GLOBAL" else "cell"
            found.update((*chain, scope) for chain in _chain(instructions, k))
    return tuple(sorted(found, key=repr))


def _chain(instructions: list, k: int, ends: list | None = None,
           limit: int = MAX_DEPTH) -> list:
    """The chains from the global ``instructions[k]`` loads: attribute loads and subscripts by
    a constant after it (``config.SCALE``, ``PARAMS["lr"]``), also as an augmented assignment
    reads them (``CNT.n += 1``, ``PARAMS["steps"] += 1``), and a store through them.
    ``ends`` gets the index of the first instruction past the chain; ``limit``: names in
    it at most."""
    steps, found, start = [instructions[k].argval], [], k
    k += 1
    while k < len(instructions) and len(steps) < limit:
        ins = instructions[k]
        if ins.opname in STORES:
            found.append(((*steps, ("attr", ins.argval)), True))
        if (ins.opname == "DUP_TOP" or ins.opname == "COPY" and ins.arg == 1) and \
                opname(instructions, k + 1) in LOADS:
            k += 1   # ``CNT.n += 1``: the object again, for the store after
            continue
        optional = ("attr", ins.argval) if _getattr_name(instructions, start, k) else \
            ("item", instructions[k + 1].argval) if get_key(instructions, k + 1) else None
        if optional is not None:   # ``getattr(CFG, "eps", 0.0)``, ``CFG.get("lr", 0.1)``
            found.append(((*steps, optional), None))   # None: read where missing too
            if ends is not None:
                ends.append(k + 1)
            return found
        if ins.opname == "LOAD_CONST" and is_key(ins.argval):
            subscript, after = subscript_of(instructions, k + 1)
            if subscript is None:
                break
            step = ("item", ins.argval)
            found.append(((*steps, step), subscript != "BINARY_SUBSCR"))
            if subscript != "BINARY_SUBSCR":
                break
            steps.append(step)
            k = after
            continue
        if ins.opname not in LOADS:
            break
        steps.append(("attr", ins.argval))
        if ins.opname == "LOAD_METHOD" or (_METHOD_BIT and ins.arg & 1):
            break
        k += 1
    if opname(instructions, k) == "CONTAINS_OP" and _contained_key(instructions, start - 1):
        found.append(((*steps, ("item", instructions[start - 1].argval)), "in"))   # ``"q" in D``
    found.append((tuple(steps), False))
    if ends is not None:
        ends.append(k + 1 if k < len(instructions) and instructions[k].opname in LOADS else k)
    return found


@per_code()
def self_reads(code) -> tuple:
    """(self paths, loose names): the paths a method reads below its first argument
    (``self.t``, ``self.layers[3].s``: ``(("attr", "layers"), ("item", 3), ("attr", "s"))``,
    as ``pystate.walk`` takes them), and the attribute names it loads otherwise (``layer.s``
    of a loop variable, ``self.get().k``), which may be any object's. Nested code (a
    comprehension, a lambda) adds its loose names."""
    instructions = instructions_of(code)
    own = code.co_varnames[0] if code.co_argcount else None
    paths, taken = set(), set()
    for k, ins in enumerate(instructions):
        if ins.opname == "LOAD_FAST" and ins.argval == own and own is not None:
            ends: list = []
            for steps, stored in _chain(instructions, k, ends, _SELF_NAMES):
                if stored == "in":   # ``"bias" in self.params``: whether it is there
                    steps = (*steps[:-1], ("contains", steps[-1][1]))
                paths.add(tuple(steps[1:]))
            taken.update(range(k, ends[0]))   # the loads the chain went through
    loose = {ins.argval for k, ins in enumerate(instructions)
             if ins.opname in LOADS and k not in taken}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            nested_paths, nested_loose = self_reads(const)
            loose |= nested_loose | {path[0][1] for path in nested_paths if path[0][0] == "attr"}
    return frozenset(path for path in paths if path), frozenset(loose)


@per_code()
def constant_keys(code) -> frozenset:
    """The str and int constants the code (and the code nested in it) subscripts by
    (``self.cfg["eps"]``, ``sizes[0]``, ``d["n"] += 1``)."""
    instructions = instructions_of(code)
    keys = {ins.argval for k, ins in enumerate(instructions)
            if ins.opname == "LOAD_CONST" and is_key(ins.argval)
            and (subscript_of(instructions, k + 1)[0] is not None or get_key(instructions, k))}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            keys |= constant_keys(const)
    return frozenset(keys)


_ATTRIBUTE_CALLS = {"getattr": 1, "hasattr": 0}   # builtins reading an attribute by name,
#                                                  and the defaults they take


def _contained_key(instructions: list, k: int) -> bool:
    """``instructions[k]`` loads a constant key that an ``in`` test looks for in a name or
    an attribute chain below one (``"bias" in self.params``, ``"q" in D``)."""
    if opname(instructions, k) != "LOAD_CONST" or not is_key(instructions[k].argval) or \
            opname(instructions, k + 1) not in _NAMES:
        return False
    j = k + 2
    while opname(instructions, j) == "LOAD_ATTR":
        j += 1
    return opname(instructions, j) == "CONTAINS_OP"


def _getattr_name(instructions: list, start: int, k: int) -> str | None:
    """The constant name where the chain loaded from ``start`` is the object of a
    ``getattr(obj, "name"[, default])`` call and ``instructions[k]`` loads that name."""
    if start < 1 or opname(instructions, k) != "LOAD_CONST" or \
            type(instructions[k].argval) is not str:
        return None
    callee = instructions[start - 1]
    if callee.opname != "LOAD_GLOBAL" or callee.argval not in _ATTRIBUTE_CALLS or \
            not call_after(instructions, k + 1, 2, _ATTRIBUTE_CALLS[callee.argval]):
        return None
    return instructions[k].argval


@per_code()
def get_keys(code) -> frozenset:
    """The constant keys the code (and the code nested in it) gives a ``.get`` call
    (``self.cfg.get("wd", 0.0)``) or looks for with ``in`` (``"bias" in self.params``): an
    item read where it is missing too."""
    instructions = instructions_of(code)
    keys = {ins.argval for k, ins in enumerate(instructions)
            if get_key(instructions, k) or _contained_key(instructions, k)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            keys |= get_keys(const)
    return frozenset(keys)


@per_code()
def contained_keys(code) -> frozenset:
    """The constant keys the code (and the code nested in it) looks for with ``in`` (``"bias"
    in self.params``): whether each is there is read again, not what it holds."""
    instructions = instructions_of(code)
    keys = {ins.argval for k, ins in enumerate(instructions) if _contained_key(instructions, k)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            keys |= contained_keys(const)
    return frozenset(keys)


@per_code()
def getattr_names(code) -> frozenset:
    """The constant names the code (and the code nested in it) gives ``getattr`` or
    ``hasattr`` of an object, or of an attribute chain below one (``getattr(self, "k",
    1.0)``, ``hasattr(self, "bias")``)."""
    instructions = instructions_of(code)
    names = set()
    for g, ins in enumerate(instructions[:-2]):
        if ins.opname == "LOAD_GLOBAL" and ins.argval in _ATTRIBUTE_CALLS:
            k = g + 2
            while opname(instructions, k) in LOADS or (   # ``getattr(pair[0], "k", 1.0)``
                    opname(instructions, k) == "LOAD_CONST" and is_key(instructions[k].argval)
                    and opname(instructions, k + 1) == "BINARY_SUBSCR"):
                k += 1 if opname(instructions, k) in LOADS else 2
            names.add(_getattr_name(instructions, g + 1, k))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= getattr_names(const)
    return frozenset(names - {None})
