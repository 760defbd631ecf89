"""``TracedFloat``: the Python float that ``float(t)`` / ``t.item()`` return while tracing.

It is a real ``float`` (so formatting, ``isinstance`` and ``json`` work and record nothing) that
also holds ``tracer``, a weak-f64 proxy of the same value. See ``guards.py`` for the policy.
"""
from __future__ import annotations

import operator

import numpy as np

from .context import active, surface
from .guards import (
    add_guard,
    complex_power,
    guard_divisor,
    guard_power,
    joined_and_read,
    python_divmod,
)
from .proxy_kinds import HidesMissing, hidden_names
from .text import TextSource, TracedText
from .tracer import Tracer, remember_text


def lift(x):
    """A TracedFloat's proxy; anything else unchanged."""
    return x.tracer if isinstance(x, TracedFloat) and x.live() else x


def lift_all(items):
    return tuple(lift(x) for x in items)


def lower(result):
    """A proxy holding a Python float becomes a TracedFloat again."""
    if isinstance(result, Tracer) and type(result.value) is float:
        return TracedFloat.make(result.value, result.recorder, result.ir_var)
    return result


def _is_py_number(x) -> bool:
    return type(x) in (int, float, bool) or isinstance(x, TracedFloat)


def _record_python_op(py_op, ufunc, a, b, weak=True):
    from .ufuncs import record_ufunc
    a, b = lift(a), lift(b)
    guard_divisor(ufunc, b)
    record = lambda rec, concrete, *xs: record_ufunc(rec, concrete, ufunc, xs, weak=weak)
    result = surface(py_op, record, (a, b), {})
    guard_power(ufunc, result, (a, b))
    return result


def _plain(x):
    return float.__float__(x) if isinstance(x, TracedFloat) else x


def _arith(py_op, ufunc):
    def apply(a, b):
        numbers = _is_py_number(a) and _is_py_number(b)
        if type(a) is complex or type(b) is complex or numbers and complex_power(ufunc, a, b):
            # Python computes it from the exact value
            return py_op(*(x._guard() if isinstance(x, TracedFloat) else x for x in (a, b)))
        if not numbers:
            return NotImplemented
        a, b = (int(x) if type(x) is bool else x for x in (a, b))
        if not any(isinstance(x, TracedFloat) and x.live() for x in (a, b)):
            return py_op(_plain(a), _plain(b))
        return lower(_record_python_op(py_op, ufunc, a, b))
    return (lambda self, other: apply(self, other)), (lambda self, other: apply(other, self))


def _compare(py_op, ufunc):
    def apply(self, other):
        if isinstance(other, (Tracer, np.ndarray, np.generic)):
            return NotImplemented
        if type(other) is complex:   # Python compares the exact value
            return py_op(self._guard(), other)
        if not _is_py_number(other):
            return py_op(float.__float__(self), other)
        if not self.live():
            return py_op(_plain(self), _plain(other))
        result = _record_python_op(py_op, ufunc, self, other, weak=False)
        if not isinstance(result, Tracer):
            return result
        add_guard(result.recorder, result.ir_var, "bool", bool(result.value))
        return bool(result.value)
    return apply


def printf_texts(value: float) -> list[str]:
    """The texts C code may make of ``value`` without calling ``__format__``: its repr, and
    printf-style ``%f``, ``%e`` and ``%g`` at the usual precisions (``"loss=%.4f" % v``,
    ``np.format_float_scientific``). Texts of one or two characters are left out: nearly
    every string holds one."""
    texts = {float.__repr__(value), np.format_float_scientific(value)}
    texts.update(f"%.{p}{kind}" % value for p in range(10) for kind in "feg")
    return [text for text in texts if len(text) > 2]


class TracedFloat(HidesMissing, float):
    """``.item()``'s value: a float, whose NumPy protocols user code does not see
    (``hasattr(v, "__array_function__")`` is False, as eagerly)."""
    __slots__ = ("tracer", "__weakref__")

    @classmethod
    def make(cls, value: float, recorder, var) -> TracedFloat:
        self = cls(value)
        self.tracer = Tracer(float(value), var, recorder)
        # C code reads the plain value (``json.dumps``, ``"%s" % v``, ``"%.4f" % v``,
        # ``str.join``): a returned string holding its text runs eagerly, as one formatted
        # from it does
        for text in printf_texts(float.__float__(self)):
            remember_text(recorder, text)
        return self

    def live(self) -> bool:
        tracer = getattr(self, "tracer", None)
        return (tracer is not None and active() is tracer.recorder
                and tracer.recorder.fallback is None)

    def _guard(self):
        """Python needs the exact value (a branch, a hash, a conversion): guard it."""
        value = float.__float__(self)
        if self.live():
            add_guard(self.tracer.recorder, self.tracer.ir_var, "float", value)
        return value

    def __bool__(self):
        value = float.__float__(self) != 0.0
        if self.live():
            add_guard(self.tracer.recorder, self.tracer.ir_var, "bool", value)
        return value

    def __float__(self):
        from .guards import python_float
        if not self.live():
            return float.__float__(self)
        return python_float(self.tracer.recorder, self.tracer.ir_var, float.__float__(self))

    def __int__(self):
        return int(self._guard())

    def __hash__(self):
        return hash(self._guard())

    def __round__(self, ndigits=None):
        return round(self._guard(), ndigits)

    def __trunc__(self):
        return int(self._guard())

    def __floor__(self):
        return float.__floor__(self._guard())

    def __ceil__(self):
        return float.__ceil__(self._guard())

    def __neg__(self):
        return self * -1.0 if self.live() else -float.__float__(self)

    def __pos__(self):
        return self

    def __abs__(self):
        if not self.live():
            return abs(float.__float__(self))
        return lower(surface(operator.abs, _abs_record, (self.tracer,), {}))

    def __repr__(self):
        return self._text(("repr",), float.__repr__(self))

    __str__ = __repr__

    def __format__(self, spec):
        return self._text(("format", spec), float.__format__(self, spec))

    def _text(self, base, text: str) -> str:
        """Formatting records no guard until the body reads the text as data (``text.py``);
        a returned text runs the signature eagerly."""
        if not self.live():
            return text
        remember_text(self.tracer.recorder, text)
        traced = TracedText(text, TextSource.of(self.tracer, base))
        if base[0] == "format" and joined_and_read():   # joined into a plain str: guard it
            traced.whole()
        return traced

    def __reduce__(self):
        return float, (self._guard(),)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .ufuncs import handle_ufunc
        if "out" in kwargs:
            kwargs["out"] = lift_all(kwargs["out"])
        return handle_ufunc(ufunc, method, lift_all(inputs), kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .registry import handle_function
        return handle_function(func, lift_all(args), {k: lift(v) for k, v in kwargs.items()})


def _abs_record(rec, concrete, x):
    from .ufuncs import record_ufunc
    return record_ufunc(rec, concrete, np.absolute, (x,), weak=True)


_ARITH = {"add": (operator.add, np.add), "sub": (operator.sub, np.subtract),
          "mul": (operator.mul, np.multiply), "truediv": (operator.truediv, np.true_divide),
          "floordiv": (operator.floordiv, np.floor_divide), "mod": (operator.mod, np.remainder),
          "pow": (operator.pow, np.power)}
for _name, (_py_op, _ufunc) in _ARITH.items():
    _fwd, _ref = _arith(_py_op, _ufunc)
    setattr(TracedFloat, f"__{_name}__", _fwd)
    setattr(TracedFloat, f"__r{_name}__", _ref)

_COMPARE = {"eq": (operator.eq, np.equal), "ne": (operator.ne, np.not_equal),
            "lt": (operator.lt, np.less), "le": (operator.le, np.less_equal),
            "gt": (operator.gt, np.greater), "ge": (operator.ge, np.greater_equal)}
for _name, (_py_op, _ufunc) in _COMPARE.items():
    setattr(TracedFloat, f"__{_name}__", _compare(_py_op, _ufunc))


def _divmod(self, other):
    """``divmod(v, d)``: ``(v // d, v % d)``, Python's definition, each traced."""
    return python_divmod(self, other)


def _rdivmod(self, other):
    return python_divmod(other, self)


def _exact(name: str):
    """A float method that reads the exact value (``v.hex()``, ``v.is_integer()``): guarded."""
    method = getattr(float, name)
    return lambda self, *args: method(self._guard(), *args)


TracedFloat.__divmod__, TracedFloat.__rdivmod__ = _divmod, _rdivmod
TracedFloat.real = property(lambda self: self)          # the value itself, still traced
TracedFloat.conjugate = lambda self: self
TracedFloat._hidden = hidden_names(TracedFloat, float)
for _name in ("is_integer", "as_integer_ratio", "hex", "__getnewargs__"):
    setattr(TracedFloat, _name, _exact(_name))


def is_live_float(value) -> bool:
    """A Python float argument's proxy, still recording."""
    return isinstance(value, TracedFloat) and value.live()
