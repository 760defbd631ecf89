"""Python operators and ndarray methods on ``Tracer``, forwarded to NumPy's own entry points.

Arithmetic between weak scalars only (a Python-float argument, Python numbers and the
``TracedFloat`` of ``.item()``) stays Python arithmetic, as in eager code: ``lr * 0.5`` and
``lr * loss`` are Python floats, recorded as weak f64 values.
"""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Lit
from .context import surface
from .guards import complex_power, guard_divisor, guard_power, guarded_value, python_divmod
from .scalars import TracedFloat
from .tracer import Tracer, wrap


def _is_weak(x) -> bool:
    if isinstance(x, Tracer):
        return x.weak
    return type(x) in (bool, int, float, complex) or isinstance(x, TracedFloat)


def _weak_arith(py_op, ufunc, a, b):
    if complex in (type(a), type(b)) or complex_power(ufunc, a, b):
        # ``lr * 1j``: Python computes it from the float's value, guarded. The runtime returns
        # no Python complex, and NumPy's complex division and power are not Python's.
        return py_op(*(guarded_value(x) if isinstance(x, Tracer) else x for x in (a, b)))
    from .ufuncs import record_ufunc
    guard_divisor(ufunc, b)
    record = lambda rec, concrete, *xs: record_ufunc(rec, concrete, ufunc, xs, weak=True)
    result = surface(py_op, record, (a, b), {})
    guard_power(ufunc, result, (a, b))
    return result


def _defers_to_sequence(self, other, ufunc) -> bool:
    """A traced scalar with a list, tuple or str leaves it to Python's sequence rules where
    its eager type does: a NumPy scalar for ``*`` (``[0.0] * n`` repeats for an integer
    ``n``, raises TypeError for a float), a Python float for every operator. An array (also
    0-d), and a NumPy scalar for the other operators, take the sequence as an array."""
    if type(other) not in (list, tuple, str) or isinstance(self.value, np.ndarray):
        return False
    return self.weak or ufunc is np.multiply


def _scalar_ufunc(ufunc, py_op, a, b, scalar):
    """``ufunc(a, b)``; where NumPy refuses the types of a NumPy scalar operand, the error its
    own operator raises (``complex64 // int``: 'unsupported operand type(s) for //'), not the
    ufunc's ('ufunc 'floor_divide' not supported for the input types')."""
    try:
        return ufunc(a, b)
    except TypeError:
        if py_op is None or not isinstance(scalar.value, np.generic):
            raise
        values = [x.value if isinstance(x, Tracer) else x for x in (a, b)]
        with np.errstate(all="ignore"):
            py_op(*values)   # raises the eager TypeError
        raise


def _opts_out(other) -> bool:
    """``other`` sets ``__array_ufunc__ = None``: NumPy's operators give way to its own
    reflected one (``x * o`` is ``o.__rmul__(x)``)."""
    return getattr(type(other), "__array_ufunc__", False) is None


def _outranks(self, other) -> bool:
    """NumPy's legacy rule: an operand that is neither an array nor a scalar and does not
    take part in ufuncs, whose ``__array_priority__`` is above the array's (0) or the
    scalar's, gets to run its reflected operator (``x + o`` is ``o.__radd__(x)``)."""
    cls = type(other)
    if isinstance(other, (Tracer, np.ndarray, np.generic, int, float, complex)) or \
            hasattr(cls, "__array_ufunc__"):
        return False
    priority = getattr(cls, "__array_priority__", None)
    mine = 0.0 if isinstance(self.value, np.ndarray) else -1e6   # NumPy's scalar priority
    return isinstance(priority, (int, float)) and priority > mine


def _binary(ufunc, py_op=None):
    def forward(self, other):
        if _defers_to_sequence(self, other, ufunc) or _opts_out(other) or \
                _outranks(self, other):
            return NotImplemented
        if py_op is not None and self.weak and _is_weak(other):
            return _weak_arith(py_op, ufunc, self, other)
        return _scalar_ufunc(ufunc, py_op, self, other, self)

    def reflected(self, other):
        if _defers_to_sequence(self, other, ufunc):
            return NotImplemented
        if py_op is not None and self.weak and _is_weak(other):
            return _weak_arith(py_op, ufunc, other, self)
        if py_op is not None and type(other) is complex and type(self.value) is np.float64:
            # np.float64 is a float: ``1j + x[1]`` is Python's complex arithmetic (a complex,
            # ZeroDivisionError for ``1j / 0.0``), not NumPy's, so on the guarded value.
            return py_op(other, guarded_value(self))
        return _scalar_ufunc(ufunc, py_op, other, self, self)

    def inplace(self, other):
        if not isinstance(self.value, np.ndarray):
            return forward(self, other)  # scalars are immutable: Python rebinds the name
        return ufunc(self, other, out=(self,))
    return forward, reflected, inplace


_BINARY = {
    "add": (np.add, operator.add), "sub": (np.subtract, operator.sub),
    "mul": (np.multiply, operator.mul), "truediv": (np.true_divide, operator.truediv),
    "floordiv": (np.floor_divide, operator.floordiv), "mod": (np.remainder, operator.mod),
    "pow": (np.power, operator.pow), "matmul": (np.matmul, None),
    "and": (np.bitwise_and, None), "or": (np.bitwise_or, None), "xor": (np.bitwise_xor, None),
    "lshift": (np.left_shift, None), "rshift": (np.right_shift, None),
}
for _name, (_ufunc, _py_op) in _BINARY.items():
    _fwd, _ref, _inp = _binary(_ufunc, _py_op)
    setattr(Tracer, f"__{_name}__", _fwd)
    setattr(Tracer, f"__r{_name}__", _ref)
    setattr(Tracer, f"__i{_name}__", _inp)

def _compare(ufunc, py_op):
    def apply(self, other):
        if _opts_out(other) or _outranks(self, other):   # as NumPy's comparisons give way
            return NotImplemented
        if self.weak and _is_weak(other):   # Python floats compare to a Python bool
            return _weak_arith(py_op, ufunc, self, other)
        return ufunc(self, other)
    return apply


for _name, _ufunc in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                      "gt": np.greater, "ge": np.greater_equal}.items():
    setattr(Tracer, f"__{_name}__", _compare(_ufunc, getattr(operator, _name)))


def _power_shortcut(self, exponent):
    """The ufunc NumPy's ``array ** exponent`` calls instead of ``np.power`` (its
    ``fast_scalar_power``), or None: an exact ``int`` 2 is ``np.square`` (``bool ** 2`` is
    int8, not int64); for float and complex arrays an exact -1 is ``np.reciprocal`` and an
    exact ``float`` 0.5 ``np.sqrt`` (``float16 ** 0.5`` of -0.0 is -0.0, of -inf NaN)."""
    if not isinstance(self.value, np.ndarray):
        return None
    inexact = self.value.dtype.kind in "fc"
    if type(exponent) is int:
        return {2: np.square, -1: np.reciprocal if inexact else None}.get(exponent)
    return np.sqrt if type(exponent) is float and exponent == 0.5 and inexact else None


def _scalar_half_power(self):
    """A NumPy float scalar's ``s ** 0.5``: NumPy's scalar math, C pow, whose
    ``(-inf) ** 0.5`` is inf and ``(-0.0) ** 0.5`` +0.0 (``np.power``'s loop takes the square
    root: nan and -0.0). Recorded as C pow's special cases around a square root."""
    def record(rec, concrete, x, _):
        dtype = x.value.dtype
        var = rec.operand(x)
        root = rec.emit("add", [rec.emit("sqrt", [var]), Lit(0.0, dtype)])
        minus_inf = rec.emit("eq", [var, Lit(-np.inf, dtype)])
        return wrap(rec, concrete, rec.emit("where", [minus_inf, Lit(np.inf, dtype), root]))
    return surface(operator.pow, record, (self, 0.5), {})


def _pow(forward, inplace):
    def power(self, exponent):
        if isinstance(self.value, np.floating) and type(exponent) is float and exponent == 0.5:
            return _scalar_half_power(self)
        ufunc = _power_shortcut(self, exponent)
        return forward(self, exponent) if ufunc is None else ufunc(self)

    def power_in_place(self, exponent):
        if isinstance(self.value, np.floating) and type(exponent) is float and exponent == 0.5:
            return _scalar_half_power(self)   # a scalar's ``**=`` is its ``**``
        ufunc = _power_shortcut(self, exponent)
        return inplace(self, exponent) if ufunc is None else ufunc(self, out=(self,))
    return power, power_in_place


Tracer.__pow__, Tracer.__ipow__ = _pow(Tracer.__pow__, Tracer.__ipow__)


def _divmod(self, other, reflected=False):
    """``divmod`` of a traced Python float and a Python number is Python's: two floats,
    ``(a // b, a % b)`` (its definition); of an array, ``np.divmod``."""
    a, b = (other, self) if reflected else (self, other)
    if self.weak and _is_weak(other):
        return python_divmod(a, b)
    return _scalar_ufunc(np.divmod, divmod, a, b, self)


Tracer.__divmod__ = _divmod
Tracer.__rdivmod__ = lambda self, other: _divmod(self, other, reflected=True)


def _unary(ufunc, py_op=None):
    def apply(self):
        if py_op is not None and self.weak:
            from .ufuncs import record_ufunc
            record = lambda rec, concrete, x: record_ufunc(rec, concrete, ufunc, (x,), weak=True)
            return surface(py_op, record, (self,), {})
        return ufunc(self)
    return apply


Tracer.__neg__ = _unary(np.negative, operator.neg)
Tracer.__pos__ = _unary(np.positive, operator.pos)
Tracer.__abs__ = _unary(np.absolute, operator.abs)
Tracer.__invert__ = _unary(np.invert)


# -- ndarray methods: the same handlers as the array functions --------------------------------
def _shape_args(args):
    return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def _method(func):
    return lambda self, *args, **kwargs: func(self, *args, **kwargs)


for _name in ("sum", "mean", "max", "min", "prod", "var", "std", "argmax", "argmin", "any",
              "all", "ravel", "squeeze", "dot", "repeat", "swapaxes", "cumsum", "cumprod",
              "take", "round", "diagonal", "trace", "argsort", "argpartition", "searchsorted",
              "nonzero", "choose"):
    setattr(Tracer, _name, _method(getattr(np, _name)))


def _reshape_method(self, *shape, order="C", copy=None, **by_name):
    """``ndarray.reshape``: the shape as one tuple or as separate sizes (not by name)."""
    if by_name:
        raise TypeError(f"{next(iter(by_name))!r} is an invalid keyword argument for this "
                        "function")
    return np.reshape(self, _shape_args(shape), order=order, copy=copy)


def _astype_method(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """``ndarray.astype``: a cast the ``casting`` rule refuses raises NumPy's TypeError (a
    matter of dtypes alone). ``order="C"``/``"F"``: the cast laid out so, itself where it
    already is (``conversions.laid_out``: the path keeps the layouts that rests on); ``"A"``
    is left to NumPy (eagerly)."""
    order = order.upper() if isinstance(order, str) else order
    if order in ("C", "F") and isinstance(self.value, np.ndarray):
        from .conversions import laid_out
        cast = _astype_method(self, dtype, "K", casting, subok, copy)
        return laid_out(cast, order, None)
    if order != "K":
        return Tracer.__getattr__(self, "astype")(dtype, order, casting, subok, copy)
    if not np.can_cast(self.dtype, np.dtype(dtype), casting):
        np.empty(0, self.dtype).astype(dtype, casting=casting)   # raises NumPy's error
    method = getattr(type(self.value), "astype", None)
    if method is None:   # a Python float argument's proxy: NumPy's error
        return np.astype(self, dtype, copy=copy)
    # recorded as np.astype, computed by the value's own C method (not np.astype's Python
    # frame): NumPy's ComplexWarning then names the user's line, as the method does eagerly
    from .registry import FUNCTIONS, _or_host_op
    return surface(method, _or_host_op(np.astype, FUNCTIONS[np.astype]), (self, dtype),
                   {"copy": copy})


def _copy_method(self, order="C"):
    """``ndarray.copy`` is C-ordered, unlike ``np.copy``; a NumPy scalar's is that scalar."""
    return np.copy(self, order=order) if isinstance(self.value, np.ndarray) else self


Tracer.reshape = _reshape_method
Tracer.astype = _astype_method
Tracer.copy = _copy_method
Tracer.transpose = lambda self, *axes: np.transpose(self, _shape_args(axes) or None)
Tracer.flatten = lambda self, order="C": np.copy(np.ravel(self, order=order))
Tracer.clip = lambda self, min=None, max=None, **kwargs: np.clip(self, min, max, **kwargs)


def _in_place(name: str, function):
    """``x.sort()``, ``x.partition(k)``: the function's result written into ``x`` (the method
    returns None). NumPy's method checks the arguments first, on a copy (``x.sort(axis=None)``
    raises where ``np.sort`` takes it), and refuses a read-only ``x`` with its own message."""
    def method(self, *args, **kwargs):
        from .context import unwrap
        if isinstance(self.value, np.ndarray) and not self.value.flags.writeable:
            raise ValueError(f"{name} array is read-only")
        getattr(np.array(self.value), name)(*unwrap(args), **unwrap(kwargs))
        self[...] = function(self, *args, **kwargs)
    method.__name__ = name
    return method


def _conjugate_method(self):
    """``ndarray.conj``: a complex array's conjugate; a real array itself, as NumPy returns."""
    return np.conjugate(self) if np.iscomplexobj(self.value) else self


def _fill_method(self, value):
    """``ndarray.fill``: one scalar, NumPy's error for anything else. A value that is not
    traced is converted as NumPy's ``fill`` converts it (``x.fill("1.5")``)."""
    from .context import unwrap
    from .scalars import TracedFloat
    with np.errstate(all="ignore"):   # checks only: NumPy warns from the user's line below
        np.empty(0, self.dtype).fill(unwrap(value))
    if not isinstance(value, (Tracer, TracedFloat)) and isinstance(value, (str, bytes)):
        converted = np.empty((), self.dtype)
        converted.fill(value)
        value = converted[()]
    self[...] = value


def _view_method(self, *args, **kwargs):
    """``ndarray.view()`` (or of its own dtype, as an ndarray): a view, as ``x[...]``. A
    reinterpretation as another dtype or type is NumPy's, eagerly."""
    from .context import unwrap
    if len(args) > 2 or set(kwargs) - {"dtype", "type"}:   # NumPy's TypeError
        return Tracer.__getattr__(self, "view")(*args, **kwargs)
    bound = dict(zip(("dtype", "type")[:len(args)], args, strict=True), **kwargs)
    dtype, kind = unwrap(bound.get("dtype")), bound.get("type")
    if isinstance(dtype, type) and issubclass(dtype, np.ndarray) and kind is None:
        dtype, kind = None, dtype
    same_dtype = dtype is None or np.dtype(dtype) == self.dtype
    if same_dtype and kind in (None, np.ndarray) and isinstance(self.value, np.ndarray):
        return self[...]
    return Tracer.__getattr__(self, "view")(*args, **kwargs)


Tracer.sort = _in_place("sort", np.sort)
Tracer.partition = _in_place("partition", np.partition)
Tracer.conj = Tracer.conjugate = _conjugate_method
Tracer.fill = _fill_method
Tracer.view = _view_method
Tracer.compress = lambda self, condition, axis=None, out=None: np.compress(
    condition, self, axis=axis, out=out)
