"""``trace(fn, args, kwargs)``: run ``fn`` eagerly on proxies and return the recorded ``Trace``."""
from __future__ import annotations

import contextlib
import inspect
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedError
from ..ir import Graph, TensorType, Var
from . import (
    attribute_reads,
    audit,
    capture_proxies,
    layouts,
    random_draws,
    returned_containers,
    type_checks,
)
from .captures import Capture, Roots
from .containers import (
    detect_container_writes,
    detect_static_writes,
    pair_containers,
    pair_statics,
    share_repeated,
)
from .context import Fallback, Recorder, active, sanitize, set_active
from .conversions import traced_conversions
from .creation import as_seen
from .guards import Guard
from .pytree import TreeDef, flatten, is_traced_leaf, leaf_paths, unflatten
from .returned_views import written
from .side_effects import AttrWrite, detect, snapshot
from .tracer import SHUFFLE_WARNING, Tracer, needs_ndarray

NDARRAY_ONLY = ("NumPy's compiled code needs an ndarray and was given a traced array ({}); "
                "fusejit cannot follow it: call it outside the compiled function, or pass its "
                "result in as an argument (for a shuffle: a permutation to index with)")


@contextlib.contextmanager
def _shuffle_refused():
    """np.random's shuffle warns before it swaps a proxy's rows as a generic sequence's: the
    warning becomes an error while the body is traced, so nothing is changed. Only this filter
    is removed afterwards; filters the body sets stay, as they do eagerly."""
    warnings.filterwarnings("error", message=SHUFFLE_WARNING, category=UserWarning)
    entry = warnings.filters[0]
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            warnings.filters.remove(entry)
        notify = getattr(warnings, "_filters_mutated", None) or getattr(
            warnings, "_filters_mutated_lock_held", None)
        if notify is not None:
            notify()


@dataclass(frozen=True)
class OutputLeaf:
    kind: str              # "value" | "arg" | "capture" | "const" | "view"
    index: int = 0
    scalar: bool = False
    pyfloat: bool = False  # the runtime returns float(v): a Python float left the body
    const: object = None   # "const": the value; "view"/"copied": (own output, position of
    #                        the first result that is the same object)
    pyint: bool = False    # the runtime returns int(v)
    pybool: bool = False   # the runtime returns bool(v): Python floats compared
    view: str = ""         # "arg", "value": "" the array itself, "rw"/"ro" a new (read-only)
    #                        view; a value: "copy" a copy, "frozen" itself made read-only;
    #                        "view": "arg"/"capture", the written array ``views`` are taken of
    #                        (after its write-back); "copied", one copy per call of output
    #                        ``index``
    views: tuple = ()      # "view": the view nodes replayed on that array


@dataclass(frozen=True)
class Mutation:
    target: str            # "arg" | "capture"
    index: int
    output: int


@dataclass
class Trace:
    graph: Graph
    result: object
    arg_leaves: tuple[int, ...]
    captures: tuple[Capture, ...]
    out_treedef: TreeDef
    out_leaves: tuple[OutputLeaf, ...]
    mutations: tuple[Mutation, ...]
    fallback: Fallback | None
    guards: tuple[Guard, ...] = ()          # checked on replay; a mismatch: path not taken
    attr_writes: tuple[AttrWrite, ...] = ()  # attribute rebindings replayed after each call
    returns_containers: bool = False        # the caller's containers fill markers in results
    held: tuple = ()   # returned_containers.HeldContainer: those read again from their paths
    watches: tuple = ()   # pystate.Watch: plain Python state the body changed (Fallback.retry)
    leaf_names: tuple = ()  # each argument leaf's name (pystate.Watch.root)
    layouts: tuple | None = None   # (leaf, layout) a view-or-copy decision rests on (layouts.py)
    capture_layouts: tuple = ()    # (capture, layout) the same, of captured arrays
    # attribute_reads.AttributeRead: attributes that held None or a number, read again
    attribute_reads: tuple = ()
    plain_reads: tuple = ()  # plain_reads.PlainRead: globals and closure cells, read again
    containers: tuple = ()   # ContainerCheck: the lists and dicts on captures' paths, as traced
    # containers.ItemStore: items stored into argument containers; the replay's result is then
    # (result, the stored items in order), split by the runtime (entries.Stored)
    item_stores: tuple = ()
    # (source, steps) as captures': a global, closure or object that held an argument's dict or
    # list while tracing; the body read the argument's copy there (_Swaps.stand_in)
    substituted: tuple = ()


def _positional_names(fn, count: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(count):
        param = params[min(i, len(params) - 1)] if params else None
        if param is not None and param.kind == param.VAR_POSITIONAL:
            names.append(f"{param.name}.{i - params.index(param)}")
        elif param is not None and i < len(params) and param.kind in (
                param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
        else:
            names.append(f"arg{i}")
    return names


def _arg_hints(fn, args, kwargs) -> list[str]:
    """``x``, ``p.attn.w``, ``params.0``: names with pytree paths, in leaf order."""
    named = list(zip(_positional_names(fn, len(args)), args, strict=True))
    named += [(key, kwargs[key]) for key in flatten(kwargs)[1].meta]
    hints = []
    for name, value in named:
        hints += [sanitize(f"{name}.{p}" if p else name) for p in leaf_paths(flatten(value)[1])]
    return hints


def _check_caught(recorder) -> None:
    """The body returned although a traced operation raised into it: it caught the exception
    (``except LinAlgError:``), and which branch it took depends on data no guard checks."""
    if recorder.raised:
        name, loc = recorder.raised[0]
        recorder.set_fallback(f"{name} raised by a traced operation was caught by the body: "
                              f"a replay cannot tell when the except branch applies", loc)


def trace(fn, args: tuple, kwargs: dict, name: str | None = None,
          shapes_vary: bool = True) -> Trace:
    """``shapes_vary``: data-dependent shapes may differ between replays where nothing
    planned for the traced shape reads them (``dynamic.py``); else each is guarded."""
    if active() is not None:
        raise RuntimeError("fusejit: nested tracing is not supported")
    leaves, treedef = flatten((tuple(args), dict(kwargs)))
    hints = _arg_hints(fn, args, kwargs)
    name = name or getattr(fn, "__name__", "fn")
    recorder = Recorder(sanitize(name), Roots.of(fn, leaves, hints), leaves, leaf_names=hints,
                        shapes_vary=shapes_vary)
    proxies, arg_leaves = _make_proxies(recorder, leaves, hints)
    proxy_args, proxy_kwargs = share_repeated(args, kwargs, *unflatten(
        treedef, [proxies.get(i, as_seen(leaf, recorder)) for i, leaf in enumerate(leaves)]))
    recorder.draws.watch_globals()
    recorder.draws.watch_roots(recorder.roots, leaves)
    before = snapshot(leaves, fn, hints)
    audited = audit.start(fn, leaves)
    recorder.audited = {id(array): (array, name, checksum) for array, name, checksum in audited}
    containers = pair_containers(args, kwargs, proxy_args, proxy_kwargs)
    recorder.originals = {id(pair.copy): pair.original for pair in containers}
    recorder.stand_ins = {id(pair.original): pair.copy for pair in containers}
    statics = pair_statics(fn)
    copied = returned_containers.copies(args, kwargs, proxy_args, proxy_kwargs)
    held = returned_containers.existing(recorder.roots, leaves)
    set_active(recorder)
    raised = True
    try:
        with traced_conversions(), _shuffle_refused(), \
                capture_proxies.proxied(fn, recorder, leaves, hints) as body:
            try:
                with type_checks.watched(recorder):
                    result = body(*proxy_args, **proxy_kwargs)
            except (ValueError, NotImplementedError, UserWarning) as exc:
                if needs_ndarray(exc):
                    refused = UnsupportedError(NDARRAY_ONLY.format(exc))
                    raise refused.with_traceback(exc.__traceback__) from exc
                raise
        raised = False
    finally:
        set_active(None)
        if raised:  # what the body stored on the caller's objects before it raised: concrete
            detect_container_writes(recorder, containers)
            detect_static_writes(recorder, statics)
            detect(recorder, before)
    stores, stored = detect_container_writes(recorder, containers)
    detect_static_writes(recorder, statics)
    audit.check(audited, recorder, [array for *_, array in written(recorder, proxies)])
    _check_caught(recorder)
    random_draws.settle(recorder)
    from .outputs import finish
    result = returned_containers.mark_held(returned_containers.mark(result, copied), held,
                                           recorder.roots, leaves)
    if stores:   # the items stored into argument containers ride along after the result
        result = (result, tuple(stored))
    recorded = finish(recorder, result, proxies, arg_leaves, before)
    if stores:
        recorded.result, recorded.item_stores = recorded.result[0], tuple(stores)
    recorded.layouts, recorded.capture_layouts = layouts.kept(recorder, proxies, arg_leaves,
                                                              leaves)
    places = recorder.code_places
    recorded.attribute_reads = attribute_reads.find(fn, before, recorder.entered,
                                                    places.handed if places else None)
    recorded.plain_reads = recorder.plain_reads
    recorded.substituted = tuple(recorder.substituted)
    found = returned_containers.markers(recorded.result)
    if found:
        recorded.held = tuple(m for m in found if type(m) is returned_containers.HeldContainer)
        recorded.result = returned_containers.fill(recorded.result, args, kwargs)
        recorded.returns_containers = True
    return recorded


def _make_proxies(recorder, leaves, hints):
    """One proxy per traced leaf; an array passed twice (``f(a, a)``) gets one proxy, so
    ``x is y`` holds in the body (the cache key tells such calls apart: ``runtime.key``)."""
    proxies, arg_leaves, seen = {}, [], {}
    for index, leaf in enumerate(leaves):
        if not is_traced_leaf(leaf):
            continue
        if type(leaf) is np.ndarray and id(leaf) in seen:
            proxies[index] = proxies[seen[id(leaf)]]
            continue
        seen[id(leaf)] = index
        if type(leaf) is float:
            var = Var(TensorType((), np.float64, weak=True), hints[index])
        else:
            var = Var(TensorType(np.shape(leaf), leaf.dtype), hints[index])
        recorder.inputs.append(var)
        arg_leaves.append(index)
        proxy = Tracer(leaf, var, recorder)
        proxy.owns = True
        proxies[index] = proxy
    return proxies, tuple(arg_leaves)
