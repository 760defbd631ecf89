"""``fusejit.compile``: the decorator and the CompiledFunction it returns."""
from __future__ import annotations

import copy
import functools
import inspect
import numbers
import os
import sys
import threading
import time
import types
import weakref

from .. import config, fperrors
from ..errors import FusejitError, UnsupportedError
from ..logs import topic
from ..tracer import flatten, pystate, trace
from ..tracer.captures import method_owner
from ..tracer.context import active
from ..tracer.returned_containers import all_held, fill
from .binding import StaticSplit
from .deferred_writes import written_inputs
from .device import copy_into, host_copies, to_device
from .entries import (
    ALIASED,
    INTERNAL_ERRORS,
    MISS,
    NOT_AN_ARRAY,
    RETRACE,
    STATE_MOVED,
    CompiledEntry,
    EagerEntry,
    TraceTree,
)
from .input_layouts import argument_orders, capture_orders, in_memory_order, target_orders
from .item_stores import Stored, container_at
from .key import (
    UntraceableInput,
    by_identity,
    check_dtype,
    leaf_signature,
    make_key,
    pin,
    typed,
)
from .pipeline import build_program
from .relations import merged, places_of, relation
from .static_churn import StaticChurn

log, trace_log = topic("runtime"), topic("trace")
# One trace at a time in the process: tracing swaps proxies into the objects it reads
# (capture_proxies), which another function traced at once from another thread would take
# for its own values (a method of the same object). Taken before any function's own lock.
_TRACING = threading.RLock()
_FUNCTIONS: weakref.WeakSet = weakref.WeakSet()   # whose locks a forked child renews
TARGETS = ("auto", "cpu", "cuda")


def _new_locks() -> None:
    """A child forked while another thread traced would wait for ever on the locks it held."""
    global _TRACING
    _TRACING = threading.RLock()
    for function in list(_FUNCTIONS):
        function._lock = threading.RLock()


os.register_at_fork(after_in_child=_new_locks)
_REBOUND = "a captured array was rebound to a value that is not an array"
_HELD_GONE = "a dict or list the body returns is no longer where the trace found it"
_STATE_MOVED = ("Python state the body changed on an earlier call is not what the compiled "
                "trace left (another call changed it)")


def compile(fn=None, *, target="auto", static_argnames=(), cache=True, max_traces=8,
            fastmath=False, freeze=False):
    """Compile a NumPy function. Usable as ``@compile`` or ``@compile(target="cpu", ...)``.

    ``target``: "auto" (CUDA when a real GPU is usable, else CPU), "cpu" or "cuda".
    ``static_argnames``: arguments that are never traced; their values join the cache key.
    ``cache``: keep optimized programs on disk (``FUSEJIT_CACHE_DIR``); kernel sources are
    always written there, since Numba can only cache functions that live in files.
    ``max_traces``: trace paths per signature before it runs eagerly.
    ``fastmath``: reserved; kernels are always IEEE-exact today (reductions reassociate only).
    ``freeze``: not implemented yet (raises).
    """
    if isinstance(static_argnames, str):   # one name, as jax.jit takes it
        static_argnames = (static_argnames,)
    if not isinstance(static_argnames, (tuple, list, set, frozenset)):
        raise TypeError("static_argnames takes a parameter name or a sequence of them, not "
                        f"{type(static_argnames).__name__}")
    _check_max_traces(max_traces)
    options = dict(target=target, static_argnames=tuple(static_argnames), cache=cache,
                   max_traces=max_traces, fastmath=fastmath, freeze=freeze)
    if fn is None:
        return lambda f: _compiled(f, options)
    return _compiled(fn, options)


def _compiled(fn, options):
    # Over @staticmethod or @classmethod (either order is a natural way to write it), the
    # function inside is compiled and wrapped again.
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(CompiledFunction(fn.__func__, **options))
    return CompiledFunction(fn, **options)


def _check_max_traces(max_traces) -> None:
    if isinstance(max_traces, bool) or not isinstance(max_traces, numbers.Integral):
        raise TypeError(f"max_traces must be an int, not {type(max_traces).__name__}")
    if max_traces < 1:
        raise ValueError(f"max_traces must be at least 1, not {max_traces}")


def _check_static_argnames(names, signature, qualname) -> None:
    """Each name is a string naming a parameter (any name, with ``**kwargs``)."""
    params = signature.parameters
    open_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"static_argnames holds {name!r}; it takes parameter names")
        if name not in params and not open_kwargs:
            raise ValueError(f"static_argnames names {name!r}, which is not a parameter of "
                             f"{qualname}{signature}")
        _check_bindable_by_keyword(name, params, signature, qualname)


def _check_bindable_by_keyword(name, params, signature, qualname) -> None:
    """A static argument is bound by keyword (``functools.partial(fn, name=value)``): a
    positional-only parameter, or one before ``*args``, cannot be."""
    param = params.get(name)
    if param is None:
        return
    if param.kind is param.POSITIONAL_ONLY:
        where = "is positional-only"
    elif param.kind is param.POSITIONAL_OR_KEYWORD and any(
            p.kind is p.VAR_POSITIONAL for p in params.values()):
        where = "comes before *" + next(p.name for p in params.values()
                                        if p.kind is p.VAR_POSITIONAL)
    else:
        return
    raise UnsupportedError(
        f"static_argnames names {name!r}, which {where} in {qualname}{signature}: fusejit "
        f"binds static arguments by keyword, which Python does not allow there; make "
        f"{name!r} keyword-only (after *args, or after a bare *)")


def _resolve_target(target: str) -> str:
    """``auto`` means CUDA only when a real GPU is usable; ``cuda`` without one is an error."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    if target == "cpu":
        return "cpu"
    from . import gpu
    if target == "auto":
        return "cuda" if gpu.gpu_usable() else "cpu"
    if not gpu.cuda_available():
        raise UnsupportedError("target='cuda' needs a usable CUDA GPU (numba.cuda.is_available() "
                               "is False here); use target='cpu' or 'auto'")
    return "cuda"


def _defaults_of_fn(name: str) -> property:
    """``f.__defaults__`` (or ``__kwdefaults__``) of the function compiled, which the trace
    reads again before each replay (``plain_reads``); setting it where that is not a function
    raises Python's AttributeError (a partial would take the attribute and use it nowhere)."""
    def set_(self, value):
        if not isinstance(self.fn, types.FunctionType):
            raise AttributeError(f"{type(self.fn).__name__!r} object attribute {name!r} cannot "
                                 "be set")
        setattr(self.fn, name, value)
    return property(lambda self: getattr(self.fn, name, None), set_)


class CompiledFunction:
    """Traces on the first call per signature, then replays the compiled program."""

    holds_attributes = True   # the user's own (``f.scale = 2.0``), read again as a function's
    fusejit_kind = "compiled"   # read again by identity where the body reads it (``pystate``)

    def __init__(self, fn, *, target, static_argnames, cache, max_traces, fastmath, freeze):
        if freeze:
            raise UnsupportedError("freeze=True is not implemented yet")
        functools.update_wrapper(self, fn)
        for name in ("__name__", "__qualname__"):  # a functools.partial has neither
            if not hasattr(self, name):
                setattr(self, name, getattr(getattr(fn, "func", fn), name, type(fn).__name__))
        self.fn, self.target = fn, _resolve_target(target)
        self._owner = method_owner(fn)   # the object a compiled bound method is bound to
        self._asked_target = target   # "auto" picks again where the function is unpickled
        self.static_argnames, self.max_traces = static_argnames, max_traces
        self.fastmath, self.cache = fastmath, cache
        self._signature = inspect.signature(fn)
        _check_static_argnames(static_argnames, self._signature, self.__qualname__)
        self._churn = StaticChurn(self.__qualname__, self._signature)
        self._split = StaticSplit(self._signature, static_argnames or ())
        self._plain_target = (self.target, None)   # the key's last part without static args
        self._entries: dict = {}
        self._watches: dict = {}   # place -> pystate.Watch: Python state a trace changed
        self._lock = threading.RLock()
        _FUNCTIONS.add(self)
        self._stats = dict(traces=0, hits=0, eager_calls=0, aliased_calls=0,
                           kernels_compiled=0, kernels_reused=0, compile_seconds=0.0)

    def __get__(self, obj, objtype=None):
        return self if obj is None else BoundCompiled(self, obj)

    __defaults__ = _defaults_of_fn("__defaults__")
    __kwdefaults__ = _defaults_of_fn("__kwdefaults__")

    def __repr__(self):
        return f"<fusejit.CompiledFunction {self.__qualname__} target={self.target}>"

    # -- copies and pickles: a compiled function is one object, like the function it wraps --
    def __reduce__(self):
        """By reference where the module holds this object under its name (a decorated
        module-level function: what multiprocessing sends), else the wrapped function and the
        options, compiled afresh where it is unpickled."""
        holder = sys.modules.get(getattr(self, "__module__", None) or "")
        for part in self.__qualname__.split("."):
            holder = getattr(holder, part, None)
        if holder is self:
            return self.__qualname__
        options = dict(target=self._asked_target, static_argnames=self.static_argnames,
                       cache=self.cache, max_traces=self.max_traces, fastmath=self.fastmath,
                       freeze=False)   # a compiled function never has freeze=True
        return (_compiled, (self.fn, options))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # -- the call path -------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if fperrors.raising():
            return self._run_eager(self.fn, args, kwargs, fperrors.REASON)
        if self.static_argnames:
            fn, args, kwargs, statics = self._split_static(args, kwargs)
            target = (self.target, statics)
        else:
            fn, target = self.fn, self._plain_target
            if kwargs:
                args, kwargs = self._split.positional(args, kwargs)
        containers: list = []
        try:
            key, leaves = make_key(args, kwargs, target, containers)
        except UntraceableInput as exc:
            recorder = active()
            if recorder is not None:   # called by a body being traced: its ops join that trace
                trace_log.debug("%s is traced into the enclosing trace", self.__qualname__)
                return (fn if recorder.nested is None else recorder.nested(fn))(*args, **kwargs)
            return self._run_eager(fn, args, kwargs, str(exc))
        tree = self._entries.get(key)
        tried, base = 0, key
        if tree is not None:
            paths = tree.paths   # read before ``related``, which is set before paths grow
            if tree.related is not None:
                key, tree, paths = self._related(key, tree, paths, containers, leaves)
        if tree is not None:
            tried = len(paths)
            if tried and tree.held and not all_held(tree.held, args, kwargs):
                return self._run_eager(fn, args, kwargs, _HELD_GONE)
            result = tree.run(leaves, paths) if tried else MISS
            if result is not MISS and result is not RETRACE:
                return self._answer(tree, result, fn, args, kwargs)
            if tree.eager is not None and result is not RETRACE:
                tree.eager.calls += 1
                self._stats["eager_calls"] += 1
                return _eager_call(fn, args, kwargs)
        return self._trace_and_compile(fn, base, leaves, args, kwargs, (tree, tried))

    def _related(self, key, tree, paths, containers, leaves):
        """The key, entry and paths of calls whose containers relate to the arguments as
        ``tree``'s traces saw them (``relations``); a call where they relate otherwise (the
        global the body reads is now the dict it stores into) keys apart, and traces anew."""
        while tree is not None and tree.related is not None:
            places, traced = tree.related
            now = relation(places, containers, leaves)
            if now == traced:
                break
            key = (("related", key, now), key[-1])   # the key ends in its target, as all do
            tree = self._entries.get(key)
            paths = tree.paths if tree is not None else []
        return key, tree, paths

    def _related_again(self, key, args, kwargs, leaves):
        """``_related``'s key, under the lock: another thread's trace may have added places
        since the call looked."""
        tree = self._entries.get(key)
        if tree is None or tree.related is None:
            return key
        leaves = leaves if leaves is not None else flatten((args, kwargs))[0]
        return self._related(key, tree, tree.paths, _containers(args, kwargs), leaves)[0]

    def _relate(self, tree, recorded, args, kwargs, leaves) -> None:
        """The places of a new trace join its entry's; the relation is the traced call's."""
        places = places_of(recorded, self._owner)
        known = tree.related[0] if tree.related is not None else ()
        if places and not set(places) <= set(known):
            places = merged(known, places)
            tree.related = (places, relation(places, _containers(args, kwargs), leaves))

    def _answer(self, tree, result, fn, args, kwargs):
        """The call's result from ``tree.run``'s answer: a replay's, or eager NumPy's where
        the tree says this call may not replay."""
        if result is ALIASED:
            return self._run_aliased(fn, args, kwargs)
        if result is NOT_AN_ARRAY:
            return self._run_eager(fn, args, kwargs, _REBOUND)
        if result is STATE_MOVED:
            return self._run_eager(fn, args, kwargs, _STATE_MOVED)
        return self._hit(tree, result, args, kwargs)

    def _hit(self, tree, result, args, kwargs):
        """A replay's result, with the caller's containers where the body returned them."""
        self._stats["hits"] += 1
        if type(result) is Stored:
            result = result.apply(args, kwargs)
        return fill(result, args, kwargs) if tree.fills else result

    def _split_static(self, args, kwargs):
        """``static_argnames`` become part of a partial: never traced, always in the key."""
        if not self.static_argnames:
            return self.fn, *self._split.positional(args, kwargs), None
        statics, args, kwargs = self._split(args, kwargs)
        fn = self.fn
        if isinstance(fn, functools.partial):   # one partial: its bound arrays are captures
            fn = functools.partial(fn.func, *fn.args, **{**fn.keywords, **statics})
        else:
            fn = functools.partial(fn, **statics)
        return fn, args, kwargs, _Static(statics)

    def _run_eager(self, fn, args, kwargs, reason):
        log.info("%s runs eagerly: %s", self.__qualname__, reason)
        self._stats["eager_calls"] += 1
        return _eager_call(fn, args, kwargs)

    def _trace_and_compile(self, fn, key, leaves, args, kwargs, tried=(None, 0),
                           on_copies=False):
        """``tried``: the entry the call found and how many of its paths it tried;
        ``on_copies``: ``explain`` traces copies of the arguments (``entry_for``)."""
        with _TRACING, self._lock:
            key = self._related_again(key, args, kwargs, leaves)
            tree = self._tree(key, leaves, args, kwargs)
            tried = tried[1] if tried[0] is tree else 0
            if len(tree.paths) > tried and leaves is not None:  # another thread added a path
                result = tree.run(leaves)
                if result is not MISS and result is not RETRACE:
                    return self._answer(tree, result, fn, args, kwargs)
            try:
                for leaf in leaves if leaves is not None else flatten((args, kwargs))[0]:
                    check_dtype(leaf_signature(leaf))
            except UntraceableInput as exc:
                tree.eager = EagerEntry(str(exc))
                return self._run_eager(fn, args, kwargs, str(exc))
            if len(tree.paths) >= self.max_traces:
                return self._too_many_paths(tree, fn, args, kwargs)
            started = time.perf_counter()
            host_args, host_kwargs, on_device = host_copies(args, kwargs)
            try:
                recorded = trace(fn, host_args, host_kwargs, name=self.__name__,
                                 shapes_vary=self.target == "cpu")
            except Exception as exc:
                _release(exc)
                _note_user_line(exc, self.__qualname__)
                _note_float_proxies(exc, leaves if leaves is not None else
                                    flatten((args, kwargs))[0])
                self._forget_if_empty(key, tree)
                raise
            self._stats["traces"] += 1
            trace_log.debug("%s: traced %d ops in %.3f s (path %d of this signature)",
                            self.__qualname__, len(recorded.graph.nodes),
                            time.perf_counter() - started, len(tree.paths) + 1)
            traced_leaves = flatten((host_args, host_kwargs))[0]
            orders = {**argument_orders(recorded, traced_leaves),
                      **capture_orders(recorded, traced_leaves)} \
                if self.target == "cpu" and not on_device else {}
            self._relate(tree, recorded, args, kwargs,   # before the path joins: see __call__
                         leaves if leaves is not None else flatten((args, kwargs))[0])
            try:
                self._add_path(tree, recorded, on_copies, traced_leaves, orders)
            except FusejitError:
                self._forget_if_empty(key, tree)
                raise
            self._stats["compile_seconds"] += time.perf_counter() - started
            # the entry keeps the program, not this call's result (it would pin one output
            # per signature for the function's life)
            result, recorded.result = recorded.result, None
            if on_device:
                return _back_to_device(recorded, result, (host_args, host_kwargs), leaves,
                                       on_device, (args, kwargs))
            return result

    def _tree(self, key, leaves, args, kwargs) -> TraceTree:
        """The key's entry; a new one is pinned to what the key holds by id."""
        tree = self._entries.get(key)
        if tree is None:
            self._churn.new_key(key)
            tree = self._entries[key] = TraceTree(owner=self._owner)
            tree.pins = pin(self._entries, key, self._by_identity(key, leaves, args, kwargs))
        return tree

    @staticmethod
    def _by_identity(key, leaves, args, kwargs) -> list:
        """The arguments (and static arguments, the key's last part) it holds by id."""
        statics = key[-1][1]
        found = [] if key[0] == "arrays" else \
            by_identity(leaves if leaves is not None else flatten((args, kwargs))[0])
        return found + (statics.by_identity if statics is not None else [])

    def _forget_if_empty(self, key, tree) -> None:
        """A trace that raised leaves no entry behind: the next call traces (and raises) anew."""
        if not tree.paths and tree.eager is None:
            self._entries.pop(key, None)

    def _run_aliased(self, fn, args, kwargs):
        """Arrays the program writes share memory with its other inputs: eager, this call."""
        if not self._stats["aliased_calls"]:
            log.info("%s: an array written in place shares memory with another input; such "
                     "calls run eagerly", self.__qualname__)
        self._stats["aliased_calls"] += 1
        self._stats["eager_calls"] += 1
        return _eager_call(fn, args, kwargs)

    def _too_many_paths(self, tree, fn, args, kwargs):
        if tree.eager is None:
            tree.eager = EagerEntry(self._too_many_paths_reason(tree))
            log.warning("%s: %s; a call that takes none of its traced paths runs eagerly "
                        "from now on", self.__qualname__, tree.eager.reason)
        tree.eager.calls += 1
        self._stats["eager_calls"] += 1
        return _eager_call(fn, args, kwargs)

    def _too_many_paths_reason(self, tree) -> str:
        if tree.replay_errors:  # not only branches: replays raised, and each traced again
            return (f"more than max_traces={self.max_traces} paths for this signature; "
                    f"{tree.replay_errors} replays raised (last: {tree.last_replay_error})")
        if tree.last_check:   # ``x * SCALE`` after SCALE took a new value per call
            return (f"more than max_traces={self.max_traces} paths for this signature "
                    f"(last check failed: {tree.last_check}); pass a value that changes "
                    "from call to call as an argument (a Python float argument is traced)")
        return (f"more than max_traces={self.max_traces} paths (data-dependent branches) "
                "for this signature")

    def _add_path(self, tree, recorded, on_copies=False, leaves=(), orders=None) -> None:
        """``leaves``: the traced call's argument leaves (the watches read them); ``orders``:
        input position -> axis order of the arguments compiled in memory order
        (``input_layouts``)."""
        fallback = recorded.fallback
        if fallback is not None and fallback.retry and \
                self._traces_again(tree, recorded, on_copies):
            return
        if fallback is not None:
            log.info("%s: this signature runs eagerly: %s", self.__qualname__, fallback.reason)
            tree.eager = EagerEntry(fallback.reason, fallback.loc)
            return
        stale = [p for p in tree.paths if _captures_changed(p, recorded)]
        tree.paths = [p for p in tree.paths if p not in stale]
        graph, written, targets = recorded.graph, written_inputs(recorded), ()
        if orders:
            graph, stored = in_memory_order(graph, orders, _unviewed(written, recorded))
            targets = target_orders(recorded, stored, orders) if stored else ()
        try:
            program, pipeline, counts = build_program(
                graph, self.target, guards=getattr(recorded, "guards", ()),
                disk_cache=self.cache, written=written)
        except FusejitError:
            raise
        except Exception as exc:
            if config.strict():
                raise
            log.warning("%s: compiling failed (%s: %s); this signature runs eagerly",
                        self.__qualname__, type(exc).__name__, exc)
            tree.eager = EagerEntry(f"compile error: {type(exc).__name__}: {exc}")
            return
        self._stats["kernels_compiled"] += counts["compiled"]
        self._stats["kernels_reused"] += counts["reused"]
        if not tree.watch:   # the values this trace left, read again before each replay
            tree.watch = _watched(self._watches.values(), recorded.leaf_names, leaves,
                                  self._owner)
        tree.paths = [*tree.paths, CompiledEntry(   # a new list: a call may be reading the old
            recorded, program, pipeline, self._owner,
            orders=tuple(sorted((orders or {}).items())), target_orders=targets,
            source=graph if orders else None)]
        tree.fills = tree.fills or recorded.returns_containers
        tree.held = (*tree.held, *recorded.held)

    def _traces_again(self, tree, recorded, on_copies) -> bool:
        """The trace changed Python state (tracer/pystate.py). Every path of every signature
        was traced under the old state (the same model, another batch shape) and goes; each
        compiles again watching every place a trace changed. The next call traces again,
        unless a call's own trace changed state before (a counter) or the place cannot be
        read again: eager from now on. ``explain``'s traces of copies of the arguments use
        up no retry where only the copies changed."""
        self._watches.update((w.key, w) for w in recorded.watches if w.read is not None)
        for other in self._entries.values():
            other.paths, other.watch = [], ()
        tree.retried = recorded.fallback.reason
        real = not on_copies or not all(w.copied for w in recorded.watches)
        if (tree.consumed and real) or any(w.read is None for w in recorded.watches):
            return False
        tree.consumed = tree.consumed or real
        log.info("%s: the next call traces again: %s", self.__qualname__, tree.retried)
        return True

    # -- introspection -------------------------------------------------------------------
    def cache_info(self) -> dict:
        """Counts of traces, replays and kernels; ``compile_seconds``: tracing, building each
        program and its first run, when Numba compiles (or loads) its kernels."""
        info = dict(self._stats)
        info["compile_seconds"] += sum(getattr(path.program, "first_run_seconds", 0.0)
                                       for tree in list(self._entries.values())
                                       for path in tree.paths)
        info["signatures"] = len(self._entries)
        info["paths"] = sum(len(tree.paths) for tree in self._entries.values())
        info["eager_signatures"] = sum(tree.eager is not None for tree in self._entries.values())
        return info

    def entry_for(self, *args, **kwargs):
        """The cache entry for these arguments, tracing them (on copies) if needed."""
        fn, args, kwargs, statics = self._split_static(args, kwargs)
        try:
            key, _ = make_key(args, kwargs, (self.target, statics))
        except UntraceableInput as exc:
            return TraceTree(eager=EagerEntry(str(exc)))
        if key not in self._entries:
            with self._lock:  # pinned to these arguments, not to the copies traced
                self._tree(key, None, args, kwargs)
            copied_args, copied_kwargs = copy.deepcopy((args, kwargs))
            self._trace_and_compile(fn, key, None, copied_args, copied_kwargs, on_copies=True)
        return self._entries[key]

    def explain(self, *args, **kwargs):
        """What compiling these arguments gives (tracing them on copies if they are new). With
        no arguments, for a function that needs some: the signature traced most recently."""
        from .explain import describe_arguments, explain_entry, explain_error
        if not args and not kwargs and not self._takes_no_arguments():
            if not self._entries:
                raise TypeError(f"{self.__qualname__}.explain() needs the arguments of a call: "
                                "it has not been called yet")
            return explain_entry(self, next(reversed(self._entries.values())))
        signature = describe_arguments(self._signature, args, kwargs)
        try:
            tree = self.entry_for(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 -- a call with these arguments raises it too
            if (config.strict() and isinstance(exc, (FusejitError, *INTERNAL_ERRORS))
                    and not isinstance(exc, UnsupportedError)):
                raise             # fusejit's own bug: the test suite must see it
            return explain_error(self, exc, signature)
        return explain_entry(self, tree, signature)

    def _takes_no_arguments(self) -> bool:
        try:
            self._signature.bind()
        except TypeError:
            return False
        return True

    def ir(self, *args, stage="optimized", **kwargs) -> str:
        from .explain import stage_text
        return stage_text(self.entry_for(*args, **kwargs), stage)


class BoundCompiled:
    # ``obj.method`` of a compiled method, as a bound method is: calls, ``explain`` and ``ir``
    # take ``obj`` as the first argument; other attributes are the compiled function's
    # (``cache_info``). As ``types.MethodType`` gives: the method's docstring, and ``inspect``
    # sees the function bound (its signature without ``self``).

    __slots__ = ("__func__", "__self__", "__weakref__")
    fusejit_kind = "bound"   # read again as a bound method is (``pystate``), by ``==``
    __doc__ = property(lambda self: self.__func__.__doc__)
    __wrapped__ = property(lambda self: types.MethodType(self.__func__.fn, self.__self__))

    def __init__(self, func: CompiledFunction, obj):
        self.__func__, self.__self__ = func, obj

    def __call__(self, *args, **kwargs):
        return self.__func__(self.__self__, *args, **kwargs)

    def explain(self, *args, **kwargs):
        return self.__func__.explain(self.__self__, *args, **kwargs)

    def ir(self, *args, stage="optimized", **kwargs) -> str:
        return self.__func__.ir(self.__self__, *args, stage=stage, **kwargs)

    def entry_for(self, *args, **kwargs):
        return self.__func__.entry_for(self.__self__, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.__func__, name)

    def __eq__(self, other):
        return (type(other) is BoundCompiled and other.__func__ is self.__func__
                and other.__self__ is self.__self__)

    def __hash__(self):
        return hash((id(self.__func__), id(self.__self__)))

    def __reduce__(self):
        return getattr, (self.__self__, self.__func__.__name__)

    def __repr__(self):
        return f"<bound fusejit.CompiledFunction {self.__func__.__qualname__} of " \
               f"{self.__self__!r}>"


class _Static:
    """Carries static arguments inside the key (hashable by value, else by identity)."""

    def __init__(self, values):
        self.values = values
        self.by_identity = []
        try:
            self._key = tuple((k, typed(v)) for k, v in sorted(values.items()))
            self._hash = hash(self._key)
        except TypeError:
            self._key = tuple((k, id(v)) for k, v in sorted(values.items()))
            self._hash = hash(self._key)
            self.by_identity = list(values.values())

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return isinstance(other, _Static) and self._key == other._key


def _unviewed(written: dict, recorded) -> dict:
    """The arrays of ``written`` whose final value no result reads: ``written_inputs`` left
    out results that are the value; views of a copy of it (``_take_copied_views``) read it too."""
    read = set()
    for leaf in recorded.out_leaves:
        if leaf.kind == "view" and leaf.view == "copied":
            read.update((leaf.index, leaf.const[0]))
    return {out: position for out, position in written.items() if out not in read}


def _watched(watches, names, leaves, owner) -> tuple:
    """(Watch, its root's leaf index: -1 the owner, None none; its value now) for the watches
    that apply to this signature: an argument watch whose root this signature has none of
    (another pytree layout) reads nothing here."""
    index = {name: i for i, name in reversed(list(enumerate(names)))}
    found = []
    for watch in watches:
        at = None if watch.root is None else -1 if watch.root == pystate.OWNER else \
            index.get(watch.root)
        if watch.root is not None and at is None:
            continue
        root = None if at is None else owner if at < 0 else leaves[at]
        found.append((watch, at, watch.read(root)))
    return tuple(found)


def _containers(args, kwargs) -> list:
    """The ids of the arguments' dicts, lists and tuples, as ``make_key`` lists them."""
    containers: list = []
    make_key(args, kwargs, None, containers)
    return containers


def _captures_changed(path, recorded) -> bool:
    """A path traced when a captured array had another shape or dtype can never apply again.
    Constants are the path's own (``np.ones(t + 1)`` after a guard on ``t``), not the caller's."""
    old = [c.type for c in path.trace.captures if c.source[:1] != ("const",)]
    new = [c.type for c in recorded.captures if c.source[:1] != ("const",)]
    return len(old) == len(new) and old != new


def _eager_call(fn, args, kwargs):
    """The plain body. NumPy code cannot run on device arrays: given some, it runs on host
    copies, each copied back after (the body may have written into any), and its results go
    to the device."""
    host_args, host_kwargs, on_device = host_copies(args, kwargs)
    if not on_device:
        return fn(*args, **kwargs)
    result = fn(*host_args, **host_kwargs)
    leaves, host_leaves = flatten((args, kwargs))[0], flatten((host_args, host_kwargs))[0]
    for index in on_device:
        copy_into(leaves[index], host_leaves[index])
    return to_device(result)


def _back_to_device(recorded, result, host_tree, leaves, on_device, tree=None):
    """The body ran on host copies of device arrays: replay its writes and return device data.
    ``tree``: the caller's (args, kwargs), for the items the body stored into their containers
    (it stored them into the host copies' containers)."""
    host_leaves = flatten(host_tree)[0]
    if recorded.fallback is None and tree is not None:
        for store in recorded.item_stores:
            host, mine = container_at(store.path, *host_tree), container_at(store.path, *tree)
            for key in store.keys:
                mine[key] = to_device(host[key])
    if recorded.fallback is not None:   # no recorded writes: any argument may have changed
        written = set(on_device)
    else:
        written = {m.index for m in recorded.mutations if m.target == "arg"} & set(on_device)
    for index in sorted(written):
        copy_into(leaves[index], host_leaves[index])
    return to_device(result)


def _release(exc: BaseException) -> None:
    """Concrete values in place of the proxies an exception the body raised holds
    (``raise ValueError(x * 2)``), and those it caused or raised while handling."""
    from ..tracer import returned_objects
    for _ in range(8):
        if exc is None:
            return
        exc.args = tuple(returned_objects.concrete(arg) for arg in exc.args)
        returned_objects.release(exc)
        exc = exc.__cause__ or exc.__context__


def _note_user_line(exc: BaseException, name: str) -> None:
    """NumPy's own exception, unchanged in type and message, plus a note naming the user's line.

    (The body ran under NumPy while fusejit traced it, so the error is exactly eager NumPy's.)"""
    import os
    import sysconfig

    import numpy
    skip = tuple(os.path.dirname(m.__file__) for m in (numpy, _fusejit_package()))
    stdlib = sysconfig.get_paths()["stdlib"] + os.sep     # json, decimal: the caller's line
    frame, where = exc.__traceback__, None
    while frame is not None:
        filename = frame.tb_frame.f_code.co_filename
        library = (filename.startswith(stdlib) and "-packages" not in filename
                   or filename.endswith(".pyx"))         # Cython: NumPy's random module
        if not filename.startswith(skip) and "scipy" not in filename and not library:
            where = f"{filename}:{frame.tb_lineno} ({frame.tb_frame.f_code.co_name})"
        frame = frame.tb_next
    if where is not None and hasattr(exc, "add_note"):
        exc.add_note(f"fusejit: raised at {where} while tracing {name}")


FLOAT_PROXY_NOTE = (
    "fusejit: while tracing, a Python float argument is a proxy (isinstance(lr, float) holds, "
    "type(lr) is fusejit's Tracer): code that needs a real float object (json.dumps, "
    "decimal.Decimal, float.hex, pickle, statistics) refuses it with a TypeError. Use it "
    "outside the compiled function, or name the argument in static_argnames (each value is "
    "then its own signature)")


def _note_float_proxies(exc: BaseException, leaves) -> None:
    """A note on a TypeError (or PicklingError) raised while a Python float argument was
    traced as a proxy: C code's exact type checks refuse it, with messages that name
    ``float`` (``Object of type float is not JSON serializable``) and puzzle the user."""
    import pickle
    text = str(exc)
    if isinstance(exc, (TypeError, pickle.PicklingError)) and hasattr(exc, "add_note") and \
            ("float" in text or "Tracer" in text or isinstance(exc, pickle.PicklingError)) and \
            any(type(leaf) is float for leaf in leaves):
        exc.add_note(FLOAT_PROXY_NOTE)


def _fusejit_package():
    import fusejit
    return fusejit
