"""The ``Tracer`` proxy: a concrete NumPy value plus the IR Var that computes it.

NumPy routes every ufunc call on a proxy to ``__array_ufunc__`` (NEP 13) and every array
function to ``__array_function__`` (NEP 18); operators and methods forward to those. Anything
that turns a traced value into a Python value records a guard (``guards.py``); turning it into a
raw array marks the trace as an eager fallback. Either way the user's call gets NumPy's own
result.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from ..errors import EagerFallback
from ..ir.types import numeric
from . import guards, proxy_kinds
from .context import active
from .loc import called_from_user, classify, current_loc
from .text import Raised, TextRead, TextSource, TracedText

# NumPy's compiled random code takes its path for generic sequences when it finds no ndarray:
# shuffle swaps rows by ``x[i], x[j] = x[j], x[i]``, which with views duplicates rows where its
# ndarray path swaps them. It warns first, which a trace turns into an error (``api.py``).
SHUFFLE_WARNING = r"you are shuffling a '\w*Tracer' object"   # a pattern, as warnings takes
# Messages of NumPy's compiled code refusing an object that is not an ndarray.
NEEDS_NDARRAY = ("Numpy IterAllButAxis requires an ndarray",
                 "Axis argument is only supported on ndarray objects")


def needs_ndarray(exc: BaseException) -> bool:
    """``exc`` is NumPy's compiled code refusing a proxy because it is not an ndarray (or
    about to mishandle it: the shuffle warning, raised as an error while tracing)."""
    if isinstance(exc, UserWarning):
        return re.match(SHUFFLE_WARNING, str(exc)) is not None
    return isinstance(exc, (ValueError, NotImplementedError)) and str(exc) in NEEDS_NDARRAY


@dataclass
class ViewLink:
    """A proxy that is a NumPy view of ``base``: re-derived when the base is written, and
    written through to the base when it is written itself: for basic indexing (``key``) as a
    setitem, for a view holding every element of the base once (a reshape or transpose,
    ``undo``) as the base's whole new value."""

    base: Tracer
    derive: object          # fn(recorder, base_var) -> Var
    key: tuple | None
    seen: object            # the base Var this view was last derived from
    undo: object = None     # fn(recorder, view_var) -> the base Var it is a view of

    @property
    def writes_through(self) -> bool:
        return self.key is not None or self.undo is not None


_OWN_SLOTS = frozenset({"value", "recorder", "link", "owns", "path", "masked_read"})
# ndarray's protocols for other libraries: raw memory or another array API. The body may ask
# for one (``x.__dlpack__``): it gets the array's, and runs eagerly. ``__array_namespace__``
# is a property of its own: NumPy's namespace, whose functions the trace sees.
ARRAY_CONVERSION = "conversion to a NumPy array (__array__) of a traced value"
PROTOCOLS = frozenset({"__array_interface__", "__array_namespace__", "__dlpack__",
                       "__dlpack_device__"})


class Tracer:
    __array_priority__ = 1000.0

    @property
    def __class__(self):
        """The traced value's class (``np.ndarray``, ``np.float32``, ``float``), so the body's
        ``isinstance(x, np.ndarray)`` takes the branch it takes eagerly; ``type(x)`` still
        says ``Tracer``."""
        value = self.__dict__.get("value")
        return type(value) if isinstance(value, (np.ndarray, np.generic, float)) else Tracer

    def __hash__(self):
        """A scalar's hash guards its value (an array's proxy has none: ``proxy_kinds``)."""
        value = self.__dict__.get("value")
        return hash(guards.to_item(self) if isinstance(value, np.generic) else float(self))

    def __new__(cls, value, *args, **kwargs):
        """An instance of the class for ``value``'s kind (``proxy_kinds``): an array's proxy
        has ``len``, iteration and item assignment, a NumPy scalar's and a float's do not."""
        return object.__new__(proxy_kinds.variant(cls, value))

    def __init__(self, value, var, recorder, link: ViewLink | None = None):
        self.value = value
        self._var = var
        self.recorder = recorder
        self.link = link
        self.owns = link is None and (not isinstance(value, np.ndarray) or value.base is None)

    @property
    def ir_var(self):
        link = self.link
        if link is not None:
            current = link.base.ir_var
            if current is not link.seen:
                self._var = link.derive(self.recorder, current)
                link.seen = current
        return self._var

    @property
    def weak(self) -> bool:
        return type(self.value) is float

    # -- copies: a traced copy, as NumPy's ndarray.__copy__ makes a new array -----------------
    def __copy__(self):
        return np.copy(self) if isinstance(self.__dict__.get("value"), np.ndarray) else self

    def __deepcopy__(self, memo):
        return self.__copy__()

    # -- text: a side effect of tracing, as print is ------------------------------------------
    def __repr__(self):
        return self._text(("repr",))

    def __str__(self):
        return self._text(("str",))

    def __format__(self, spec):
        return self._text(("format", spec))

    def _text(self, base) -> str:
        """NumPy's text of the value seen while tracing (print, logging, f-strings): no guard
        until the body reads the text as data (``text.py``); a returned one runs the signature
        eagerly (``outputs.returned_text``)."""
        if "value" not in self.__dict__:
            return f"Tracer({self._var.type})"
        note_shape_seen(self, skip=4)   # the text shows how many values there are
        text = TextRead(type(self.value), base, ())(self.value)
        if isinstance(text, Raised):    # format(x, "d") of a float array: NumPy's own error
            return self._text_error(base)
        remember_text(self.__dict__.get("recorder"), text)
        traced = TracedText(text, TextSource.of(self, base))
        if base[0] == "format" and guards.joined_and_read():   # joined into a plain str: guard it
            traced.whole()
        return traced

    def _text_error(self, base):
        return format(self.value, base[1]) if base[0] == "format" else str(self.value)

    # -- NEP 13 / NEP 18 ---------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .ufuncs import handle_ufunc
        return handle_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .registry import handle_function
        return handle_function(func, args, kwargs)

    # -- conversions to Python values: guards (see guards.py) -------------------------------
    def __array__(self, dtype=None, copy=None):
        recorder = active()
        if recorder is not None:
            recorder.set_fallback(ARRAY_CONVERSION)
        # NumPy 2's protocol: copy=True asks for a new array (NumPy does not copy it again),
        # copy=False forbids one.
        value = np.asarray(self.value)
        if dtype is not None and np.dtype(dtype) != value.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return value.astype(dtype)
        return value.copy() if copy else value

    def __bool__(self):
        return guards.to_bool(self)

    def __float__(self):
        return guards.to_float(self)

    def __int__(self):
        return guards.to_int(self)

    def __index__(self):
        return guards.to_index(self)

    def __trunc__(self):
        """``math.trunc`` of a NumPy scalar (guarded, as ``int``); an array has none."""
        if isinstance(self.value, np.ndarray):
            raise TypeError("type numpy.ndarray doesn't define __trunc__ method")
        return guards.to_int(self)

    def __complex__(self):
        value = complex(self.value)
        if active() is self.recorder:
            guards.add_guard(self.recorder, self.ir_var, "item", value)
        return value

    def item(self, *args):
        return guards.to_item(self, *args)

    def __round__(self, ndigits=None):
        """``round(t)`` of a NumPy scalar: Python's ``int``, guarded like ``int(t)``; with
        ``ndigits``, NumPy's rounding to that many digits, traced (``np.round``, the same
        result and type), or Python's of a Python float argument (a host op). An array has
        no ``__round__``, as eagerly."""
        kind = type(self.value)
        if getattr(kind, "__round__", None) is None:   # arrays, complex and bool scalars
            raise TypeError(f"type {kind.__module__}.{kind.__qualname__} doesn't define "
                            "__round__ method")
        if kind is float and type(ndigits) is int:   # a Python float argument: Python's
            from .host import python_round
            return python_round(self, ndigits)
        if ndigits is not None:
            return np.round(self, ndigits)
        return guards.to_round(self)

    def __getattr__(self, name):
        """An ndarray attribute or method the tracer does not map (``.ctypes``, ``.data``,
        ``.strides``): the body goes on with the plain array's, and the signature runs
        eagerly. Only called when normal lookup fails."""
        value = self.__dict__.get("value")
        # a Python float argument, a NumPy scalar (``s.is_integer()``), or an array
        owner = type(value) if isinstance(value, (float, np.generic)) else np.ndarray
        # (a scalar's array interface points into a temporary array: not handed out)
        private = name.startswith("_") and (name not in PROTOCOLS or owner is not np.ndarray)
        if private or name in _OWN_SLOTS or not hasattr(owner, name):
            raise AttributeError(f"'{proxy_kinds.type_name(value)}' object has no attribute "
                                 f"{name!r}")
        recorder = self.__dict__.get("recorder")
        if recorder is not None and active() is recorder:
            recorder.set_fallback(ARRAY_CONVERSION if name == "__array_interface__"  # NumPy's
                                  else f"{owner.__name__}.{name} is not traced by fusejit")
        return getattr(value if owner is not np.ndarray else np.asarray(value), name)

    def __setattr__(self, name, value):
        """The body's ``x.flat = v``, ``x.real = v``, ``x.shape = s`` change the array in ways
        fusejit does not trace: they are NumPy's own, on the value, and the signature runs
        eagerly. Where NumPy refuses (``x.foo = 1``), its AttributeError is raised."""
        if name.startswith("_") or name in _OWN_SLOTS:
            object.__setattr__(self, name, value)
            return
        from .context import unwrap
        setattr(self.__dict__["value"], name, unwrap(value))
        recorder = self.__dict__.get("recorder")
        if recorder is not None and active() is recorder:
            recorder.set_fallback(f"setting ndarray.{name} is not traced by fusejit")

    def tolist(self):
        return guards.to_list(self)

    # -- static attributes --------------------------------------------------------------------
    @property
    def shape(self):
        note_shape_seen(self)
        return np.shape(self.value)

    @property
    def size(self):
        note_shape_seen(self)
        return int(np.size(self.value))

    @property
    def __array_namespace__(self):
        """An array's or NumPy scalar's own (it returns ``numpy``): array-API code (SciPy's
        ``logsumexp``) then calls NumPy's functions on the proxy, traced as the body's own
        calls; a conversion among them (``xp.asarray``) runs eagerly as ever."""
        if not isinstance(self.value, (np.ndarray, np.generic)):
            raise AttributeError("__array_namespace__")   # a Python float: ``__getattr__``
        real = self.value.__array_namespace__
        recorder = self.recorder
        if recorder is None or active() is not recorder or \
                classify(sys._getframe(1).f_code.co_filename) != "user":
            return real

        def namespace(*, api_version=None):   # the body's own ``np``: ``xp is np`` holds
            real(api_version=api_version)      # NumPy's error for a version it lacks
            from .creation import view_of
            return view_of(recorder)
        return namespace

    @property
    def flags(self):
        """NumPy's flags of an array, its contiguity traced (``array_flags.py``)."""
        if not isinstance(self.value, (np.ndarray, np.generic)):
            raise AttributeError("flags")   # a Python float: ``__getattr__`` says so
        from .array_flags import TracedFlags
        return TracedFlags(self, self.value.flags)

    ndim = property(lambda self: np.ndim(self.value))
    dtype = property(lambda self: getattr(self.value, "dtype", np.dtype(np.float64)))
    itemsize = property(lambda self: self.dtype.itemsize)

    @property
    def nbytes(self):
        note_shape_seen(self)
        return int(np.size(self.value)) * self.itemsize

    T = property(lambda self: np.transpose(self))
    mT = property(lambda self: np.swapaxes(self, -1, -2))
    # NumPy's np.real/np.imag (a host op; a write into the view runs eagerly, as theirs)
    real = property(lambda self: self._part(np.real, "real"))
    imag = property(lambda self: self._part(np.imag, "imag"))

    def _part(self, function, name):
        if isinstance(self.__dict__.get("value"), np.ndarray):
            return function(self)
        return self.__getattr__(name)   # a Python float's or a NumPy scalar's: eager

    def __reduce_ex__(self, protocol):
        """``pickle.dumps(x)``: the value, NumPy's; the signature runs eagerly."""
        recorder = self.__dict__.get("recorder")
        if recorder is not None and active() is recorder:
            recorder.set_fallback("pickling a traced value")
        return self.value.__reduce_ex__(protocol)

    def __bytes__(self):
        """``bytes(x)``: the raw memory, NumPy's; the signature runs eagerly."""
        recorder = self.__dict__.get("recorder")
        if recorder is not None and active() is recorder:
            recorder.set_fallback("bytes() of a traced value reads its raw memory")
        return bytes(self.value)


class CapturedTracer(Tracer):
    """A captured array (a global, a closure cell, an attribute of an argument object) as the
    body sees it while tracing: its Var is the capture's current one, shared with plain uses
    of the same array, so reads and in-place writes are recorded like any traced op."""

    def __init__(self, array: np.ndarray, recorder, path: tuple = ()):
        super().__init__(array, None, recorder)
        self.owns, self.path = True, path    # (source, steps, description) as in captures

    @property
    def ir_var(self):
        return self.recorder.capture_at(self.value, *self.path)

    @property
    def swapped_array(self) -> np.ndarray:
        """The array (``captures``: a replay in another thread reads it during the trace)."""
        return self.value

    def registered(self) -> np.ndarray:
        """The array, registered as a capture (``return self.w`` returns it, as eager)."""
        self.ir_var  # noqa: B018 -- registers it
        return self.value


def note_shape_seen(tracer, skip: int = 3, always: bool = False) -> None:
    """The user's code looked at a traced value's shape (``len(t)``, ``t.size``), or a result
    took its shape without reading it (``np.zeros_like(t)``, ``always``): a masked read whose
    count was seen keeps its shape guard (``masked.py``)."""
    recorder, var = tracer.__dict__.get("recorder"), tracer.__dict__.get("_var")
    if recorder is None or active() is not recorder:
        return
    looked = called_from_user(skip)
    if looked:
        recorder.note_sizes(np.shape(tracer.value))
    if var is not None and (always or looked):
        recorder.shape_seen.add(var)


def remember_text(recorder, text: str) -> None:
    if recorder is not None and active() is recorder:
        recorder.formatted[id(text)] = (text, current_loc())


def check_opaque_views(recorder, array) -> None:
    """A write into an array that a host call's result views (``kept = np.flip(h); h[0] = 7``)
    changes that result in eager NumPy, never in the program: run eagerly."""
    for view, name in recorder.opaque_views:
        if np.may_share_memory(view, array):
            recorder.set_fallback(f"an array was written into after {name} returned a view of "
                                  "it (a replay would not update that view)")
            return


def mark_written(tracer: Tracer, new_var) -> None:
    """Rebind ``tracer`` to ``new_var`` after an in-place write, writing through to its base."""
    if tracer.recorder.opaque_views:
        check_opaque_views(tracer.recorder, tracer.value)
    link = tracer.link
    if isinstance(tracer, CapturedTracer):
        write(tracer.recorder, tracer.value, new_var)
        return
    if link is None:
        if not tracer.owns:
            raise EagerFallback("in-place write into a view of an array the tracer cannot follow")
        tracer._var = new_var
        return
    if not link.writes_through:
        raise EagerFallback("in-place write into a view made by broadcasting or by indexing "
                            "with a traced integer")
    recorder = tracer.recorder
    if link.key is None:   # the view holds each element of its base once: the base's value
        updated = link.undo(recorder, new_var)
    else:
        updated = recorder.emit("setitem", [link.base.ir_var, new_var], {"key": link.key})
    mark_written(link.base, updated)
    tracer._var = new_var
    link.seen = link.base.ir_var


def write(recorder, target, new_var) -> None:
    """Rebind a proxy or a raw (captured) ndarray to its new value."""
    if isinstance(target, Tracer):
        mark_written(target, new_var)
    else:
        if recorder.opaque_views:
            check_opaque_views(recorder, target)
        recorder.raw_var(target)
        recorder.raw[id(target)][1] = new_var
        written = recorder.written  # what traced writes leave there, for ``_check_written``
        for key, (array, _) in list(written.items()):
            if np.may_share_memory(array, target):
                written[key] = (array, array.copy())
        written[id(target)] = (target, target.copy())


def wrap(recorder, concrete, var, link: ViewLink | None = None, source=None):
    """A proxy for NumPy's result, after checking the recorded type matches it. ``source``:
    the array a view op or an indexing took the result from; a result sharing no memory with
    it is a new array the proxy owns, though NumPy's may have a temporary of its own as base
    (a reshape that copied, an integer-array index)."""
    if not numeric(getattr(concrete, "dtype", np.float64)):
        raise EagerFallback(f"a result of dtype {concrete.dtype} (strings, datetimes, objects) "
                            f"is not supported by the compiler")
    if not recorder.check_type(concrete, var):
        return concrete
    proxy = Tracer(concrete, var, recorder, link)
    if link is None and source is not None and isinstance(concrete, np.ndarray) \
            and not np.may_share_memory(concrete, source):
        proxy.owns = True
    recorder.proxies[var] = proxy   # weakly: whether it is still alive (masked.py)
    return proxy
