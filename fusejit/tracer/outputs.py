"""Closing a trace: output leaves, mutations of arguments and captures, the final Graph."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir import Graph, Node, Var, ops
from . import returned_objects
from .api import Mutation, OutputLeaf, Trace
from .captures import Capture, container_checks
from .context import unwrap
from .dynamic import settle
from .folding import fold_constants
from .guards import Guard
from .masked import check_masked_stores
from .pytree import flatten, unflatten
from .returned_views import between_results, view_chain, written
from .scalars import TracedFloat
from .side_effects import detect
from .text import TracedText
from .tracer import CapturedTracer, Tracer


def finish(recorder, result, proxies: dict, arg_leaves: tuple, snaps=()) -> Trace:
    out_leaves_raw, out_treedef = flatten(result)
    concrete = unflatten(out_treedef, [_concrete(leaf) for leaf in out_leaves_raw])
    _check_constants(recorder)
    _check_untraced_results(recorder, out_leaves_raw)
    _check_written(recorder)
    outputs: list = []
    pending = detect(recorder, snaps)
    attr_writes: tuple = ()
    out_leaves: tuple = ()
    mutations: tuple = ()
    guards: tuple = ()
    if recorder.fallback is not None:   # this call's result is the user's: no proxies in it
        for leaf in out_leaves_raw:
            returned_objects.release(leaf)
    else:
        returned = _returned_floats(recorder)
        writes = written(recorder, proxies)
        out_leaves = _as_views(between_results(recorder, tuple(
            _output_leaf(recorder, leaf, proxies, outputs, returned, writes)
            for leaf in out_leaves_raw), out_leaves_raw, outputs), out_leaves_raw, proxies)
        mutations = tuple(_mutations(writes, outputs))
        attr_writes = tuple(replace(w, outputs=tuple(
            _attr_source(recorder, t.ir_var, outputs, arg_leaves, mutations)
            for t in w.outputs)) for w in pending)
        check_masked_stores(recorder)
        settle(recorder)
        guards = _guards(recorder, outputs, returned)
        fold_constants(recorder, outputs)
    captures = tuple(Capture(c.description, c.var.type, c.source, c.steps, recorder.aliases(c))
                     for c in recorder.captures)
    containers = container_checks([(path.source, path.steps, c.description) for c in captures
                                   for path in (c, *c.aliases)], recorder.leaves)
    inputs = list(recorder.inputs) + [c.var for c in recorder.captures]
    graph = Graph(recorder.name, inputs, recorder.nodes, outputs)
    return Trace(graph, concrete, arg_leaves, captures, out_treedef, out_leaves, mutations,
                 recorder.fallback, guards, attr_writes,
                 watches=tuple(recorder.watches), leaf_names=tuple(recorder.leaf_names),
                 containers=containers)


def _concrete(leaf):
    """The traced call's result: a returned ``TracedText`` as the plain ``str`` eager
    Python returns (``type(s) is str``); a frozenset or tuple subclass the body made, as one
    of plain values (``returned_objects.release`` gives a mutable container's items theirs in
    place)."""
    if isinstance(leaf, TracedText):
        return str.__str__(leaf)
    if isinstance(leaf, (tuple, frozenset)) and type(leaf) is not tuple and \
            not hasattr(type(leaf), "_make") and returned_objects.holds_proxies(leaf, 1):
        return returned_objects.rebuilt(leaf, [unwrap(item) for item in leaf])
    return unwrap(leaf)


def _new_view(value, of) -> bool:
    return (type(value) is np.ndarray and value is not of and value.shape == np.shape(of)
            and isinstance(of, np.ndarray) and np.shares_memory(value, of))


def _as_views(leaves: tuple, raw: list, proxies: dict) -> tuple:
    """How the runtime hands out array results that share one program output, or that NumPy
    made read-only. The first result of an output is the output itself, made read-only where
    NumPy's was (``np.broadcast_to(y, s)``; not a view of an argument, whose flag follows the
    argument's); a later one is that same object (``return y, y``), a new view
    (``return y, y.reshape(y.shape)``), or a copy where NumPy made two arrays
    (``return x + 1, x + 1``, one output once common subexpressions merged)."""
    first: dict = {}
    arguments = [proxy.value for proxy in proxies.values()]
    values = [obj.value if isinstance(obj, Tracer) else None for obj in raw]
    writeable = {leaf.index for leaf, value in zip(leaves, values, strict=True)
                 if leaf.kind == "value" and type(value) is np.ndarray and value.flags.writeable}
    result = []
    for leaf, value in zip(leaves, values, strict=True):
        if leaf.kind == "value" and type(value) is np.ndarray:
            earlier, first_leaf = first.setdefault(leaf.index, (value, None))
            if earlier is value:
                leaf = first_leaf or _frozen(leaf, value, arguments, leaf.index in writeable)
                first[leaf.index] = (value, leaf)
            elif not np.may_share_memory(earlier, value):
                leaf = replace(leaf, view="copy")
            else:
                leaf = replace(leaf, view="rw" if value.flags.writeable else "ro")
        result.append(leaf)
    return tuple(result)


def _frozen(leaf, value, arguments, shared: bool):
    """The output itself, made read-only where NumPy's result was; a read-only view of it
    where another result NumPy made writeable shares it (``b = np.broadcast_to(y, y.shape);
    return b, y``)."""
    if value.flags.writeable or any(np.may_share_memory(value, a) for a in arguments
                                    if isinstance(a, np.ndarray)):
        return leaf
    return replace(leaf, view="ro" if shared else "frozen")


def _argument_itself(leaf, proxies) -> int | None:
    """The argument ``leaf`` is: its proxy, or the one argument whose array NumPy returned
    itself (``np.squeeze(x)`` with no unit axis, ``np.atleast_1d(x)``,
    ``np.nan_to_num(x, copy=False)`` after ``x += 1``); None when no argument, or several
    that are one array (``f(a, a)``: which one a replay returns is not known), is."""
    for index, proxy in proxies.items():
        if proxy is leaf:
            return index
    if type(leaf.value) is not np.ndarray:
        return None
    same = [index for index, proxy in proxies.items() if proxy.value is leaf.value]
    return same[0] if len(same) == 1 else None


def _attr_source(recorder, var, outputs, arg_leaves, mutations):
    """Where a replay takes a value stored on an object: ("arg", leaf index) or ("capture",
    index) for an argument or captured array itself, also after the body wrote into it (a
    replay's writes are in it by then); else its graph output index."""
    for position, input_var in enumerate(recorder.inputs):
        if input_var is var:
            return ("arg", arg_leaves[position])
    for index, capture in enumerate(recorder.captures):
        if capture.var is var:
            return ("capture", index)
    output = _value_output(recorder, var, outputs)
    for m in mutations:
        if m.output == output:
            return (m.target, m.index)
    return output


def _value_output(recorder, var, outputs) -> int:
    """The graph output index of ``var``: reused when it already is one; inputs are copied."""
    for index, value in enumerate(outputs):
        if value is var:
            return index
    if var in recorder.inputs or any(var is c.var for c in recorder.captures):
        var = recorder.emit("copy", [var])  # NumPy returned a new array, not the input
    outputs.append(var)
    return len(outputs) - 1


def _materialize_broadcast(recorder, var) -> None:
    """Where ``var`` is a broadcast or a view of one (``np.add(s, 1, out=t); return t[1:]``),
    the broadcast's own value becomes a copy of it: the program would hand out a read-only
    view with zero strides where NumPy wrote the array in full, and every result or view of
    it then shares that one copy, as NumPy's share ``t``."""
    producer = {out: index for index, node in enumerate(recorder.nodes) for out in node.outputs}
    index = producer.get(var)
    while index is not None and recorder.nodes[index].op != "broadcast" \
            and ops.REGISTRY[recorder.nodes[index].op].kind == ops.VIEW:
        index = producer.get(recorder.nodes[index].inputs[0])
    if index is None or recorder.nodes[index].op != "broadcast":
        return
    node = recorder.nodes[index]
    raw = Var(node.out.type)
    recorder.nodes[index:index + 1] = [node.replace(outputs=(raw,)),
                                       Node("copy", (raw,), node.outputs, {}, node.loc)]


def _returned_floats(recorder) -> dict:
    """id(float object) -> its guard record, for ``return float(t)``."""
    return {id(g.returned): g for g in recorder.guards if g.returned is not None}


def _guards(recorder, outputs, returned) -> tuple:
    result = []
    for record in recorder.guards:
        if record.returned is not None and id(record.returned) not in returned:
            continue  # the float itself is returned: an output, not a branch
        index = _value_output(recorder, record.var, outputs)
        result.append(Guard(index, record.convert, record.expected, record.loc))
    return tuple(result)


RETURNED_TEXT = ("a string formatted from a traced value is returned (its text would be "
                 "this trace's on every replay)")


def _formatted_into(recorder, text) -> tuple | None:
    """The text of a traced value (``str(x)``, or within an f-string such as
    ``f"loss={x}"``) that a returned string holds, with the line that made it; None if it
    holds none. A string that merely contains the same characters runs eagerly too: slower,
    never wrong."""
    if type(text) is not str and not isinstance(text, TracedText):
        return None
    return next(((part, loc) for part, loc in recorder.formatted.values()
                 if part and part in text), None)


def _output_leaf(recorder, leaf, proxies, outputs, returned, writes) -> OutputLeaf:
    made = _formatted_into(recorder, leaf)
    if made is not None or isinstance(leaf, TracedText):
        recorder.set_fallback(RETURNED_TEXT, made[1] if made is not None else None)
    if isinstance(leaf, TracedFloat) and getattr(leaf, "tracer", None) is not None \
            and leaf.tracer.recorder is recorder:
        leaf = leaf.tracer
    elif isinstance(leaf, TracedFloat):   # ``type(v)(total)`` (``statistics.mean``): a float
        leaf = float.__float__(leaf)
    elif type(leaf) is float and id(leaf) in returned and returned[id(leaf)].returned is leaf:
        index = _value_output(recorder, returned.pop(id(leaf)).var, outputs)
        return OutputLeaf("value", index, pyfloat=True)
    if isinstance(leaf, CapturedTracer):    # ``return self.w``: the array itself, as eager
        leaf = leaf.registered()
    if isinstance(leaf, Tracer):
        index = _argument_itself(leaf, proxies)
        if index is not None:
            return OutputLeaf("arg", index)
        for index, proxy in proxies.items():
            if proxy.ir_var is leaf.ir_var and _new_view(leaf.value, proxy.value):
                # x.reshape(x.shape), x.ravel(), np.broadcast_to(x, x.shape): NumPy returned
                # a new view of the argument, which the runtime takes again every call
                # (read-only where NumPy's was and the argument is not: a broadcast view)
                frozen = id(leaf.value) in recorder.read_only or (
                    proxy.value.flags.writeable and not leaf.value.flags.writeable)
                return OutputLeaf("arg", index, view="ro" if frozen else "rw")
        chain = view_chain(recorder, leaf, writes)
        if chain is not None:  # ``x[0] += y; return x[1:]``: a view of the user's x, as eager
            target, index, views = chain
            return OutputLeaf("view", index, view=target, views=views)
        value = leaf.value
        if type(value) is np.ndarray and value.flags.writeable:
            _materialize_broadcast(recorder, leaf.ir_var)
        index = _value_output(recorder, leaf.ir_var, outputs)
        return OutputLeaf("value", index, scalar=isinstance(value, np.generic),
                          pyfloat=type(value) is float, pyint=type(value) is int,
                          pybool=type(value) is bool)
    if type(leaf) is np.ndarray:
        entry = recorder.raw.get(id(leaf))
        if entry is not None and entry[0] is leaf and entry[2] is not None:
            record = recorder.captures[entry[2]]
            if record.source[0] != "const":
                return OutputLeaf("capture", entry[2])
            if entry[1] is not record.var:  # a constant written by traced ops
                outputs.append(entry[1])
                return OutputLeaf("value", len(outputs) - 1)
        return OutputLeaf("const", const=leaf.copy(order="K"))
    returned_objects.check(recorder, leaf)
    return OutputLeaf("const", const=leaf)


def _mutations(writes, outputs):
    for var, target, index, _ in writes:
        outputs.append(var)
        yield Mutation(target, index, len(outputs) - 1)


def _untraced_result(leaf) -> str:
    """The reason, naming the result: a literal (``return 0.0``) cannot be told from a value
    untraced NumPy code computed from a written array (``float(acc.sum())``)."""
    what = (f"an array {leaf.dtype}{list(leaf.shape)}" if isinstance(leaf, np.ndarray)
            else f"{type(leaf).__name__} {leaf!r}")
    return (f"the body returned {what}, which no traced value computed, after traced values "
            "were written into an array that is not an argument: it may have been computed "
            "from that array, and a replay would return the trace's value (return a traced "
            "value, or the number from outside the compiled function)")


def _check_untraced_results(recorder, leaves) -> None:
    """After traced values were written into a NumPy array, a result NumPy computed without a
    traced value may have read it (``acc += x; return acc.sum()``): run eagerly."""
    if not recorder.written:
        return
    returned = _returned_floats(recorder)   # ``return float(loss)``: an output, traced
    for leaf in leaves:
        if isinstance(leaf, (Tracer, TracedFloat)) or not isinstance(leaf, (np.ndarray,
                                                                          np.generic, float)):
            continue
        if type(leaf) is float and id(leaf) in returned:
            continue
        entry = recorder.raw.get(id(leaf)) if type(leaf) is np.ndarray else None
        if entry is None or entry[0] is not leaf:
            recorder.set_fallback(_untraced_result(leaf), None)
            return


def _check_written(recorder) -> None:
    """Untraced NumPy code that changed an array after traced values were written into it
    (``w[0] -= g; w[:, 1] *= 2``) ran only while tracing: replays would lose its change. Two
    captured arrays that share memory, one of them written (``w[0] -= g; w[:, 1] += g``), are
    separate program inputs, read before any write is replayed: run eagerly."""
    live = [record.live for record in recorder.captures]
    for array, after in recorder.written.values():
        if not np.array_equal(array, after, equal_nan=array.dtype.kind in "fc"):
            recorder.set_fallback("untraced NumPy code changed an array after traced values "
                                  "were written into it (it runs only while tracing)", None)
            return
        if any(other is not array and np.may_share_memory(other, array) for other in live):
            recorder.set_fallback("traced values were written into a captured array that "
                                  "shares memory with another one the body reads", None)
            return


def _check_constants(recorder) -> None:
    """A constant changed by untraced NumPy code after the trace first read it cannot be
    replayed from the copy the capture holds."""
    for record in recorder.captures:
        entry = recorder.raw[id(record.live)]
        if record.source[0] != "const" or entry[1] is not record.var:
            continue
        if not np.array_equal(record.source[1], record.live, equal_nan=record.live.dtype.kind
                              in "fc"):
            recorder.set_fallback(f"{record.description}: the array was modified by untraced "
                                  f"code during the trace", loc=None)
