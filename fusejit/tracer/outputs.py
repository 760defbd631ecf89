"""Closing a trace: output leaves, mutations of arguments and captures, the final Graph."""
from __future__ import annotations

import numpy as np

from ..ir import Graph
from .api import Mutation, OutputLeaf, Trace
from .captures import Capture
from .context import unwrap
from .pytree import flatten, unflatten
from .tracer import Tracer


def finish(recorder, result, proxies: dict, arg_leaves: tuple) -> Trace:
    out_leaves_raw, out_treedef = flatten(result)
    concrete = unflatten(out_treedef, [unwrap(leaf) for leaf in out_leaves_raw])
    _check_constants(recorder)
    outputs: list = []
    out_leaves: tuple = ()
    mutations: tuple = ()
    if recorder.fallback is None:
        out_leaves = tuple(_output_leaf(recorder, leaf, proxies, outputs)
                           for leaf in out_leaves_raw)
        mutations = tuple(_mutations(recorder, proxies, outputs))
    captures = tuple(Capture(c.description, c.var.type, c.source, c.steps)
                     for c in recorder.captures)
    inputs = list(recorder.inputs) + [c.var for c in recorder.captures]
    graph = Graph(recorder.name, inputs, recorder.nodes, outputs)
    return Trace(graph, concrete, arg_leaves, captures, out_treedef, out_leaves, mutations,
                 recorder.fallback, tuple(recorder.notes))


def _output_leaf(recorder, leaf, proxies, outputs) -> OutputLeaf:
    if isinstance(leaf, Tracer):
        for index, proxy in proxies.items():
            if proxy is leaf:
                return OutputLeaf("arg", index)
        var = leaf.ir_var
        if var in recorder.inputs or any(var is c.var for c in recorder.captures):
            var = recorder.emit("copy", [var])  # NumPy returned a new array, not the input
        outputs.append(var)
        return OutputLeaf("value", len(outputs) - 1, scalar=isinstance(leaf.value, np.generic),
                          pyfloat=type(leaf.value) is float)
    if type(leaf) is np.ndarray:
        entry = recorder.raw.get(id(leaf))
        if entry is not None and entry[0] is leaf and entry[2] is not None:
            record = recorder.captures[entry[2]]
            if record.source[0] != "const":
                return OutputLeaf("capture", entry[2])
            if entry[1] is not record.var:  # a constant written by traced ops
                outputs.append(entry[1])
                return OutputLeaf("value", len(outputs) - 1)
        return OutputLeaf("const", const=leaf.copy())
    return OutputLeaf("const", const=leaf)


def _mutations(recorder, proxies, outputs):
    first_input = {var: i for i, var in enumerate(recorder.inputs)}
    for index, proxy in sorted(proxies.items()):
        var = proxy.ir_var
        if first_input.get(var) is None:
            outputs.append(var)
            yield Mutation("arg", index, len(outputs) - 1)
    for k, record in enumerate(recorder.captures):
        var = recorder.raw[id(record.live)][1]
        if var is not record.var and record.source[0] != "const":
            outputs.append(var)
            yield Mutation("capture", k, len(outputs) - 1)


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
