"""Where code uses a container as a whole, not one item of it by a constant key:
``for d in self.dims``, ``len(NAMES)``, ``name in self.skip``, ``self.cfg.items()``,
``self.sizes[i]``.

A trace reads a list, set, dict or deque of plain values that way once, and a replay would
answer for what it held then (one more item appended, a name dropped from a set). The reads
of plain values (``attribute_reads``, ``object_reads``, ``code_reads``) take such a container
whole (``pystate.Contents``, ``read_of``) where the code uses it so; where it subscripts it
by a constant (``self.cfg["eps"]``) or asks whether a constant key is in a dict (``"bias" in
self.params``), the item or the key alone is read, so a count kept beside it
(``self.state["steps"]``) makes no path trace again.

``uses(code)`` gives the places so used, by how the code names them: ``("attr", name)`` for
``obj.name``, ``("name", name)`` for a global or closure name, ``("item", key)`` for
``obj[key]`` with a constant key, ``("local", name)`` for a local name and ``("cell",
name)`` for one a nested function or comprehension reads; each with how it is
used (``_LEVELS``): its items ("whole": ``self.w[i]``, ``sum(...)`` of a list,
``d.items()``), a dict's keys alone ("keys": ``for k in d``, ``k in d``, ``d.keys()``,
``len(d)``, ``if d:``), handed on ("passed": an argument of a call, bound to a local name:
a dict so handed is read by the constant keys code subscripts, or as the local name it is
bound to in that code is read: ``cfg = self.cfg; cfg.items()``, ``_linked``; or as the
parameter of the function it is handed to is read: ``note_handed``), or asked for a
constant key ("in": a dict's key alone, ``code_reads``).
"""
from __future__ import annotations

import dataclasses
import dis
import inspect
import types
from collections import deque

from . import pystate
from .bytecode import LOADS, get_key, instructions_of, is_key, opname, subscript_of
from .loc import classify, in_stdlib, per_code

_CONTAINERS = (list, set, dict, deque)   # and their subclasses: ``pystate.contents`` decides
_NAMES = ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLASSDEREF")
_LEVELS = ("in", "passed", "keys", "whole")   # how much of it a use reads, least first
# methods of a list, set, dict or deque that read its keys, or all of it (mutators are state)
_KEY_METHODS = frozenset({"keys", "__iter__", "__contains__", "__len__"})
_READING = frozenset({"values", "items", "index", "count", "get", "setdefault",
                      "issubset", "issuperset", "isdisjoint", "union", "intersection",
                      "difference", "symmetric_difference", "__getitem__", "__eq__"})
_CALLS = ("PRECALL", "CALL")
_TESTS = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
          "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
          "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "UNARY_NOT")   # ``if self.hooks:``
_ITERATING = frozenset({"len", "sorted", "list", "tuple", "set", "frozenset", "enumerate",
                        "iter", "sum", "max", "min", "any", "all", "zip", "reversed"})
# what reads all of the value it is given (a comparison, arithmetic, ``*args``, unpacking)
_CONSUMING = frozenset({"COMPARE_OP", "BINARY_OP", "UNPACK_SEQUENCE", "UNPACK_EX",
                        "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE",
                        "CALL_FUNCTION_EX", "FORMAT_VALUE", "BINARY_SUBSCR"})


@per_code()
def uses(code) -> frozenset:
    """``(level, kind, name)`` for each place the code (and the code nested in it) uses
    whole, at the levels it uses it (module docstring)."""
    instructions = instructions_of(code)
    targets = {ins.offset: k for k, ins in enumerate(instructions)}
    found, links = set(), []
    for k in range(len(instructions)):
        place, after = _place(instructions, k)
        if place is None and instructions[k].opname == "LOAD_FAST":
            place, after = ("local", instructions[k].argval), k + 1
        level = None if place is None else _use(instructions, after, k)
        if level is not None and (place[0] != "local" or _dict_use(instructions, after, level)):
            found.add((level, *place))   # a local's: ``for k, v in cfg.items()``, ``cfg[k]``
        if instructions[k].opname == "LOAD_DEREF" and _dict_use(instructions, after, level):
            found.add((level, "cell", place[1]))   # a local of this code or the enclosing
        links += _links(instructions, targets, after, place, k) if place is not None else []
    for const in code.co_consts:   # a comprehension's, a closure's: its cells are ours, its
        if isinstance(const, types.CodeType):   # locals its own
            found |= {use for use in uses(const) if use[1] not in ("local", "elements")}
    return frozenset(_linked(found, links))


def _linked(found: set, links: list) -> set:
    """``found`` with the places bound to local names read as those names are (``c =
    cfg``, ``hp = self.hp or {}``), through any number of them."""
    while True:
        more = {(level, kind, *place) for (kind, *place), name in links
                for level in ("keys", "whole")
                if (level, "local", name) in found or (level, "cell", name) in found}
        if more <= found:
            return found
        found |= more


def _dict_use(instructions: list, j: int, level: str) -> bool:
    """A local name's use that reads a dict (its items: ``cfg.items()``, ``cfg[k]``; its keys:
    ``for k in cfg``, ``if cfg:``), not arithmetic or a comparison, which no dict takes
    part in (``x * lr``, of a float bound where a dict was before)."""
    return level in ("keys", "whole") and opname(instructions, j) not in (
        "BINARY_OP", "COMPARE_OP", "FORMAT_VALUE")


def of(codes, handed: dict | None = None) -> frozenset:
    """The whole uses of the user code among ``codes``, and ``("level", "object", id)`` for
    each dict ``handed`` to a parameter that code reads whole (``note_handed``)."""
    found = frozenset().union(*(uses(code) for code in codes or ()
                                if classify(code.co_filename) == "user"))
    return found | {(level, "object", key) for key, (_, level) in (handed or {}).items()}


def parameter_levels(code) -> tuple:
    """(name, level, of its items) of each parameter the code reads whole as a local name
    (``def total(cfg): return sum(cfg.values())``), or whose items it reads so (``def
    total(*ds): for d in ds: ...``); none for the code of Python's or a library's."""
    if classify(code.co_filename) != "user" or in_stdlib(code.co_filename):
        return ()
    found = uses(code)
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount +
                             bool(code.co_flags & inspect.CO_VARARGS) +
                             bool(code.co_flags & inspect.CO_VARKEYWORDS)]
    return tuple((name, level, kind == "elements") for name in names
                 for kind in ("local", "elements", "cell") for level in ("whole", "keys")
                 if (level, kind, name) in found)


def note_handed(frame, levels: tuple, handed: dict) -> None:
    """The dicts given to the parameters of ``frame`` (a call starting) that its code reads
    whole (``parameter_levels``): id -> (the dict, kept alive while its id is a key; the
    level)."""
    values = frame.f_locals
    for name, level, items in levels:
        value = values.get(name)
        held = (value.values() if isinstance(value, dict) else value
                if isinstance(value, (tuple, list)) else ()) if items else (value,)
        for item in held:
            if isinstance(item, dict) and handed.get(id(item), (None, "keys"))[1] != "whole":
                handed[id(item)] = (item, level)


def read_of(found: frozenset, kind: str, name, value) -> pystate.Contents | None:
    """What a read of ``value``, held at the place ``(kind, name)``, checks before each
    replay where code (``found``: its ``uses``) uses it whole: its ``pystate.Contents`` (a
    dict's keys alone where that is all the code reads of it); None where the code reads
    its items by key (or not at all), or it holds other than plain values."""
    level = _level(found, kind, name, value)
    if level is None:
        return None
    held = pystate.contents(value, keys_only=level == "keys")
    if held is None and type(value) in (list, deque):   # ``len(self.layers)``
        return pystate.Contents.length_of(value)
    return held


def held(found: frozenset, kind: str, name, value):
    """``read_of``'s ``pystate.Contents`` of ``value`` where the code uses it whole, else
    ``value`` itself (a plain value's read, a walk on into it)."""
    contents = read_of(found, kind, name, value)
    return value if contents is None else contents


def handed_level(found: frozenset, value) -> str | None:
    """How much of the dict ``value`` a function it was handed to reads (``of``)."""
    return next((level for level in ("whole", "keys")
                 if (level, "object", id(value)) in found), None)


def _level(found: frozenset, kind: str, name, value) -> str | None:
    """How much of ``value`` at ``(kind, name)`` the code reads: all of a list or set used
    any way; of a dict, its keys or all of it, where the code reads them (a dict handed on,
    or bound to a local name that is only subscripted by constant keys, is read by them)."""
    is_dict = isinstance(value, dict)
    levels = [level for level in _LEVELS if (level, kind, name) in found
              and not (is_dict and level in ("in", "passed"))]
    if is_dict and ("passed", kind, name) in found:   # handed to a function reading it
        levels += [level for level in ("keys", "whole") if (level, "object", id(value)) in found]
    if not levels or not isinstance(value, _CONTAINERS):
        return None
    return ("whole" if "whole" in levels else "keys") if is_dict else "whole"


_FLOWS = ("JUMP_FORWARD", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP")


def _links(instructions: list, targets: dict, j: int, place: tuple, start: int) -> list:
    """(the place, the local name) where the value loaded there (from ``start`` to ``j``) is
    bound to a local name: right after (``cfg = self.cfg``), at the end of an ``or`` or a
    conditional expression (``hp = self.hp or {}``), copied (``hp = dict(self.hp)``);
    (("elements", name), item name) where a local's items are (``for d in ds``, of
    ``*ds``)."""
    op = opname(instructions, j)
    if op in LOADS and instructions[j].argval == "copy" and \
            opname(instructions, j + 1) in _CALLS:   # ``hp = self.hp.copy()``
        j += 3 if opname(instructions, j + 2) == "CALL" else 2   # past the call
        op = opname(instructions, j)
    elif op in _CALLS and instructions[j].arg == 1 and _callee(instructions, start) == "dict":
        j += 2 if opname(instructions, j + 1) == "CALL" else 1   # ``hp = dict(self.hp)``
        op = opname(instructions, j)
    if op in _FLOWS:
        j = targets.get(instructions[j].argval, len(instructions))
        op = opname(instructions, j)
    names = _bound_names(instructions, j)   # ``c = cfg``, ``a = b = cfg``, ``c, n = cfg, 2``
    if names:
        return [(place, name) for name in names]
    if place[0] == "local" and op in _CALLS and j >= 2 and \
            instructions[j - 2].argval == "enumerate":
        j += 2 if opname(instructions, j + 1) == "CALL" else 1   # ``enumerate(ds)``: its
        return _elements(instructions, j, place, unpacked=True)   # items' second halves
    return _elements(instructions, j, place) if place[0] == "local" else []


def _elements(instructions: list, j: int, place: tuple, unpacked: bool = False) -> list:
    """((``elements``, the local), the item name) where ``instructions[j:]`` iterate the
    local just loaded: ``for d in ds``, ``for i, d in enumerate(ds)``."""
    start = j + 2 + 2 * unpacked
    if [opname(instructions, k) for k in range(j, start)] != \
            ["GET_ITER", "FOR_ITER", "UNPACK_SEQUENCE", "STORE_FAST"][:2 + 2 * unpacked] or \
            opname(instructions, start) != "STORE_FAST":
        return []
    if unpacked and instructions[j + 2].arg != 2:
        return []
    return [(("elements", place[1]), instructions[start].argval)]


_PUSHES = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME",
                     "LOAD_CLASSDEREF", "PUSH_NULL"})


def _bound_names(instructions: list, j: int) -> list:
    """The local names the value loaded just before ``instructions[j]`` is stored in, in
    the straight code of an assignment (a walrus, ``a = b = cfg``, ``c, n = cfg, 2``): the
    stack followed from there, True where it holds that value, until nothing does."""
    stack, names = [True], []
    for ins in instructions[j:j + 16]:
        op = ins.opname
        if op in ("STORE_FAST", "STORE_DEREF"):   # a cell: read in a comprehension, a closure
            names += [ins.argval] if stack.pop() else []
        elif op in ("COPY", "DUP_TOP") and (ins.arg or 1) <= len(stack):
            stack.append(stack[-(ins.arg or 1)])
        elif op in ("SWAP", "ROT_TWO") and (ins.arg or 2) <= len(stack):
            stack[-1], stack[-(ins.arg or 2)] = stack[-(ins.arg or 2)], stack[-1]
        elif op == "ROT_THREE" and len(stack) >= 3:   # Python 3.10's ``a, b, c = ...``
            stack[-3:] = [stack[-1], stack[-3], stack[-2]]
        elif op in _PUSHES:
            stack += [False] * dis.stack_effect(ins.opcode, ins.arg)
        elif op == "LOAD_ATTR" and not stack[-1]:   # ``c, n = cfg, self.n``
            pass
        else:
            return names
        if True not in stack:
            return names
    return names


def _place(instructions: list, k: int) -> tuple:
    """(the place, the index past it) where ``instructions[k]`` loads a value: an attribute,
    a global or closure name, an item by a constant key; (None, k) otherwise."""
    ins = instructions[k]
    if ins.opname == "LOAD_ATTR":
        return ("attr", ins.argval), k + 1
    if ins.opname in _NAMES:
        return ("name", ins.argval), k + 1
    if ins.opname == "LOAD_CONST" and is_key(ins.argval):
        subscript, after = subscript_of(instructions, k + 1)
        if subscript == "BINARY_SUBSCR":
            return ("item", ins.argval), after
    return None, k


def _use(instructions: list, j: int, start: int) -> str | None:
    """How much of the value loaded just before ``instructions[j]`` the code reads
    (``_LEVELS``), or None (an attribute or constant item of it, or nothing: it is
    returned)."""
    op = opname(instructions, j)
    if op in LOADS:   # ``self.cfg.items()``; ``self.cfg.get("k")`` reads that key alone
        name = instructions[j].argval
        if name == "get" and get_key(instructions, j + 1):
            return None
        return "keys" if name in _KEY_METHODS else "whole" if name in _READING else None
    if op == "LOAD_CONST" and is_key(instructions[j].argval) and \
            subscript_of(instructions, j + 1)[0] is not None:
        return None   # ``self.cfg["eps"]``, ``self.cfg["n"] += 1``
    if op in ("COPY", "DUP_TOP", "DUP_TOP_TWO", "STORE_ATTR", "DELETE_ATTR", None):
        return None
    if op == "RETURN_VALUE" or (op == "BUILD_TUPLE" and
                                opname(instructions, j + 1) == "RETURN_VALUE"):
        return None   # handed back, not read: ``returned_containers`` returns it as it is
    if op in _CALLS and instructions[j].arg == 1 and _callee(instructions, start) == "dict":
        copied = _use(instructions, j + 1 + (opname(instructions, j + 1) == "CALL"),
                      _callee_at(instructions, start))   # ``sum(dict(self.hp).values())``
        return "passed" if copied is None else copied
    if op == "CONTAINS_OP":
        return "in" if _tested_by_constant(instructions, start) else "keys"
    if op == "GET_ITER" or op in _TESTS or (op in _CALLS and
                                            _iterated_by_builtin(instructions, start)):
        return "keys"   # a dict's keys, a list's items: ``len(d)``, ``sorted(d)``, ``if d:``
    if op in _CONSUMING or (op in (*_NAMES, "LOAD_FAST") and
                            opname(instructions, j + 1) == "BINARY_SUBSCR"):
        return "whole"   # ``self.sizes[i]``
    return "passed"


def _iterated_by_builtin(instructions: list, k: int) -> bool:
    """The value loaded at ``instructions[k]`` is the one argument of a builtin that
    iterates it (``len(d)``)."""
    return _callee(instructions, k) in _ITERATING


def _callee(instructions: list, k: int) -> str | None:
    """The global name loaded just before the value loaded at ``instructions[k]`` (a name or
    a chain of attributes and constant subscripts below one): the function it is given to
    where a call follows (``len(d)``, ``dict(self.hp)``)."""
    at = _callee_at(instructions, k)
    return None if at is None else instructions[at].argval


def _callee_at(instructions: list, k: int) -> int | None:
    """The index of ``_callee``'s load."""
    while k > 0 and instructions[k].opname in ("LOAD_ATTR", "LOAD_CONST", "BINARY_SUBSCR"):
        k -= 1
    return k - 1 if k >= 1 and instructions[k - 1].opname == "LOAD_GLOBAL" else None


def _tested_by_constant(instructions: list, k: int) -> bool:
    """The value loaded at ``instructions[k]``, a name or an attribute chain below one, is
    what an ``in`` test looks for a constant key in (``"bias" in self.params``, ``"q" in
    FLAGS``: a dict's key alone is read, ``code_reads``); not below a subscript (``"q" in
    self.cfg["inner"]``: whole)."""
    while k > 0 and instructions[k].opname == "LOAD_ATTR":
        k -= 1
    return instructions[k].opname in (*_NAMES, "LOAD_FAST") and k >= 1 and \
        opname(instructions, k - 1) == "LOAD_CONST" and is_key(instructions[k - 1].argval)


def contents_of(pairs) -> dict:
    """name -> ``pystate.Contents`` of each list, set or dict of plain values among the
    ``(name, value)`` pairs (an object's attributes before the body ran)."""
    found = {}
    for name, value in pairs:
        held = pystate.contents(value) if isinstance(value, _CONTAINERS) else None
        if held is not None:
            found[name] = held
    return found


def changed(before: dict, now: dict, codes) -> tuple | None:
    """(name, what it held, what it holds) of the first attribute in ``before``
    (``contents_of``) that the body changed (an item appended, a name added to a set) and
    that ``codes`` use whole (``len(self.seen)``): a replay would neither change it nor see
    it changed, so it is state. One the body only appends to (a log) is not."""
    moved = [(name, held, now.get(name, pystate.ABSENT)) for name, held in before.items()
             if state(held, now.get(name, pystate.ABSENT))]
    if not moved:
        return None
    found = of(codes)
    return next(((name, held, value) for name, held, value in moved
                 if _level(found, "attr", name, value) is not None), None)


def state(before, now) -> bool:
    """``now`` is a list, set or dict of plain values other than ``before`` (its
    ``pystate.Contents``): one that holds an array since is a traced value stored into it,
    or a buffer made there, not a number changed (``capture_proxies``, ``side_effects``)."""
    return not before.matches(now) and pystate.contents(now) is not None


def watch_of(watch: pystate.Watch) -> pystate.Watch:
    """``watch`` reading a snapshot of the container it finds (``pystate.Contents``), which
    a check before each replay compares with the one the compiling trace left: the live
    container would be the same object, changed or not."""
    read = watch.read
    return dataclasses.replace(watch, read=lambda root: _snapshot_of(read(root)))


def _snapshot_of(value):
    held = pystate.contents(value)
    return value if held is None else held
