"""The reference interpreter: each node runs its OpDef's NumPy implementation."""
from __future__ import annotations

import numpy as np

from ..located import cast_from_line, drops_imaginary
from . import ops
from .graph import Graph, Lit, Node


def interpret(graph: Graph, *args) -> tuple[np.ndarray, ...]:
    if len(args) != len(graph.inputs):
        raise TypeError(f"{graph.name} takes {len(graph.inputs)} inputs, got {len(args)}")
    env = {var: np.asarray(arg) for var, arg in zip(graph.inputs, args, strict=True)}
    for node in graph.nodes:
        values = [_read(env, v) for v in node.inputs]
        for var, result in zip(node.outputs, run_node(node, values), strict=True):
            env[var] = result
    return tuple(_read(env, v) for v in graph.outputs)


def run_node(node: Node, values) -> tuple[np.ndarray, ...]:
    if node.op == "fused":
        return interpret(node.attr["body"], *values)
    if node.op == "cast" and node.loc is not None and \
            drops_imaginary(np.asarray(values[0]).dtype, node.attr["dtype"]):
        return (cast_from_line(node.loc, values[0], node.attr["dtype"]),)   # names the line
    return ops.evaluate(node.op, values, node.attrs)


def _read(env, value):
    return np.asarray(value.value) if isinstance(value, Lit) else env[value]
