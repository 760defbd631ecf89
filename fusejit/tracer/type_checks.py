"""What a proxy cannot answer as its value would: ``type(x)``, ``hasattr`` of what only the
proxy's class has, and identity with ``np.True_``/``np.False_``.

``isinstance(x, np.ndarray)`` and ``x.__class__`` answer as eagerly (``Tracer.__class__``), but
Python's ``type(x)`` returns the proxy's own class, a float's proxy cannot hide ``__array__``
(NumPy's C code asks for it from the user's frame), and ``is`` compares identities; none of
them can be intercepted. Two layers keep the answers eager NumPy's:

- The traced copies of the body and of its module's functions (``overlay``) get builtins
  whose ``type`` (``TracedType``) and ``hasattr`` (``traced_hasattr``) answer for a proxy's
  value. What they answer depends only on what the signature keys, so branches on them
  replay right and the program stays compiled.
- Everything else the body runs is watched (``watched``): the code of each user frame entered
  is scanned once for Python's own ``type(...)`` (one argument), ``hasattr(name, "attr")``,
  and ``is`` next to ``np.True_``/``np.False_``. A frame that has one is followed line by
  line: just before a form's line runs, a form that would answer for a proxy makes the
  signature run eagerly, naming the line, and the frame's names (with the lists and dicts
  they hold, and the arrays of argument objects) get their values back, so that this call,
  too, takes eager NumPy's branch. A form on a value the line cannot see is found as the
  frame returns: later calls run eagerly. Python's own library and anything run under a
  debugger's or coverage tool's trace function are not watched.
"""
from __future__ import annotations

import builtins
import dis
import linecache
import sys
from contextlib import contextmanager

from ..ir import Loc
from . import code_reads, whole_uses
from .context import unwrap
from .loc import classify, in_stdlib, per_code
from .scalars import TracedFloat
from .tracer import Tracer

PROXIES = (Tracer, TracedFloat)

TYPE_OF = "type() of a traced value (isinstance(x, ...) or x.__class__ answer as eagerly)"
HASATTR = "hasattr(x, {attr!r}) of a traced value: its proxy has it, its value has not"
IDENTITY = "an identity test ('is') against np.True_/np.False_ where traced values are in scope"
_NAME_LOADS = frozenset({"LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME",
                         "LOAD_CLASSDEREF"})
_SKIP = frozenset({"PRECALL", "KW_NAMES", "CACHE", "PUSH_NULL"})
_CALLS = frozenset({"CALL", "CALL_FUNCTION"})   # CALL_FUNCTION: Python 3.10


class _TypeMeta(builtins.type):
    def __instancecheck__(cls, obj) -> bool:   # isinstance(C, type) as with the builtin
        return isinstance(obj, builtins.type)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, builtins.type)


class TracedType(builtins.type, metaclass=_TypeMeta):
    """``type`` in the builtins of traced code (``math_view.traced_builtins``): ``type(x)``
    of a proxy is its value's class, as eagerly. What it answers depends only on what the
    signature keys (an argument's kind, a dtype, a rank), so a branch on it replays right."""

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            return _value_class(args[0]) if isinstance(args[0], PROXIES) \
                else builtins.type(args[0])
        return builtins.type(*args, **kwargs)   # type(name, bases, namespace)


TracedType.__name__ = TracedType.__qualname__ = "type"


def traced_hasattr(obj, name: str) -> bool:
    """``hasattr`` in the builtins of traced code: a proxy's answer is its value's (a float's
    proxy must have ``__array__`` for NumPy's own code; this one says it has not)."""
    return hasattr(unwrap(obj) if isinstance(obj, PROXIES) else obj, name)


@contextmanager
def watched(recorder):
    """Looks at the user's frames while the body runs (see the module docstring). Python
    calls the trace function once per new frame; only frames whose code has one of the forms
    are followed, line by line (a form is checked just before its line runs) and to their
    return. A debugger's or coverage tool's trace function is left alone."""
    if sys.gettrace() is not None:
        yield
        return

    def within(frame, event, arg):
        if event == "line":
            here = _sites(frame.f_code)[1].get(frame.f_lineno)
            if here:
                _check(frame, here, recorder, True)
        elif event == "return":
            _check(frame, _sites(frame.f_code)[0], recorder, False)
        return within

    entered = recorder.entered = set()
    places = recorder.code_places = code_reads.Places(recorder.draws,
                                                           recorder.closure_cells)
    draws, foreign = recorder.draws, recorder.foreign_cells

    def entering(frame, event, arg):
        code = frame.f_code
        entered.add(code)   # the attributes it reads: ``attribute_reads``
        code_reads.entering(frame, places)   # the plain values it reads: ``code_reads``
        sites, _, levels = _sites(code)
        if levels:   # ``def total(cfg): return sum(cfg.values())``
            whole_uses.note_handed(frame, levels, places.handed)
        draws.frame_started(frame)   # fresh entropy: ``random_draws``
        foreign.entering(frame)   # ``nonlocal n; n += 1`` of a closure given as an argument
        return within if sites else None
    sys.settrace(entering)
    try:
        yield
    finally:
        sys.settrace(None)


@per_code()
def _sites(code) -> tuple[tuple, dict, tuple]:
    """The forms the code of a user frame has, each (kind, name or None, attr, line), them
    by line, and the parameters it reads whole (``whole_uses.parameter_levels``)."""
    sites = _scan(code)
    by_line: dict[int, list] = {}
    for site in sites:
        by_line.setdefault(site[3], []).append(site)
    return sites, by_line, whole_uses.parameter_levels(code)


def _scan(code) -> tuple:
    """(kind, name or None, attr, line) for each form the code of a user frame has. Python's
    own library is not the user's here: its ``type()`` dispatches (``copy.deepcopy``), and
    the proxies answer what it asks next (``__deepcopy__``)."""
    if classify(code.co_filename) != "user" or in_stdlib(code.co_filename) or not (
            {"type", "hasattr", "True_", "False_"} & set(code.co_names)):
        return ()
    instructions = [ins for ins in dis.get_instructions(code) if ins.opname not in _SKIP]
    found = []
    line = code.co_firstlineno
    for index, ins in enumerate(instructions):
        positions = getattr(ins, "positions", None)   # Python 3.11+; 3.10: starts_line
        line = (positions.lineno if positions is not None else ins.starts_line) or line
        site = _site(instructions, index, ins, line)
        if site is not None:
            found.append(site)
    return tuple(found)


def _site(instructions, index, ins, line):
    if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval in ("type", "hasattr"):
        call = _call_after(instructions, index)
        if ins.argval == "type" and call is not None and call[0] == 1:
            return ("type", call[1], None, line)   # name None: an expression's type
        if ins.argval == "hasattr" and call is not None and call[0] == 2 and call[2]:
            return ("hasattr", call[1], call[2], line)
    if ins.opname in ("LOAD_ATTR", "LOAD_GLOBAL") and ins.argval in ("True_", "False_") and any(
            near.opname == "IS_OP" for near in instructions[index + 1:index + 3]):
        return ("identity", None, None, line)
    return None


def _call_after(instructions, index, limit=40):
    """For the call of what ``instructions[index]`` loads: (argument count, the first
    argument's name where it is one plain name load, the second's constant string), or None
    where the call is not found in straight-line code."""
    depth = 0   # values pushed since the callable
    for ins in instructions[index + 1:index + 1 + limit]:
        if ins.opname in _CALLS and ins.arg == depth:
            args = instructions[index + 1:instructions.index(ins)]
            name = args[0].argval if len(args) == depth and args[0].opname in _NAME_LOADS \
                else None
            const = args[1].argval if len(args) == 2 == depth and \
                args[1].opname == "LOAD_CONST" and isinstance(args[1].argval, str) else None
            return depth, name, const
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return None
        depth += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT
                                  else None)
        if depth < 0:
            return None
    return None


def _check(frame, sites, recorder, before: bool) -> None:
    """Before a form's line runs: a form that would answer for a proxy sets the fallback and
    gives the frame's names (and the arrays of argument objects) their values, so that this
    call too takes eager NumPy's branch. As the frame returns: the fallback only, for a form
    on a value the line could not see (an item of a list of proxies)."""
    values = frame.f_locals
    reached = _reaches_proxies(values)
    for kind, name, attr, line in sites:
        reason = _reason(frame, values, kind, name, attr, reached)
        if reason is not None:
            code = frame.f_code
            text = linecache.getline(code.co_filename, line).strip()
            recorder.set_fallback(reason, Loc(code.co_filename, line, code.co_name, text))
            if before:   # from here on the body computes on values, as eagerly
                _concretize(values)
                if recorder.unswap is not None:
                    recorder.unswap()
            return


def _reason(frame, values, kind, name, attr, reached: bool) -> str | None:
    """Why the site would answer otherwise than eagerly; ``reached``: the frame holds proxies
    now (a form on an expression, or on a name not bound yet, may see one)."""
    if kind in ("type", "hasattr") and not _is_builtin(frame, kind):
        return None
    value = _value(frame, values, name)
    if kind == "hasattr":
        return HASATTR.format(attr=attr) if isinstance(value, PROXIES) and \
            hasattr(_value_class(value), attr) != _user_sees(value, attr) else None
    if kind == "type" and name is not None and (name in values or isinstance(value, PROXIES)):
        return TYPE_OF if isinstance(value, PROXIES) else None   # bound now: what it holds
    if reached:
        return TYPE_OF if kind == "type" else IDENTITY
    return None


def _value_class(proxy) -> type:
    """The class of the value a proxy stands for (an ``.item()`` value's: float)."""
    return float if isinstance(proxy, TracedFloat) else proxy.__class__


def _user_sees(proxy, attr: str) -> bool:
    """``hasattr(proxy, attr)`` as the user's code sees it (``proxy_kinds.HidesMissing``
    hides from it what the value's type lacks)."""
    return hasattr(type(proxy), attr) and attr not in getattr(type(proxy), "_hidden", ())


def _reaches_proxies(values) -> bool:
    """A proxy among the frame's names, or one step below one: an item of a list, tuple or
    dict it holds, an attribute of an object (a model's arrays are proxies while its method
    is traced)."""
    for value in values.values():
        if isinstance(value, PROXIES) or any(isinstance(v, PROXIES) for v in _below(value)):
            return True
    return False


def _below(value):
    if type(value) in (list, tuple):
        return value
    if type(value) is dict:
        return value.values()
    attributes = getattr(value, "__dict__", None)
    return attributes.values() if type(attributes) is dict else ()


def _concretize(values) -> None:
    """The frame's proxies replaced by their values, and those in the lists and dicts its
    names hold (the body's own, or the argument containers fusejit rebuilt around the
    proxies: the caller's get the same arrays back); a tuple of proxies is rebuilt. Names
    are written back into the frame's locals after the trace function returns (or through
    the frame's locals proxy)."""
    for name, value in list(values.items()):
        if isinstance(value, PROXIES):
            values[name] = unwrap(value)
        elif type(value) is list:
            value[:] = [unwrap(v) if isinstance(v, PROXIES) else v for v in value]
        elif type(value) is dict:
            value.update({k: unwrap(v) for k, v in value.items() if isinstance(v, PROXIES)})
        elif type(value) is tuple and any(isinstance(v, PROXIES) for v in value):
            values[name] = tuple(unwrap(v) if isinstance(v, PROXIES) else v for v in value)


def _value(frame, values, name):
    if name is None:
        return None
    if name in values:
        return values[name]
    return frame.f_globals.get(name)


def _is_builtin(frame, name: str) -> bool:
    """Whether ``name`` is Python's builtin in the frame (not ``TracedType``/``traced_hasattr``
    of a traced copy's builtins, which answer as eagerly, nor the user's own)."""
    found = frame.f_globals[name] if name in frame.f_globals else frame.f_builtins.get(name)
    return found is getattr(builtins, name)


