"""Plain values that code the body ran read outside its own module's globals: a helper of
another module (``x * FACTOR``), a method (``x * SCALE``), a module's or class's attribute
(``config.SCALE``, ``Cfg.K``), an attribute of an object bound to a global (``CFG.scale``).

The body's module is read through its overlay, which notes each global as it is read
(``plain_reads``). Other code runs as it is, so its reads are found from its bytecode instead:
each load of a global and the attribute loads right after it (``config.SCALE``), and each store
through one (``global N; N += 1``, ``config.SCALE = 3``). ``type_checks.watched`` calls
``entering`` the first time a code object runs in a trace, before its first line: each such
place that holds a plain value (``pystate.is_plain``) in a user module's, a user class's or an
object's ``__dict__`` is noted with what it holds then. As the trace ends (``settle``):

- a place that still holds its value is read again before each replay (a ``PlainRead``); a
  replay that finds another value takes another path or traces one;
- a place whose value changed during the trace (``helpers.N += 1``) makes the signature run
  eagerly, as the body's own ``global N`` does: a replay would not change it.

A whole code object is looked at, its branches not taken too: a value that changes where no
traced path read it makes a path trace again, never a wrong answer.
"""
from __future__ import annotations

import dis
import sys
import types

from . import pystate
from .loc import classify, in_stdlib
from .plain_reads import HolderRead, PlainRead

MAX_DEPTH = 4         # names in a chain: ``pkg.config.section.SCALE``
MAX_SCANNED = 8192    # code objects whose chains are kept
_LOADS = ("LOAD_ATTR", "LOAD_METHOD")
_STORES = ("STORE_ATTR", "DELETE_ATTR")
_SUBSCRIPTS = ("BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR")
_METHOD_BIT = sys.version_info >= (3, 12)   # LOAD_ATTR's low oparg bit: a method-style load


def entering(frame, places: dict) -> None:
    """Note what the places the code of ``frame`` reads or stores through hold now."""
    chains = _chains(frame.f_code)
    if not chains:
        return
    module_globals = frame.f_globals
    real = getattr(module_globals, "real", None)   # an overlay: its globals are its own reads
    for names, stored in chains:
        if real is not None and len(names) == 1:
            continue
        if real is not None:   # the body's module: its globals by name alone, as the overlay's
            _note(real, names, stored, places, "global ")
        else:
            _note(module_globals, names, stored, places,
                  f"global {module_globals.get('__name__', '?')}.")


def settle(places: dict, recorder) -> dict:
    """The places to read again before each replay, by place; a changed one runs the signature
    eagerly (``recorder.state_changed``)."""
    kept = {}
    for key, (source, was, label, holder) in places.items():
        now = pystate.source_root(source)
        if holder and now is not was or not holder and pystate.changed(was, now):
            recorder.state_changed(pystate.in_source(label, source, ()), was, now)
        elif holder:
            kept[key] = HolderRead(source, was, label)
        elif pystate.is_plain(was) and (now is was or pystate.same(was, now)):
            kept[key] = PlainRead(source, was, label)
    return kept


def _note(module_globals, steps: tuple, stored: bool, places: dict, prefix: str) -> None:
    """Walk ``steps`` from the global through modules, classes, objects and dicts, noting each
    place that holds a plain value (the last one even when absent, for a store), and the
    objects on the way to it, which must stay the same ones."""
    owner, mapping, on_the_way = module_globals, module_globals, []
    for depth, step in enumerate(steps):
        name = step
        if depth:
            kind, name = step
            owner, mapping = _namespace(on_the_way[-1][1][1], kind, name)
            if mapping is None:
                return
        value = mapping.get(name, pystate.ABSENT)
        label = _label(steps[:depth + 1]) if depth else prefix + name
        place = (("global", id(owner), name), (("global", mapping, name), value, label))
        if pystate.is_plain(value) or (value is pystate.ABSENT and stored and
                                       depth == len(steps) - 1):
            for key, entry in on_the_way:
                places.setdefault(key, (*entry, True))
            places.setdefault(place[0], (*place[1], False))
        if value is pystate.ABSENT or pystate.is_plain(value):
            return
        on_the_way.append(place)


def _label(steps: tuple) -> str:
    """``config.SCALE``, ``PARAMS['lr']``: the steps as the code writes them."""
    text = []
    for step in steps:
        text.append(step if isinstance(step, str) else
                    f".{step[1]}" if step[0] == "attr" else f"[{step[1]!r}]")
    return "".join(text)


def _namespace(holder, kind: str, name) -> tuple:
    """(whose, mapping): the mapping an attribute load of ``name`` from ``holder`` reads (a
    user module's, class's or object's ``__dict__``), or ``holder[name]`` (a dict); (None,
    None) where it reads elsewhere (a property, a library's object, a dict subclass)."""
    if kind == "item":
        return (holder, holder) if type(holder) is dict else (None, None)
    if isinstance(holder, types.ModuleType):
        return (holder.__dict__, holder.__dict__) if _users(holder) else (None, None)
    if isinstance(holder, type):
        if type(holder) is not type:   # a metaclass may answer otherwise (an Enum's members)
            return None, None
        for base in holder.__mro__:
            if name in base.__dict__:
                return (base, base.__dict__) if _users(sys.modules.get(base.__module__)) \
                    else (None, None)
        return None, None
    cls = type(holder)
    if not (cls is types.SimpleNamespace or _users(sys.modules.get(cls.__module__))):
        return None, None
    for base in cls.__mro__:   # a property or slot of that name reads elsewhere
        found = base.__dict__.get(name, pystate.ABSENT)
        if found is not pystate.ABSENT:
            if hasattr(type(found), "__set__") or hasattr(type(found), "__delete__"):
                return None, None
            break
    attrs = getattr(holder, "__dict__", None)
    return (attrs, attrs) if type(attrs) is dict else (None, None)


def _users(module) -> bool:
    """A module of the user's: not Python's, NumPy's or fusejit's (one made at run time, or
    ``__main__`` of ``python -c``, counts)."""
    if module is None or module.__name__ in sys.builtin_module_names:
        return False
    file = getattr(module, "__file__", None)
    return file is None or (classify(file) == "user" and not in_stdlib(file))


_SCANNED: dict[int, tuple] = {}   # id(code) -> (code, its chains)


def _chains(code) -> tuple:
    """The chains of names the code loads from or stores through, each (names, stored)."""
    entry = _SCANNED.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    if len(_SCANNED) >= MAX_SCANNED:
        _SCANNED.clear()
    file = code.co_filename   # ``<frozen importlib._bootstrap>``: Python's too
    user = classify(file) == "user" and not in_stdlib(file) and not file.startswith("<frozen")
    chains = _scan(list(dis.get_instructions(code))) if user else ()
    _SCANNED[id(code)] = (code, chains)
    return chains


def _scan(instructions: list) -> tuple:
    found = set()
    for k, ins in enumerate(instructions):
        if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            found.add(((ins.argval,), True))
        if ins.opname == "LOAD_GLOBAL":
            found.update(_chain(instructions, k))
    return tuple(sorted(found, key=repr))


def _chain(instructions: list, k: int) -> list:
    """The chains from the global ``instructions[k]`` loads: attribute loads and subscripts by
    a constant after it (``config.SCALE``, ``PARAMS["lr"]``), and a store through them."""
    steps, found = [instructions[k].argval], []
    k += 1
    while k < len(instructions) and len(steps) < MAX_DEPTH:
        ins = instructions[k]
        following = instructions[k + 1].opname if k + 1 < len(instructions) else None
        if ins.opname in _STORES:
            found.append(((*steps, ("attr", ins.argval)), True))
        elif ins.opname == "LOAD_CONST" and following in _SUBSCRIPTS and \
                type(ins.argval) in (str, int):
            step = ("item", ins.argval)
            if following != "BINARY_SUBSCR":
                found.append(((*steps, step), True))
                break
            steps.append(step)
            k += 2
            continue
        if ins.opname not in _LOADS:
            break
        steps.append(("attr", ins.argval))
        if ins.opname == "LOAD_METHOD" or (_METHOD_BIT and ins.arg & 1):
            break
        k += 1
    found.append((tuple(steps), False))
    return found
