"""What a cache key maps to: a compiled program, or the reason that signature runs eagerly."""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field

import numpy as np
from numba.core.errors import NumbaError

from .. import config
from ..codegen.recycle import Recycled
from ..ir import Graph
from ..logs import topic
from ..tracer import Trace, flatten, layouts, pystate, unflatten
from ..tracer.captures import ContainerChanged
from ..tracer.returned_views import apply_views
from . import undo
from .deferred_writes import check_writeable, write_all
from .device import is_device_array, overlaps_device
from .fast_entry import LAID_OUT_OTHERWISE, argument_view, fast_entry, host_scalar
from .fast_entry import as_array as _as_array
from .item_stores import Stored
from .program import GuardFailed, Program

log = topic("runtime")
guard_log = topic("guards")
RETRACE = object()  # a captured array changed shape or dtype: trace this signature again
MISS = object()     # no compiled path's guards hold for this call
# Replay errors that are fusejit's own bugs, never NumPy's answer: raised under strict mode
# (FUSEJIT_STRICT=1, the test suite's); otherwise the path is dropped and the signature runs
# eagerly. Other errors trace again, to raise NumPy's.
INTERNAL_ERRORS = (SyntaxError, NameError, AttributeError, AssertionError)
ALIASED = object()  # an array the program writes shares memory with another input: eager
# A captured global or attribute is no longer an array (rebound to a float): eager, this call.
# A trace would freeze the number with no guard, and answer for every later value.
NOT_AN_ARRAY = object()
# Plain Python state the compiling trace left (``pystate.Watch``) is not what it was: this call
# runs eagerly (``self.last_batch = len(x)`` set by a call of another signature)
STATE_MOVED = object()


@dataclass
class CompiledEntry:
    trace: Trace
    program: Program
    pipeline: object                   # the PipelineRun (stats per pass, optimized graph)
    owner: object = None               # fn.__self__ for a compiled bound method
    hits: int = 0
    orders: tuple = ()   # (input position, axis order): taken in memory order (input_layouts)
    target_orders: tuple = ()   # per mutation: the axis order its target is written in, or None
    source: Graph | None = None  # the graph the passes ran on, where not the trace's

    @property
    def graph(self) -> Graph:
        """The graph the passes ran on: the trace's, or it taking arguments in memory order."""
        return self.source if self.source is not None else self.trace.graph

    def run(self, leaves):
        result = (self.fast_run or self._run)(leaves)  # GuardFailed raises before a hit
        if result is not RETRACE and result is not ALIASED and result is not NOT_AN_ARRAY:
            self.hits += 1
            if self.trace.item_stores:   # (result, stored items): the call stores them
                return Stored(*result, self.trace.item_stores)
        return result

    def _run(self, leaves):
        """The general path: every kind of trace, every check made in full."""
        trace = self.trace
        if trace.layouts is not None and not layouts.hold(trace.layouts, leaves):
            raise GuardFailed(LAID_OUT_OTHERWISE)
        for read in trace.plain_reads:   # ``x * SCALE``: a global or closure number, as read
            if not read.holds():
                raise GuardFailed(read.failure())
        for read in trace.attribute_reads:   # ``if self.bias is not None``, ``self.scale``
            if not read.holds(leaves, self.owner):
                raise GuardFailed(read.failure(leaves, self.owner))
        inputs = [leaf if type(leaf) is np.ndarray else _as_array(leaf)
                  for leaf in map(leaves.__getitem__, trace.arg_leaves)]
        for position, order in self._orders[0]:
            inputs[position] = inputs[position].transpose(order)
        try:
            for check in trace.containers:
                check.verify(leaves)
        except ContainerChanged as changed:   # another path may have looped over those items
            raise GuardFailed(str(changed)) from None
        captured = [c.resolve(leaves) for c in trace.captures] if trace.captures else ()
        for capture, array in zip(trace.captures, captured, strict=True):
            if array is not None and type(array) is not np.ndarray:   # a subclass too
                return NOT_AN_ARRAY   # (``np.ma``, ``np.matrix``: NumPy's own methods)
            if array is None or array.shape != capture.type.shape or \
                    array.dtype != capture.type.dtype:
                return RETRACE
            if capture.aliases and not capture.aliases_hold(leaves, array):
                raise GuardFailed(f"{capture.description} and its aliases no longer hold "
                                  "the same array")
        if trace.capture_layouts and not layouts.hold(trace.capture_layouts, captured):
            raise GuardFailed(LAID_OUT_OTHERWISE)
        if trace.mutations and (_aliased_writes(trace, leaves, inputs, captured)
                                or _written_overlaps_itself(trace, leaves, captured)):
            return ALIASED
        rebound = _rebind_targets(trace.attr_writes, leaves, self.owner) \
            if trace.attr_writes else ()
        if rebound is None:
            return RETRACE
        targets = [leaves[m.index] if m.target == "arg" else captured[m.index]
                   for m in trace.mutations] if trace.mutations else ()
        if self.target_orders:   # final values computed in the argument's memory order
            targets = [t if order is None else t.transpose(order)
                       for t, order in zip(targets, self.target_orders, strict=True)]
        if self.program.donated:   # a kernel stores into one: all must take the writes first
            check_writeable(targets)
        journal = undo.recording() if self.program.caller_writes else contextlib.nullcontext()
        with journal:   # writes into the caller's arrays are undone if the replay fails
            values = self.program.run(inputs + self._in_order(captured) if captured else inputs)
            if trace.mutations:
                write_all(self.program, [(target, m.output) for target, m in
                                         zip(targets, trace.mutations, strict=True)], values)
        for write, target in zip(trace.attr_writes, rebound, strict=True):
            _replay_attr_write(write, target, values, leaves, captured)
        if self.plain_outputs:  # every output a plain array: skip the per-leaf dispatch
            return unflatten(trace.out_treedef, [values[leaf.index] for leaf in trace.out_leaves])
        results = [_output(leaf, values, leaves, captured) for leaf in trace.out_leaves]
        if self.copied_views:
            _take_copied_views(trace.out_leaves, values, results)
        return unflatten(trace.out_treedef, results)

    @functools.cached_property
    def _orders(self) -> tuple[tuple, tuple]:
        """``orders`` split: (argument position, order) and (capture index, order)."""
        arguments = len(self.trace.arg_leaves)
        return (tuple((p, o) for p, o in self.orders if p < arguments),
                tuple((p - arguments, o) for p, o in self.orders if p >= arguments))

    def _in_order(self, captured) -> list:
        """The captured arrays as the program takes them: those of ``orders`` transposed into
        their memory order (``input_layouts.capture_orders``)."""
        captured = list(captured)
        for k, order in self._orders[1]:
            captured[k] = captured[k].transpose(order)
        return captured

    @functools.cached_property
    def fast_run(self):
        """``_run`` as generated straight-line Python (``fast_entry``), or None for the
        traces only the general path serves."""
        return fast_entry(self, self._run)

    @functools.cached_property
    def copied_views(self) -> bool:
        return any(leaf.kind == "view" and leaf.view == "copied"
                   for leaf in self.trace.out_leaves)

    @functools.cached_property
    def plain_outputs(self) -> bool:
        return all(leaf.kind == "value" and not (leaf.scalar or leaf.pyfloat or leaf.pyint
                                                 or leaf.pybool or leaf.view)
                   for leaf in self.trace.out_leaves)


@dataclass
class EagerEntry:
    reason: str
    loc: object = None
    calls: int = field(default=0)


@dataclass
class TraceTree:
    """Every compiled path of one signature, tried in order; guards pick the path."""

    paths: list[CompiledEntry] = field(default_factory=list)
    eager: EagerEntry | None = None
    guard_failures: int = 0
    replay_errors: int = 0
    last_replay_error: str = ""   # "ValueError: ..." of the latest replay that raised
    last_check: str = ""   # the latest failed check other than a data guard (a global moved)
    pins: list = field(default_factory=list)  # what the key holds by id (key.pin)
    fills: bool = False   # a path returns the caller's containers (tracer.returned_containers)
    held: tuple = ()   # the paths' HeldContainer markers, each checked before a replay
    # (relations.Place..., relation): the containers whose relation to the arguments' own the
    # paths rest on, and the relation they were traced under (calls with another key apart);
    # set before the path that brought a new place joins ``paths`` (a new list each time)
    related: tuple | None = None
    # Python state a trace changed (tracer/pystate.py, ``Fallback.retry``): why, whether a
    # call's own trace did (a second change runs eagerly), and (Watch, its root's leaf index
    # here: -1 the owner, None none, value the compiling trace left) for each place a trace
    # of the function changed, checked before every replay
    retried: str = ""
    consumed: bool = False
    watch: tuple = ()
    owner: object = None   # fn.__self__ of a compiled bound method (the watches read it)

    def run(self, leaves, paths=None):
        """``paths``: those read before ``related`` was checked (``paths`` by default)."""
        if self.watch and not self._state_holds(leaves):
            return STATE_MOVED
        for path in self.paths if paths is None else paths:
            try:
                return path.run(leaves)   # may be ALIASED: no other path would do better
            except GuardFailed as failed:
                self.guard_failures += 1
                guard_log.debug("guard failed: %s", failed.args[0])
                if isinstance(failed.args[0], str):
                    self.last_check = failed.args[0]
            except NumbaError as exc:  # a kernel compiles at its first run, and this one failed
                self._drop(path, exc, f"a kernel failed to compile in Numba ({_one_line(exc)})")
                return MISS
            except INTERNAL_ERRORS as exc:  # tracing again would only build the same program
                self._drop(path, exc, f"internal: replaying raised {_one_line(exc)}")
                return MISS
            except Exception as exc:  # noqa: BLE001 -- tracing again raises NumPy's error
                # a later path whose guards hold and that runs through is NumPy's answer (this
                # one may have failed in a step scheduled before its failing guard)
                self.replay_errors += 1
                self.last_replay_error = _one_line(exc)
        return MISS

    def _state_holds(self, leaves) -> bool:
        """The Python state a trace changed is as the compiling trace left it."""
        for watch, index, value in self.watch:
            root = None if index is None else self.owner if index < 0 else leaves[index]
            if not pystate.same(value, watch.read(root)):
                return False
        return True

    def _drop(self, path: CompiledEntry, exc: Exception, reason: str) -> None:
        """A path that cannot run (its kernel does not compile, or replaying it hits a fusejit
        bug): the signature runs eagerly from now on, without tracing again."""
        if config.strict():
            raise exc
        log.warning("%s: %s; this signature runs eagerly", path.program.graph.name, reason)
        self.paths = [p for p in self.paths if p is not path]
        if self.eager is None:
            self.eager = EagerEntry(reason)


def _one_line(exc: Exception) -> str:
    first_line = next(iter(str(exc).strip().splitlines()), "")
    return f"{type(exc).__name__}: {first_line}"


def _aliased_writes(trace: Trace, leaves, inputs, captured) -> bool:
    """Whether an array the program writes into (``b += 1``, ``out=b``) shares memory with
    another of its inputs or written arrays (``f(x, x)``, ``f(z[1:], z[:3])``). The program
    computes every value from the inputs before it writes back, where NumPy's later reads see
    the earlier writes; such a call runs eagerly. Only arrays with the same owner (or one
    that is not an ndarray: a buffer from ``np.frombuffer``) are compared."""
    if not _may_share_owners(trace, leaves, inputs, captured):
        return False
    arrays: dict[tuple, np.ndarray] = {}
    arrays.update((("arg", index), array)
                  for index, array in zip(trace.arg_leaves, inputs, strict=True))
    arrays.update((("capture", k), array) for k, array in enumerate(captured))
    targets = {(m.target, m.index): leaves[m.index] if m.target == "arg" else captured[m.index]
               for m in trace.mutations}
    arrays.update(targets)
    by_owner: dict[int, list] = {}
    for key, array in arrays.items():
        if isinstance(array, np.ndarray):
            by_owner.setdefault(_owner(array), []).append(key)
    for key, target in targets.items():
        if is_device_array(target) and overlaps_device(
                target, [a for other, a in arrays.items() if other != key]):
            return True   # ``f(d, d)`` with device arrays: run on host copies sharing memory
        if not isinstance(target, np.ndarray):
            continue
        owner = _owner(target)
        near = by_owner.get(owner, []) + (by_owner.get(0, []) if owner else [])
        if any(other != key and _share_elements(target, arrays[other]) for other in near):
            return True
    return False


_EXACT_WORK = 10_000   # np.shares_memory's bound on the work it may do


def _share_elements(a, b) -> bool:
    """Whether ``a`` and ``b`` have an element in common: two columns of one array
    (``f(z[:, 0], z[:, 1])``) overlap in their bounds but share none. Where that question
    takes NumPy more than a little work, they are taken to share one."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return np.shares_memory(a, b, max_work=_EXACT_WORK)
    except np.exceptions.TooHardError:
        return True


def _written_overlaps_itself(trace: Trace, leaves, captured) -> bool:
    """A written array two of whose elements share memory (``sliding_window_view(b, 3,
    writeable=True)``): NumPy's statements see each other's writes through the overlap, the
    program's write-back does not. Such a call runs eagerly."""
    for m in trace.mutations:
        target = leaves[m.index] if m.target == "arg" else captured[m.index]
        if isinstance(target, np.ndarray) and overlaps_itself(target):
            return True
    return False


def _may_share_owners(trace: Trace, leaves, inputs, captured) -> bool:
    """The replay's common case first: every input and captured array owns its memory or views
    an array no other one views, and every written array is one of them."""
    if any(m.target == "arg" and type(leaves[m.index]) is not np.ndarray
           for m in trace.mutations):
        return True
    owners = set()
    for array in (*inputs, *captured):
        if isinstance(array, np.ndarray):
            owner = _owner(array)
            if owner == 0 or owner in owners:
                return True
            owners.add(owner)
    return False


def overlaps_itself(array: np.ndarray) -> bool:
    """Whether two elements of ``array`` may share memory (``sliding_window_view``, a stride
    of 0): a kernel storing element by element would read what it stored; NumPy buffers such
    an update. Conservative: dims sorted by stride must each step over all smaller ones."""
    flags = array.flags
    if flags.c_contiguous or flags.f_contiguous:
        return False
    span = array.itemsize
    for stride, size in sorted((abs(s), n) for s, n in zip(array.strides, array.shape,
                                                             strict=True) if n > 1):
        if stride < span:
            return True
        span += stride * (size - 1)
    return False


def _owner(array: np.ndarray) -> int:
    """id of the ndarray (or recycled output's ``Block``) that owns ``array``'s memory; 0 when
    another object does."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    base = array.base
    if base is None:
        return id(array)
    return id(base) if isinstance(base, Recycled) else 0


def _output(leaf, values, leaves, captured):
    if leaf.kind == "value":
        value = values[leaf.index]
        if leaf.pyfloat:
            return float(host_scalar(value))
        if leaf.pyint or leaf.pybool:
            return int(host_scalar(value)) if leaf.pyint else bool(host_scalar(value))
        if leaf.view:
            return argument_view(value, leaf.view)
        return value[()] if leaf.scalar else value
    if leaf.kind == "arg":
        return argument_view(leaves[leaf.index], leaf.view) if leaf.view else \
            leaves[leaf.index]
    if leaf.kind == "capture":
        return captured[leaf.index]
    if leaf.kind == "view":
        if leaf.view == "copied":    # views of one copy: ``_take_copied_views``
            return None
        return apply_views(leaves[leaf.index] if leaf.view == "arg" else captured[leaf.index],
                           leaf.views)
    return leaf.const.copy(order="K") if isinstance(leaf.const, np.ndarray) else leaf.const


def _take_copied_views(out_leaves, values, results: list) -> None:
    """Results that are views of one copy of an output, made once per call (NumPy copied an
    array the program's results are views of: ``y.ravel()`` of an F-ordered ``y``); one
    object where NumPy returned one twice. A device array is handed out as it is."""
    copies: dict = {}
    for position, leaf in enumerate(out_leaves):
        if leaf.kind != "view" or leaf.view != "copied":
            continue
        own, same = leaf.const
        base = values[leaf.index]
        if same != position:
            results[position] = results[same]
        elif type(base) is not np.ndarray:
            results[position] = values[own]
        else:
            fresh = leaf.index not in copies
            if fresh:
                copies[leaf.index] = base.copy()
            copy = copies[leaf.index]
            result = apply_views(copy, leaf.views)
            if result is copy and not fresh:   # another result that is all of the copy
                result = copy.view()
            results[position] = result


def _rebind_targets(writes, leaves, owner) -> list | None:
    """The object each attribute rebinding sets, found again by its path from the argument
    (``net.layers[1]``); None (trace again) when a path no longer leads to an object, or an
    attribute no longer holds a container of the structure the trace saw (``m.losses =
    m.losses + [loss]`` grows it on every call)."""
    targets = []
    for write in writes:
        target = owner if write.leaf is None else leaves[write.leaf]
        try:
            for step, key in write.steps:
                target = getattr(target, key) if step == "attr" else target[key]
            if write.old_tree is not None and \
                    flatten(getattr(target, write.name))[1] != write.old_tree:
                return None
        except (AttributeError, LookupError, TypeError):
            return None
        targets.append(target)
    return targets


def _replay_attr_write(write, target, values, leaves, captured) -> None:
    """``self.w = self.w - lr * g`` in the body: rebind the attribute after every replay;
    ``self.m[k] = b1 * self.m[k] + g``: store the items into the list or dict it holds. An
    argument or captured array stored as it is goes there itself (``self.cache = (x, h)``)."""
    scalars = write.scalars or (False,) * len(write.outputs)
    items = [_attr_item(source, scalar, values, leaves, captured)
             for source, scalar in zip(write.outputs, scalars, strict=True)]
    if write.keys:
        container = getattr(target, write.name)
        for key, item in zip(write.keys, items, strict=True):
            container[key] = item
        return
    setattr(target, write.name, unflatten(write.treedef, items))


def _attr_item(source, scalar: bool, values, leaves, captured):
    if type(source) is tuple:
        kind, index = source
        return leaves[index] if kind == "arg" else captured[index]
    return values[source][()] if scalar else values[source]
