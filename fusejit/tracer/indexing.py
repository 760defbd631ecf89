"""``x[key]`` and ``x[key] = v`` on proxies: views, gathers and functional setitem."""
from __future__ import annotations

import operator

import numpy as np

from ..ir import Lit, indexing
from .context import surface, unwrap
from .dynamic import reads_dynamic
from .masked import masked_update, remember_masked_read
from .tracer import Tracer, ViewLink, mark_written, wrap
from .ufuncs import encode_index


def _items(key):
    return key if isinstance(key, tuple) else (key,)


def _has_traced_mask(key) -> bool:
    return any(isinstance(item, Tracer) and item.dtype == np.bool_ for item in _items(key))


def getitem(tracer, key):
    if _has_traced_mask(key):  # data-dependent shape: a host op with a shape guard
        from .host import host_call
        result = host_call(operator.getitem, "getitem", (tracer, key), {}, data_dependent=True)
        if isinstance(result, Tracer) and isinstance(result.value, np.ndarray):
            # a new array, though NumPy's is a view of a temporary of its own when the mask
            # is not on the first axis (``x[:, m]``): ``x[:, m] -= 1`` writes into it
            result.owns = result.owns or not np.may_share_memory(result.value, unwrap(tracer))
        remember_masked_read(tracer, key, result)
        return result
    rec = tracer.__dict__.get("recorder") if isinstance(tracer, Tracer) else None
    if reads_dynamic(rec, (tracer, key), {}):   # x[m][:3], x[np.nonzero(m)]: NumPy's, any shape
        from .host import host_call
        return host_call(operator.getitem, "getitem", (tracer, key), {})
    return surface(operator.getitem, _record_getitem, (tracer, key), {})


def _record_getitem(rec, concrete, tracer, key):
    index_key, operands = encode_index(rec, key)
    base = rec.operand(tracer)
    if indexing.is_basic(index_key):
        derive = lambda rec, v: rec.emit("getitem", [v], {"key": index_key})
        link = None
        # Linked (writes go through to the base) only where NumPy made a view: indexing a
        # NumPy scalar (np.sum(x)[None], (a <= a)[None] of 0-d arrays) makes a new array, which
        # the proxy owns and writes do not leave. An empty view (``x[1:]`` of one row) shares
        # no memory; writes into it change nothing.
        if (isinstance(concrete, np.ndarray) and isinstance(tracer, Tracer)
                and isinstance(tracer.value, np.ndarray)
                and (concrete.size == 0 or np.may_share_memory(concrete, tracer.value))):
            link = ViewLink(tracer, derive, index_key, tracer.ir_var)
        return wrap(rec, concrete, derive(rec, base), link, source=unwrap(tracer))
    derive = lambda rec, v: rec.emit("gather", [v, *operands], {"key": index_key})
    return wrap(rec, concrete, derive(rec, base), _integer_view(rec, concrete, tracer, derive),
                source=unwrap(tracer))


def _integer_view(rec, concrete, tracer, derive) -> ViewLink | None:
    """NumPy indexes with a 0-d integer array as with an int (``x[t]`` is a view of ``x``): the
    gather is derived again when ``x`` is written, as a view would show the write (a write
    through it runs eagerly). A view of an array that is not a proxy runs eagerly if that
    array is written (``tracer.check_opaque_views``)."""
    indexed = unwrap(tracer)
    if not (isinstance(concrete, np.ndarray) and isinstance(indexed, np.ndarray)
            and np.may_share_memory(concrete, indexed)):
        return None
    if isinstance(tracer, Tracer):
        return ViewLink(tracer, derive, None, tracer.ir_var)
    rec.opaque_views.append((concrete, "indexing with a traced integer"))
    return None


def setitem(tracer, key, value):
    # operator.setitem, not a Python function: a warning NumPy's C code issues (ComplexWarning
    # of a complex value stored into a real array) names the innermost Python frame, which
    # is then the user's line (``located``), as eagerly
    surface(operator.setitem, _record_setitem, (tracer, key, value), {})


def python_float_into(value, dtype) -> np.ndarray:
    """``a[i] = v`` of a Python float into an integer array, as NumPy stores it: through
    Python's ``int`` (truncation); NaN, infinities and values out of the dtype's range raise
    NumPy's ValueError / OverflowError. Recorded as a host op, so a replay raises as eager
    code does where a plain cast would store garbage."""
    out = np.empty((), dtype)
    out[()] = float(value)
    return out


def _float_scalar(value) -> bool:
    """A Python float or a NumPy float scalar (not a 0-d array): NumPy stores it into an
    integer array through Python's ``int``, raising where a cast would wrap."""
    return isinstance(value, Tracer) and (value.weak or (
        type(value.value) is not np.ndarray and np.dtype(value.dtype).kind == "f"))


ONE_BY_ONE = ("an assignment of an overlapping 1-D view with another stride (NumPy copies it "
              "element by element, reading what it wrote)")


def one_by_one(dst, src) -> bool:
    """Whether NumPy assigns ``src`` into the 1-D ``dst`` element by element where they
    overlap: it buffers ``src`` only for more dimensions or strides of opposite signs, and
    with strides that differ an element written early is read later (``x[::2] = x[:4]``)."""
    dst, src = unwrap(dst), unwrap(src)
    if not (type(dst) is np.ndarray and type(src) is np.ndarray) or dst.ndim != 1 or \
            src.ndim != 1 or dst.size < 2 or src.size != dst.size:
        return False
    return dst.strides[0] * src.strides[0] > 0 and dst.strides[0] != src.strides[0] and \
        np.shares_memory(dst, src)


def _record_setitem(rec, concrete, tracer, key, value):
    from .scalars import lift
    value = lift(value)      # an ``.item()`` value: its proxy
    if isinstance(value, Tracer) and one_by_one(_target_view(tracer, key), value):
        rec.set_fallback(ONE_BY_ONE)
    if _float_scalar(value) and tracer.dtype.kind in "iu":
        from .host import record_host
        converted = python_float_into(value.value, tracer.dtype)
        value = record_host(rec, converted, python_float_into, "python_float_into",
                            (value, tracer.dtype), {})
    rewritten = masked_update(rec, tracer, key, value)
    if rewritten is not None:
        mark_written(tracer, rewritten)
        return
    index_key, operands = encode_index(rec, key)
    update = rec.operand(value, tracer.dtype)
    if isinstance(update, Lit):
        update = rec.materialize(update)
    new = rec.emit("setitem", [rec.operand(tracer), update, *operands], {"key": index_key})
    mark_written(tracer, new)


def _target_view(tracer, key):
    """The concrete view ``tracer[key]`` assigns into (a copy for an advanced index)."""
    try:
        return unwrap(tracer)[unwrap(key)]
    except Exception:   # noqa: BLE001 -- NumPy has taken the key already: a form of its own
        return None
