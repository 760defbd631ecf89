"""``verify(graph)``: SSA, def-before-use, arity and types. Raises VerifyError naming the line."""
from __future__ import annotations

from ..errors import VerifyError
from . import ops
from .graph import Graph, Lit, Node, Var


def verify(graph: Graph, where: str = "") -> Graph:
    defined: set[Var] = set()
    for var in graph.inputs:
        _define(var, defined, graph, where)
    for index, node in enumerate(graph.nodes):
        _check_node(node, index, defined, graph, where)
        for var in node.outputs:
            _define(var, defined, graph, where)
    for value in graph.outputs:
        if isinstance(value, Var) and value not in defined:
            _fail(graph, where, f"output {value!r} is never defined")
    return graph


def _define(var, defined, graph, where):
    if not isinstance(var, Var):
        _fail(graph, where, f"{var!r} is not a Var")
    if var in defined:
        _fail(graph, where, f"{var!r} is defined twice (not SSA)")
    defined.add(var)


def _check_node(node: Node, index: int, defined, graph, where):
    if node.op == "fused":
        _check_fused(node, index, graph, where)
    elif node.op not in ops.REGISTRY:
        _fail(graph, where, f"node {index}: unknown op {node.op!r}")
    for value in node.inputs:
        if isinstance(value, Var) and value not in defined:
            _fail(graph, where, f"node {index} ({node.op}): uses {value!r} before definition")
        if not isinstance(value, (Var, Lit)):
            _fail(graph, where, f"node {index} ({node.op}): operand {value!r} is not a value")
    if node.op == "fused":
        return
    opdef = ops.get(node.op)
    if opdef.arity is not None and len(node.inputs) != opdef.arity:
        _fail(graph, where, f"node {index} ({node.op}): {len(node.inputs)} operands, "
              f"expected {opdef.arity}")
    _check_types(node, index, graph, where)


def _check_types(node, index, graph, where):
    if node.op == "host":
        return  # an opaque NumPy call: its output types are NumPy's own, recorded while tracing
    try:
        expected = ops.infer_types(node.op, [v.type for v in node.inputs], node.attrs)
    except Exception as exc:  # the reference itself rejects the operands
        _fail(graph, where, f"node {index} ({node.op}): {type(exc).__name__}: {exc}")
    actual = tuple(v.type for v in node.outputs)
    if [(t.shape, t.dtype) for t in expected] != [(t.shape, t.dtype) for t in actual]:
        _fail(graph, where, f"node {index} ({node.op}): outputs typed "
              f"{', '.join(map(str, actual))} but the op gives {', '.join(map(str, expected))}")


def _check_fused(node, index, graph, where):
    body = node.attr.get("body")
    if not isinstance(body, Graph):
        _fail(graph, where, f"node {index}: fused node without a body")
    verify(body, where=f"{where} fused node {index}")
    if [v.type for v in body.inputs] != [v.type for v in node.inputs]:
        _fail(graph, where, f"node {index}: fused inputs do not match its body's parameters")
    if [v.type for v in body.outputs] != [v.type for v in node.outputs]:
        _fail(graph, where, f"node {index}: fused outputs do not match its body's results")


def _fail(graph, where, message):
    prefix = f"after {where}: " if where else ""
    raise VerifyError(f"{prefix}{graph.name}: {message}")
