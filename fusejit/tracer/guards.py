"""Guards, and Python scalars that remember where they came from.

A *guard* records a traced value that Python turned into a concrete Python value while
recording (``if x.sum() > 0``, ``while err > tol``, ``int(i)`` used as an index): the replay
evaluates the same conversion on the computed value and compares it with ``expected``; a
mismatch means the recorded path does not apply to this call.

Decisions (each pinned by a test in ``tests/tracer/test_guards.py``):

- ``bool(t)`` guards at once: ``bool`` cannot be subclassed, and only branches call it.
- ``float(t)`` must return an exact ``float`` (CPython converts a subclass returned by
  ``__float__``), so it guards, except when the caller's next bytecode instruction returns the
  value or formats it in an f-string that is only shown: a returned float becomes a ``pyfloat``
  output (the guard is dropped when that very object is in the result, else kept); a formatted
  one records nothing when the f-string goes to ``print``, logging or a ``write``, is discarded
  or returned (``_text_only_shown``), and is guarded when it is read as data (its text, a plain
  ``str``, cannot be followed: ``float(f"{float(t)}")`` froze ``t``).
- ``t.item()`` of a float array returns a :class:`TracedFloat` (``scalars.py``): a ``float``
  subclass holding a weak-f64 proxy of its value. Returning it, storing it in the result,
  formatting it (f-strings, ``%``, ``str``, ``print``, logging) records no guard (a returned
  string holding its text runs the signature eagerly: ``outputs._holds_formatted_text``).
  Arithmetic with Python numbers and Python-float arguments keeps tracing (Python-float
  semantics as weak f64 nodes; with a Python complex, Python's own on the guarded value); mixed
  with arrays it goes through NumPy (``__array_ufunc__``) with NEP 50 weak-scalar promotion.
  A comparison records the comparison node and guards its bool; ``bool()``,
  ``hash()``, ``round()``, ``math.floor``, ``int()`` and ``float()`` of it guard the value.
- ``int(t)``, ``__index__`` and ``.item()`` of integer, bool or complex arrays, and ``.tolist()``
  guard at once and return plain Python values. Ints are not given provenance on purpose: an
  ``int`` subclass is read directly by C code that takes sizes (``np.zeros(n)``,
  ``np.arange(n)``), which would freeze a data-dependent *shape* without any guard. So
  ``OutputLeaf.pyint`` marks only weak integer results that are still traced values.
- More than ``MAX_GUARDS`` guards in one trace turn the trace into an eager fallback: a long loop
  that branches on data every step would otherwise record one guard per step.

Limits: C code that reads a float subclass directly (``math.exp``, ``np.asarray``, ``np.array``
of a list, ``np.full``, ``np.float64(...)``, a Python complex's own operators: ``1j * v``) sees
a plain float: such a result is frozen.
"""
from __future__ import annotations

import dis
import functools
import math
import operator
from dataclasses import dataclass

import numpy as np

from ..ir import Loc
from .context import active
from .loc import current_loc, user_frames

MAX_GUARDS = 32
_INT64 = np.iinfo(np.int64)


@dataclass(frozen=True)
class Guard:
    output: int        # index into graph.outputs of the traced value the guard reads
    convert: object    # "bool" | "int" | "float" | "item" | "tolist" | "shape" | a TextRead
    expected: object   # the Python value observed while tracing (for "shape": the shape tuple)
    loc: Loc | None    # user source line; loc.code has the line's text


@dataclass(frozen=True)
class GuardRecord:
    """A guard while tracing: the Var it reads (an output index is assigned at the end).

    ``returned`` holds the float object ``float(t)`` gave when the caller's next instruction
    returns it: the guard is dropped if that object is in the result (it becomes an output)."""

    var: object
    convert: str
    expected: object
    loc: Loc | None
    returned: object = None


def add_guard(recorder, var, convert: str, expected) -> None:
    if recorder is None or recorder.fallback is not None:
        return
    recorder.guards.append(GuardRecord(var, convert, expected, current_loc()))
    check_count(recorder)


def check_count(recorder) -> None:
    if len(recorder.guards) > MAX_GUARDS:
        recorder.set_fallback(f"too many data-dependent branches ({len(recorder.guards)} "
                              f"guards, limit {MAX_GUARDS}): the body branches on traced "
                              f"values in a loop")


def live(tracer) -> bool:
    """Recording this tracer's trace (not after it ended, nor after a fallback)."""
    return active() is tracer.recorder and tracer.recorder.fallback is None


# -- conversions on Tracer ---------------------------------------------------------------------
def _noting_raises(convert):
    """A conversion that raises (``int(nan)``, ``bool`` of several elements) records no
    guard: the recorder notes the exception, in case the body catches it."""
    @functools.wraps(convert)
    def checked(tracer, *args):
        try:
            return convert(tracer, *args)
        except Exception as exc:
            if active() is tracer.recorder:
                tracer.recorder.note_raised(exc)
            raise
    return checked


@_noting_raises
def to_bool(tracer) -> bool:
    value = bool(tracer.value)
    if live(tracer):
        add_guard(tracer.recorder, tracer.ir_var, "bool", value)
    return value


def _scalar_var(tracer, dtype):
    """The tracer's single element as a 0-d weak value of ``dtype``."""
    rec, var = tracer.recorder, tracer.ir_var
    if var.type.shape != ():
        var = rec.emit("reshape", [var], {"shape": ()})
    if var.type.dtype != dtype or not var.type.weak:
        var = rec.emit("cast", [var], {"dtype": np.dtype(dtype)}, weak=True)
    return var


def _next_use() -> tuple[str, str]:
    """What the user's code does with the value being computed: "return" (the traced
    function returns it), "format" (with the f-string field's format spec) or "other" (read
    from the bytecode after the current call). A helper that returns the value hands it to
    its caller: the caller's next instruction decides (``s = rms(x)`` then ``x / s``: "other")."""
    frames = user_frames(2)
    for depth, frame in enumerate(frames):
        callee = "float" if depth == 0 else frames[depth - 1].f_code.co_name
        if _callee(frame) != callee:
            return "other", ""   # C code calling it (``sorted(map(float, xs))``) compares
        after = _following(frame)
        names = [i.opname for i in after]
        if names[:1] == ["RETURN_VALUE"]:
            if depth == len(frames) - 1:
                return "return", ""
            continue
        if names[:1] == ["FORMAT_VALUE"]:
            return ("format", "") if _text_only_shown(frame, after[0]) else ("other", "")
        if names == ["LOAD_CONST", "FORMAT_VALUE"] and isinstance(after[0].argval, str):
            return ("format", after[0].argval) if _text_only_shown(frame, after[1]) else \
                ("other", "")
        return "other", ""
    return "other", ""


# calls that only show text: print, logging, a stream's write
SHOWN_BY = frozenset({"print", "debug", "info", "warning", "warn", "error", "critical",
                      "exception", "log", "write"})


def _text_only_shown(frame, field) -> bool:
    """Whether the f-string that ``field`` (its FORMAT_VALUE) formats into is only shown:
    printed or logged, discarded or returned (a returned text runs the signature eagerly).
    Text read as data (``float(f"{float(t)}")``, ``s == "nan"``, stored for later) must not
    freeze the value: the value is guarded then."""
    return _text_use(frame, field)[1]


def _text_use(frame, field) -> tuple[bool, bool]:
    """(joined, shown): whether the text ``field`` (a FORMAT_VALUE) makes is joined into a
    larger string, and whether the string it ends in is only shown (``_text_only_shown``).
    Found by following it over the straight-line bytecode after ``field``: the instruction
    that consumes it decides."""
    instructions = list(dis.get_instructions(frame.f_code))
    at = next(i for i, ins in enumerate(instructions) if ins.offset == field.offset)
    depth, joined = 0, False   # items above the text on the stack
    for index in range(at, len(instructions)):
        ins = instructions[index]
        effect = _pops_pushes(ins)
        if effect is None:
            return joined, False
        pops, pushes = effect
        if index == at:
            continue    # the field itself makes the text
        if pops <= depth:
            depth += pushes - pops
            continue
        if ins.opname in ("FORMAT_VALUE", "BUILD_STRING"):
            depth, joined = 0, True   # joined into a larger string: follow that one
        elif ins.opname == "CALL":
            return joined, _callable_name(instructions, index) in SHOWN_BY
        else:
            return joined, ins.opname in ("POP_TOP", "RETURN_VALUE")
    return joined, False


def joined_and_read() -> bool:
    """Whether the f-string field the user's code is formatting now joins a larger string
    that the body reads as data (``table[f"id {i}"]``): that string is a plain ``str``, whose
    text would be frozen at trace time (``text.py``)."""
    frames = user_frames(1)
    if not frames:
        return False
    frame = frames[0]
    field = next((ins for ins in dis.get_instructions(frame.f_code)
                  if ins.offset == frame.f_lasti), None)
    if field is None or field.opname != "FORMAT_VALUE":
        return False
    joined, shown = _text_use(frame, field)
    return joined and not shown


def _pops_pushes(ins) -> tuple[int, int] | None:
    """Stack items a 3.11 instruction takes and leaves, for those f-string fields use; None
    for any other (a branch, a store: the text is not followed further)."""
    name, arg = ins.opname, ins.arg or 0
    if name in ("LOAD_CONST", "LOAD_FAST", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLOSURE",
                "PUSH_NULL"):
        return 0, 1
    if name == "LOAD_GLOBAL":
        return 0, 1 + (arg & 1)
    if name in ("CALL", "BUILD_STRING", "BUILD_TUPLE", "BUILD_LIST"):
        return arg + 2 * (name == "CALL"), 1   # a call also takes its callable and NULL/self
    if name == "FORMAT_VALUE":
        return 2 if arg & 0x04 else 1, 1        # the value, and a format spec if it has one
    return _FIXED_EFFECTS.get(name)


_FIXED_EFFECTS = {
    "LOAD_ATTR": (1, 1), "LOAD_METHOD": (1, 2), "PRECALL": (0, 0), "KW_NAMES": (0, 0),
    "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1), "BINARY_SUBSCR": (2, 1), "CONTAINS_OP": (2, 1),
    "IS_OP": (2, 1), "UNARY_NEGATIVE": (1, 1), "UNARY_NOT": (1, 1), "UNARY_INVERT": (1, 1),
    "POP_TOP": (1, 0), "RETURN_VALUE": (1, 0)}


LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_METHOD", "LOAD_ATTR")


def _callee(frame) -> str | None:
    """The name of what the call ``frame`` is making calls (``float`` for ``float(t)``,
    ``rms`` for ``rms(x)`` or ``self.rms(x)``), found walking back over the call's
    straight-line bytecode to the instruction that pushed the callable; None where it is not
    a name, or where the call's arguments branch (``float(a if c else b)``: guarded, the safe
    side). A value C code got on the body's behalf (``sorted(map(float, xs))``, ``min``,
    ``filter``), whose result then depends on comparisons, is not from such a call."""
    instructions = list(dis.get_instructions(frame.f_code))
    # f_lasti may point into the call's inline cache entries, which dis does not list
    at = next((i for i in range(len(instructions) - 1, -1, -1)
               if instructions[i].offset <= frame.f_lasti), None)
    return None if at is None else _callable_name(instructions, at)


def _callable_name(instructions, at: int) -> str | None:
    """The name of what the call at ``instructions[at]`` (its PRECALL or CALL) calls."""
    if instructions[at].opname == "CALL" and at and instructions[at - 1].opname == "PRECALL":
        at -= 1
    call = instructions[at]
    if call.opname not in ("PRECALL", "CALL") or call.arg is None:
        return None
    depth = 0
    for start in range(at - 1, -1, -1):
        ins = instructions[start]
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            return None
        depth += dis.stack_effect(ins.opcode, ins.arg)
        if depth > call.arg:
            break
    else:
        return None
    name = instructions[start].argval if instructions[start].opname in LOADS else None
    for ins in instructions[start + 1:at]:    # ``helpers.loss(x)``, ``builtins.float(t)``
        if ins.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
            break
        name = ins.argval
    return name


def _following(frame) -> list:
    """The two instructions after the call ``frame`` is in. A specialized 3.11 ``PRECALL``
    makes the call itself, so the ``CALL`` after it is skipped."""
    instructions = list(dis.get_instructions(frame.f_code))
    after = [i for i in instructions if i.offset > frame.f_lasti]
    current = [i.opname for i in instructions if i.offset == frame.f_lasti]
    if current == ["PRECALL"] and after[:1] and after[0].opname == "CALL":
        after = after[1:]
    return after[:2]


def python_float(recorder, var, value: float) -> float:
    """``float(t)``: CPython turns a float subclass returned by ``__float__`` into a plain float,
    so provenance cannot ride on the object. A value that goes straight into ``return`` or an
    f-string field needs no guard; anything else (a branch, math, storage) is guarded."""
    value = float(value)
    if recorder is None or active() is not recorder or recorder.fallback is not None:
        return value
    use, spec = _next_use()
    if use == "format":   # no guard; a returned string holding the text runs eagerly
        try:
            text = format(value, spec)
        except ValueError:    # a spec float refuses: Python raises it in the f-string itself
            return value
        recorder.formatted[id(text)] = (text, current_loc())
        return value
    returned = value if use == "return" else None
    recorder.guards.append(GuardRecord(var, "float", value, current_loc(), returned))
    check_count(recorder)
    return value


def _from_user_line(convert, tracer):
    """``convert(tracer.value)`` (``float``, ``int``); of a complex value, called from a frame
    that is the user's line, so that NumPy's ComplexWarning names that line, as eagerly."""
    frames = user_frames(2) if np.dtype(tracer.dtype).kind == "c" else None
    if not frames:
        return convert(tracer.value)
    from ..located import at_frame
    return at_frame(frames[0])(convert, (tracer.value,), {})


def _conversion(how: str, tracer):
    """``how`` ("float", "int"), or for a complex value its ``RealPart`` conversion."""
    if np.dtype(tracer.dtype).kind != "c":
        return how
    from .text import RealPart  # text.py builds on this module
    return RealPart(how)


@_noting_raises
def to_float(tracer) -> float:
    if not live(tracer) or np.dtype(tracer.dtype).kind == "c":
        value = _from_user_line(float, tracer)
        if live(tracer):
            add_guard(tracer.recorder, tracer.ir_var, _conversion("float", tracer), value)
        return value
    value = float(tracer.value)   # NumPy's TypeError for an array of another size than 1
    return python_float(tracer.recorder, _scalar_var(tracer, np.float64), value)


def guard_divisor(ufunc, divisor) -> None:
    """Python float arithmetic raises ZeroDivisionError where NumPy's gives inf or nan
    (``lr / d``, ``loss % d``): a traced divisor is guarded non-zero, so a call where it is
    zero traces again and raises Python's error."""
    from .scalars import TracedFloat
    from .tracer import Tracer
    if isinstance(divisor, TracedFloat) and divisor.live():   # ``lr / x[0].item()``
        divisor = divisor.tracer
    if ufunc in (np.true_divide, np.floor_divide, np.remainder) and \
            isinstance(divisor, Tracer) and live(divisor) and divisor.value != 0:
        add_guard(divisor.recorder, np.not_equal(divisor, 0).ir_var, "bool", True)


def python_divmod(a, b):
    """``divmod`` of Python floats, one of them traced: ``(a // b, a % b)``, its definition,
    each traced; a zero divisor raises Python's own error (``float divmod()``)."""
    from .scalars import TracedFloat
    from .tracer import Tracer
    plain = [x.value if isinstance(x, Tracer) else float.__float__(x)
             if isinstance(x, TracedFloat) else x for x in (a, b)]
    if plain[1] == 0:
        divmod(*plain)
    return a // b, a % b


def guard_power(ufunc, result, operands) -> None:
    """Python's float ``**`` raises (OverflowError, ZeroDivisionError) or returns a complex
    where NumPy's gives inf or nan (``10.0 ** lr``, ``0.0 ** -lr``, ``lr ** 0.5`` of a
    negative ``lr``): a finite traced power is guarded finite, so a call where it is not
    traces again and Python answers. A power that is already inf or nan (``nan ** 0.5``)
    guards its operands' values instead: no other call replays it."""
    from .tracer import Tracer
    if ufunc is not np.power or not isinstance(result, Tracer) or not live(result) or \
            type(result.value) is not float:
        return
    if math.isfinite(result.value):
        add_guard(result.recorder, np.isfinite(result).ir_var, "bool", True)
        return
    for operand in operands:
        if isinstance(operand, Tracer) and live(operand):
            add_guard(operand.recorder, operand.ir_var, "float", float(operand.value))


def complex_power(ufunc, base, exponent) -> bool:
    """Whether Python's ``base ** exponent`` of floats is a complex (a negative base, a
    fractional exponent): the caller computes it as Python does, from guarded values."""
    from .tracer import Tracer
    if ufunc is not np.power:
        return False
    base, exponent = (x.value if isinstance(x, Tracer) else x for x in (base, exponent))
    if isinstance(base, int):
        base = float(base)
    # float.__float__ reads a TracedFloat without guarding it
    return isinstance(exponent, float) and not float.is_integer(float.__float__(exponent)) \
        and isinstance(base, float) and float.__float__(base) < 0


def guarded_value(tracer) -> float:
    """A weak scalar's Python float, guarded: Python computes with it (``lr * 1j``)."""
    if live(tracer):
        add_guard(tracer.recorder, tracer.ir_var, "float", tracer.value)
    return tracer.value


@_noting_raises
def to_int(tracer) -> int:
    value = _from_user_line(int, tracer)
    if live(tracer):
        add_guard(tracer.recorder, tracer.ir_var, _conversion("int", tracer), value)
    return value


@_noting_raises
def to_round(tracer) -> int:
    from .text import RoundRead  # text.py builds on this module
    value = round(tracer.value)
    if live(tracer):
        add_guard(tracer.recorder, tracer.ir_var, RoundRead(), value)
    return value


@_noting_raises
def to_index(tracer) -> int:
    value = operator.index(tracer.value)
    if live(tracer):
        add_guard(tracer.recorder, tracer.ir_var, "int", value)
    return value


@_noting_raises
def to_item(tracer, *args):
    value = tracer.value
    item = value.item(*args) if hasattr(value, "item") else value
    if not live(tracer):
        return item
    if not args and type(item) is float:
        from .scalars import TracedFloat
        return TracedFloat.make(item, tracer.recorder, _scalar_var(tracer, np.float64))
    if args:  # the body goes on with the plain value; the signature runs eagerly
        tracer.recorder.set_fallback(".item() with an index on a traced value")
        return item
    add_guard(tracer.recorder, tracer.ir_var, "item", item)
    return item


@_noting_raises
def to_list(tracer):
    value = tracer.value
    result = value.tolist() if hasattr(value, "tolist") else value
    if live(tracer):
        add_guard(tracer.recorder, tracer.ir_var, "tolist", result)
    return result

