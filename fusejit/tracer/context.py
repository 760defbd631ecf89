"""The recording context: the graph under construction and the bookkeeping around it.

One ``Recorder`` is active per thread while ``trace`` runs. Surface handlers call
:func:`surface`, which computes the concrete result with NumPy exactly as the user called it and
then asks a recorder function to emit the core ops that reproduce it.
"""
from __future__ import annotations

import re
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np

from .. import config, fperrors
from ..errors import EagerFallback, FusejitError, UnsupportedError
from ..ir import Lit, Loc, Node, SizeLit, TensorType, Var, ops
from ..ir.types import numeric
from ..located import at_frame
from . import pystate
from .captures import Capture, Roots, find_captures, path_key
from .foreign_cells import ForeignCells
from .loc import current_loc, user_frames
from .random_draws import Draws

_active = threading.local()


def active() -> Recorder | None:
    return getattr(_active, "recorder", None)


def set_active(recorder: Recorder | None) -> None:
    _active.recorder = recorder


@dataclass(frozen=True)
class Fallback:
    reason: str
    loc: Loc | None
    retry: bool = False   # Python state the body changed (``pystate``): trace once more


# NumPy computes arithmetic on untraced arrays alone (``acc.sum()`` with ``acc`` a NumPy array
# that a traced ``np.add(acc, x, out=acc)`` wrote into) while tracing: a replay would return
# the trace's values. After such a write, a new untraced array or result makes the signature
# run eagerly.
UNTRACED_AFTER_WRITE = ("NumPy computed an array without a traced value after traced values "
                        "were written into an array that is not an argument (a replay would "
                        "return the values of the trace)")


@dataclass
class CaptureRecord:
    """A capture while tracing; becomes a ``Capture`` at the end."""

    description: str
    var: Var
    source: tuple
    steps: tuple
    live: np.ndarray
    searched: bool = False   # the paths that reach ``live`` were looked for (a plain read)


def sanitize(text: str) -> str:
    text = re.sub(r"[\[\]'\"]+", ".", text)
    text = re.sub(r"[^A-Za-z0-9_.]", "_", text)
    return re.sub(r"\.{2,}", ".", text).strip(".") or "v"


HERE = object()   # ``Recorder.set_fallback``'s default location: the line being traced


@dataclass
class Recorder:
    name: str
    roots: Roots
    leaves: list
    inputs: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    layout_bases: list = field(default_factory=list)   # Vars reshaped by layout (layouts.py)
    layout_links: dict = field(default_factory=dict)   # Var -> Vars it is laid out like
    numpy_view: object = None   # the body's view of numpy (creation.view_of)
    captures: list = field(default_factory=list)
    raw: dict = field(default_factory=dict)       # id(ndarray) -> [array, current Var, capture]
    written: dict = field(default_factory=dict)   # id(ndarray) -> (array, values after write)
    fallback: Fallback | None = None
    guards: list = field(default_factory=list)    # GuardRecord, in recording order
    formatted: dict = field(default_factory=dict)  # id(str) -> (str made from a traced
    #                                                  value, the line that made it)
    raised: list = field(default_factory=list)    # (exception name, Loc) raised into the body
    opaque_views: list = field(default_factory=list)  # (ndarray, name): host results viewing
    #                                                  an operand (host.record_host)
    host_views: set = field(default_factory=set)  # host results that view their one operand
    read_only: dict = field(default_factory=dict)  # id -> a view NumPy made read-only whatever
    #                                                its base is (``np.broadcast_to``)
    #                                               (``np.diagonal(x)``): returned_views
    proxies: weakref.WeakValueDictionary = field(default_factory=weakref.WeakValueDictionary)
    #                                                  Var -> its live proxy (tracer.wrap)
    masked_reads: dict = field(default_factory=dict)  # gathered Var -> masked.MaskedRead
    shape_seen: set = field(default_factory=set)     # Vars whose shape user code looked at
    sizes: set = field(default_factory=set)   # lengths user code read off a traced shape
    #                                           (``x.sum(1) / x.shape[1]``): ``is_size``
    masked: list = field(default_factory=list)       # masked.MaskedStore, checked at the end
    dynamic: dict = field(default_factory=dict)  # Var whose shape NumPy decides at run time
    #                                              -> its kind (dynamic.py)
    shapes_vary: bool = True   # whether such a shape may vary between replays (not on CUDA,
    #                            whose runtime plans device buffers for the traced shapes)
    paths: dict = field(default_factory=dict)  # id(ndarray) -> (ndarray, [(source, steps)]):
    #                                            every path seen holding it (Capture.aliases)
    warning_filters: tuple = field(default_factory=lambda: tuple(warnings.filters))
    audited: dict = field(default_factory=dict)   # id(ndarray) -> (array, name, checksum)
    #                                               when the trace began (``audit.start``)
    watches: list = field(default_factory=list)   # pystate.Watch: plain state the body changed
    leaf_names: list = field(default_factory=list)   # each argument leaf's name (Watch.root)
    unswap: object = None   # gives argument objects their arrays back mid-body (capture_proxies)
    nested: object = None   # a compiled function's function as the body calls it (Copies.nested)
    substituted: list = field(default_factory=list)   # (source, steps): where the copy of an
    #                            argument's dict or list stood in for it (capture_proxies)
    originals: dict = field(default_factory=dict)   # id(the body's copy of an argument's dict
    #                            or list) -> the caller's (``unwrap``)
    plain_reads: tuple = ()   # plain_reads.PlainRead: globals and cells read, checked on replay
    entered: set | None = None   # code objects the body's frames ran (type_checks.watched);
    #                              None where a debugger's trace function was there first
    code_places: object = None   # code_reads.Places: what the code the body ran read, stored
    closure_cells: dict = field(default_factory=dict)   # id(code) -> code_reads.Cells: the
    #                            closure cells of the functions the body runs as copies
    draws: Draws = field(default_factory=Draws)   # the random generators the body can reach
    foreign_cells: ForeignCells = field(default_factory=ForeignCells)   # closure cells of
    #                            functions the body reaches through values (foreign_cells)
    stand_ins: dict = field(default_factory=dict)   # the other way round: id(the caller's) ->
    #                            the body's copy (``capture_proxies._Swaps.stand_in``)

    # -- nodes -------------------------------------------------------------------------------
    def emit(self, op: str, inputs, attrs=(), weak: bool = False):
        """Append a node; returns its output Var (or a tuple for multi-output ops)."""
        inputs = tuple(inputs)
        attrs = tuple(sorted(dict(attrs).items()))
        types = ops.infer_types(op, [v.type for v in inputs], attrs)
        outs = tuple(Var(TensorType(t.shape, t.dtype, weak)) for t in types)
        self._append(Node(op, inputs, outs, attrs, current_loc()))
        return outs[0] if len(outs) == 1 and op != "split" else outs

    def emit_typed(self, op: str, inputs, attrs, types) -> tuple:
        """Append a node whose output types are known (host ops: from NumPy's own result)."""
        outs = tuple(Var(t) for t in types)
        attrs = tuple(sorted(dict(attrs).items()))
        self._append(Node(op, tuple(inputs), outs, attrs, current_loc()))
        return outs

    def _append(self, node: Node) -> None:
        self.nodes.append(node)
        if self.dynamic:
            from .dynamic import propagate
            propagate(self, node)

    def cast(self, value, dtype):
        dtype = np.dtype(dtype)
        if isinstance(value, Lit):
            return value if value.dtype == dtype else type(value)(value.value, dtype)
        if value.type.dtype == dtype:
            return value
        return self.emit("cast", [value], {"dtype": dtype})

    def materialize(self, lit: Lit) -> Var:
        return self.emit("full", [], {"shape": (), "dtype": lit.dtype, "value": lit.value})

    def broadcast(self, var, shape):
        shape = tuple(shape)
        if isinstance(var, Lit):
            return self.emit("full", [], {"shape": shape, "dtype": var.dtype, "value": var.value})
        if var.type.shape == shape:
            return var
        return self.emit("broadcast", [var], {"shape": shape})

    # -- operands ----------------------------------------------------------------------------
    def operand(self, x, dtype=None):
        """The IR value for an operand: a Tracer's Var, a raw array's capture, or a Lit."""
        from .scalars import TracedFloat
        from .tracer import Tracer
        if isinstance(x, TracedFloat) and x.live():
            x = x.tracer
        if isinstance(x, Tracer):
            value = x.ir_var
        elif isinstance(x, np.ndarray):
            value = self.raw_var(x)
        elif isinstance(x, np.generic):
            value = Lit(x, x.dtype)
        elif isinstance(x, (bool, int, float, complex)):
            if dtype is None:
                dtype = np.result_type(x)
            try:
                return (SizeLit if self.is_size(x) else Lit)(x, dtype)
            except OverflowError:   # ``u8 < -1``, ``np.clip(u8, -5, 3)``: NumPy's own rules
                raise EagerFallback(f"the Python int {x} is out of the range of "
                                    f"{np.dtype(dtype)}") from None
        elif isinstance(x, (list, tuple, range)):   # ``logp[range(n), y]``: NumPy's array
            value = self.raw_var(self.const_array(x))
        elif is_duck(x):   # ``surface`` sets the fallback before NumPy runs its code
            raise EagerFallback(DUCK.format(type(x).__name__))
        else:
            raise UnsupportedError(f"operand of type {type(x).__name__} is not supported by "
                                   f"fusejit (at {current_loc()})")
        return value if dtype is None else self.cast(value, dtype)

    def note_sizes(self, shape) -> None:
        """User code read ``shape`` off a traced value: its lengths, their product and each
        less one (``/ (n - 1)``) become kernel arguments where they meet a traced value."""
        lengths = {*shape, int(np.prod(shape))}
        self.sizes |= lengths | {n - 1 for n in lengths}

    def is_size(self, x) -> bool:
        """Whether a Python int operand is a length the body read off a shape: written into a
        kernel's source, a new length would compile the kernel again; as an argument
        (``SizeLit``) one kernel serves every length, as for a mean's count. 0 and 1 stay
        literals (``x * 0``, ``x ** 1`` fold)."""
        return type(x) is int and x >= 2 and x in self.sizes

    def const_array(self, x) -> np.ndarray:
        """A literal list in the source becomes a constant array held by the trace."""
        return np.asarray(x)

    def raw_var(self, array: np.ndarray, fresh: bool = False) -> Var:
        """The capture of a plain array the body used; ``fresh``: one it made from nothing
        (``np.eye(n)``), which no traced write before can have reached."""
        entry = self.raw.get(id(array))
        if entry is not None and entry[0] is array:
            record = self.captures[entry[2]]
            if not record.searched:   # read through its proxy so far, now as a plain array
                record.searched = True
                self._note_paths(array, self._find(array))
            return entry[1]
        if type(array) is not np.ndarray:
            raise EagerFallback(f"ndarray subclass {type(array).__name__} used in the body")
        if not numeric(array.dtype) or array.dtype.fields is not None:
            raise EagerFallback(f"array of dtype {array.dtype} (object, structured, string or "
                                f"datetime) used in the body")
        return self._capture(array, fresh)

    def capture_at(self, array: np.ndarray, source, steps, text: str) -> Var:
        """The capture of ``array``, read through the path its proxy was made for (a global,
        a closure cell, attributes and items of an argument object)."""
        entry = self.raw.get(id(array))
        if entry is not None and entry[0] is array:
            return entry[1]
        name = sanitize(text.split(" ")[-1])
        return self.register_capture(CaptureRecord(text, Var(TensorType(array.shape, array.dtype),
                                                             name), source, steps, array))

    def register_capture(self, record: CaptureRecord) -> Var:
        """A new program input: ``record.live`` read through ``record.source`` and steps."""
        self.captures.append(record)
        self.raw[id(record.live)] = [record.live, record.var, len(self.captures) - 1]
        return record.var

    def note_path(self, array: np.ndarray, source: tuple, steps: tuple) -> None:
        """``array`` is held at ``source`` and ``steps`` (a proxy put there, a plain read)."""
        entry = self.paths.get(id(array))
        if entry is None or entry[0] is not array:
            entry = self.paths[id(array)] = (array, [])
        entry[1].append((source, steps))

    def aliases(self, record: CaptureRecord) -> tuple:
        """The paths other than ``record``'s own that held its array while tracing."""
        entry = self.paths.get(id(record.live))
        if record.source[0] == "const" or entry is None or entry[0] is not record.live:
            return ()
        seen, aliases = {path_key(record.source, record.steps)}, []
        for source, steps in entry[1]:
            key = path_key(source, steps)
            if key not in seen:
                seen.add(key)
                aliases.append(Capture(record.description, record.var.type, source, steps))
        return tuple(aliases)

    def _find(self, array: np.ndarray) -> list:
        """Every path reaching a plain array the body read: which one it took is unknown."""
        extra = Roots()
        for frame in user_frames(1):
            extra.add_globals(frame.f_globals, frame.f_code)
        return find_captures(array, self.roots, self.leaves, extra)

    def _note_paths(self, array: np.ndarray, found: list) -> None:
        for source, steps, _ in found:
            self.note_path(array, source, steps)

    def _capture(self, array: np.ndarray, fresh: bool = False) -> Var:
        found = self._find(array)
        if not found:
            loc = current_loc()
            where = loc.short().split(" ")[0] if loc else "<unknown>"
            source, steps, text = ("const", array.copy()), (), f"constant used at {where}"
            if self.written and not fresh:
                self.set_fallback(UNTRACED_AFTER_WRITE, loc)
        else:
            source, steps, text = found[0]
            self._note_paths(array, found)
        from .audit import BEFORE, changed_before_capture
        if changed_before_capture(self, array):
            self.set_fallback(BEFORE.format(name=self.audited[id(array)][1]))
        var = Var(TensorType(array.shape, array.dtype), sanitize(text.split(" ")[-1])
                  if found else "const")
        return self.register_capture(CaptureRecord(text, var, source, steps, array, True))

    # -- control -----------------------------------------------------------------------------
    def set_fallback(self, reason: str, loc: Loc | None | object = HERE,
                     retry: bool = False) -> None:
        """Run the signature eagerly; ``loc`` is the user's line (by default the line being
        traced; None when no line is known, such as a side effect found after the body).
        ``retry``: Python state the body changed; the next call traces once more."""
        if self.fallback is None or (retry and not self.fallback.retry):
            # a retry outranks the rest: a call that builds a model (``if self.w is None``)
            # may do what its later calls do not
            self.fallback = Fallback(reason, current_loc() if loc is HERE else loc, retry)

    def state_changed(self, watch, old, new) -> None:
        """The body changed a plain Python value (``pystate``) where ``watch`` reads it."""
        self.watches.append(watch)
        self.set_fallback(pystate.STATE_CHANGED.format(watch.label,
                                                       pystate.change_text(old, new)),
                          None, retry=True)

    def check_type(self, concrete, var) -> bool:
        arr = np.asarray(concrete)
        want = (tuple(arr.shape), arr.dtype)
        if isinstance(concrete, float) and not isinstance(concrete, np.generic):
            want = ((), np.dtype(np.float64))
        got = (var.type.shape, var.type.dtype)
        if got == want:
            return True
        self.internal(f"recorded {var.type} but NumPy gave {want[1]}{list(want[0])}")
        return False

    def note_raised(self, exc: BaseException) -> None:
        """A traced operation raised into the body: if the body catches it, the branch it
        takes then depends on data no guard checks (``api.check_caught``)."""
        self.raised.append((type(exc).__name__, current_loc()))

    def internal(self, message: str) -> None:
        if config.strict():
            raise FusejitError(f"internal: {message} (at {current_loc()})")
        self.set_fallback(f"internal: {message}")


def unwrap(x, originals: dict | None = None):
    """Replace Tracers by their concrete values inside (nested) lists, tuples and dicts.
    ``originals``: id -> the caller's own container, for the body's copies of the arguments'
    dicts and lists (``Recorder.originals``): bound elsewhere, they are the caller's."""
    from .scalars import TracedFloat
    from .tracer import Tracer
    if originals and id(x) in originals:
        return originals[id(x)]
    if isinstance(x, Tracer):
        return x.value
    if isinstance(x, TracedFloat):
        return float.__float__(x)
    if type(x) in (list, tuple):
        return type(x)(unwrap(v, originals) for v in x)
    if type(x) is dict:
        return {k: unwrap(v, originals) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(type(x), "_make"):   # np.unique_counts' result
        return type(x)._make(unwrap(v, originals) for v in x)
    return x


def _register_raw(recorder, x) -> None:
    """Raw arrays are captured before NumPy runs, so in-place updates record the old value."""
    if type(x) is np.ndarray:
        recorder.raw_var(x)
    elif type(x) in (list, tuple):
        for v in x:
            _register_raw(recorder, v)


def surface(compute, record, args, kwargs):
    """Run ``compute`` on concrete values, then ``record(recorder, concrete, *args, **kwargs)``.

    Without an active trace, or after a fallback, only the concrete result is returned.
    """
    recorder = active()
    if recorder is not None and recorder.fallback is None and mentions_tracer(args, kwargs):
        try:
            _register_raw(recorder, args)
            _register_raw(recorder, tuple(kwargs.values()))
        except UnsupportedError as exc:
            recorder.note_raised(exc)
            raise
        except EagerFallback as exc:
            recorder.set_fallback(exc.reason, exc.loc)
        except Exception as exc:  # noqa: BLE001 - reported as an internal error
            recorder.internal(f"{type(exc).__name__}: {exc}")
        duck = _duck_among(args, kwargs)
        if duck is not None:   # its code runs on what it holds: arrays, not their proxies
            recorder.set_fallback(DUCK.format(type(duck).__name__))
            if recorder.unswap is not None:
                recorder.unswap()
    try:
        concrete = _compute(compute, recorder, args, kwargs)
    except Exception as exc:
        if recorder is not None:
            recorder.note_raised(exc)
        raise
    if recorder is None or recorder.fallback is not None:
        return concrete
    if fperrors.raising():
        recorder.set_fallback(fperrors.REASON)
        return concrete
    try:
        return record(recorder, concrete, *args, **kwargs)
    except EagerFallback as exc:
        recorder.set_fallback(exc.reason, exc.loc)
    except FusejitError as exc:   # UnsupportedError and fusejit's own errors reach the body
        recorder.note_raised(exc)
        raise
    except Exception as exc:  # noqa: BLE001 - a tracer bug must not break the user's call
        if config.strict():
            raise FusejitError(f"internal: {type(exc).__name__}: {exc} "
                               f"(at {current_loc()})") from exc
        recorder.set_fallback(f"internal: {type(exc).__name__}: {exc}")
    return concrete


def _compute(compute, recorder, args, kwargs):
    """NumPy's result. While tracing, the warnings it gives are issued from the user's line
    (not this frame, which would also make the default filter show each message once for
    all lines): NumPy's floating-point ones collected and issued again, those its Python
    code issues by calling it through a frame that is that line (``located``)."""
    if recorder is None:
        return compute(*unwrap(args), **unwrap(kwargs))
    if recorder.fallback is None and fperrors.body_raises_warnings(recorder.warning_filters):
        recorder.set_fallback(fperrors.FILTER_REASON)
    frames = user_frames(3)
    if recorder.fallback is None and fperrors.catches_raised_warnings(frames):
        recorder.set_fallback(fperrors.CAUGHT_REASON)
    if frames:
        concrete, messages = fperrors.collecting(at_frame(frames[0]), compute, unwrap(args),
                                                 unwrap(kwargs))
    else:
        concrete, messages = fperrors.collecting(compute, *unwrap(args), **unwrap(kwargs))
    if messages:
        fperrors.warn_from(frames[0] if frames else sys._getframe(2), messages)
    return concrete


def int_beyond(value, dtype) -> bool:
    """A Python int that the integer ``dtype`` cannot hold (``256`` for uint8): NumPy 2 takes
    it by value in a comparison, drops it as a clip bound and wraps it in ``np.where``, where
    ``operand`` cannot make it a literal of ``dtype``."""
    return type(value) is int and np.dtype(dtype).kind in "iu" and not (
        np.iinfo(dtype).min <= value <= np.iinfo(dtype).max)


DUCK = "an operand of type {} overrides NumPy's functions with code of its own"


def is_duck(x) -> bool:
    """An array-like that is not an array and answers NumPy's functions itself
    (``__array_ufunc__``, ``__array_function__``): a dask or xarray array, the user's."""
    from .scalars import TracedFloat
    from .tracer import Tracer
    cls = type(x)
    return (getattr(cls, "__array_ufunc__", None) is not None
            or getattr(cls, "__array_function__", None) is not None) and \
        not isinstance(x, (np.ndarray, Tracer, TracedFloat))


def _duck_among(args, kwargs):
    """The first duck array among the operands (or the items of a list or tuple of them)."""
    stack = [*args, *kwargs.values()]
    while stack:
        x = stack.pop()
        if type(x) in (list, tuple):
            stack.extend(x)
        elif is_duck(x):
            return x
    return None


def mentions_tracer(args, kwargs) -> bool:
    from .scalars import TracedFloat
    from .tracer import Tracer
    stack = list(args) + list(kwargs.values())
    while stack:
        x = stack.pop()
        if isinstance(x, Tracer) or (isinstance(x, TracedFloat) and x.live()):
            return True
        if type(x) in (list, tuple):
            stack.extend(x)
    return False
