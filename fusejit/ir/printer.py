"""IR text: one op per line, typed binders, argument names kept, everything else numbered.

The same graph prints byte-identical text: names come from program order, never from ids.
"""
from __future__ import annotations

import numpy as np

from . import indexing
from .graph import Graph, Lit, Node, Var
from .types import short_dtype

COMMENT_COLUMN = 56


class Namer:
    """Assigns printer names: user hints first (deduplicated), then ``%0, %1, ...``."""

    def __init__(self, prefix="%"):
        self.prefix, self.names, self.used, self.counter = prefix, {}, set(), 0

    def bind(self, var: Var) -> str:
        if var.hint and var.hint not in self.used:
            name = var.hint
        else:
            name = f"{self.prefix}{self.counter}"
            self.counter += 1
        self.names[var] = name
        self.used.add(name)
        return name

    def ref(self, value) -> str:
        if isinstance(value, Lit):
            return value.text()
        return self.names.get(value, f"<undefined {value!r}>")


def format_attr(name: str, value) -> str:
    if name == "key":
        return f"key={indexing.text(value)}"
    if isinstance(value, np.dtype) or name == "dtype":
        return f"{name}={short_dtype(value)}"
    if isinstance(value, Graph):
        return f"{name}=<{value.name}>"
    return f"{name}={value!r}"


def node_line(node: Node, namer: Namer, indent: str) -> list[str]:
    binders = ", ".join(f"{namer.bind(v)}: {v.type}" for v in node.outputs)
    operands = [namer.ref(v) for v in node.inputs]
    hidden = {"fused": ("body", "name", "kind"),
              "host": ("fn", "name", "spec", "nout", "elementwise", "varies")}
    attrs = [format_attr(k, v) for k, v in node.attrs if k not in hidden.get(node.op, ())]
    head = node.op
    if node.op == "host":
        head = f"host {node.attr.get('name', '?')}"
    if node.op == "fused":
        head = f"fused {node.attr.get('name', '')} [{node.attr.get('kind', '?')}]"
    text = f"{indent}{binders} = {head} {', '.join(operands + attrs)}".rstrip()
    if node.loc is not None:
        text = f"{text.ljust(COMMENT_COLUMN)}  # {node.loc.short()}"
    lines = [text]
    if node.op == "fused":
        lines += _body_lines(node.attr["body"], indent + "    ")
    return lines


def _body_lines(body: Graph, indent: str) -> list[str]:
    namer = Namer(prefix="$")
    params = ", ".join(f"{namer.bind(v)}: {v.type}" for v in body.inputs)
    lines = [f"{indent}({params}) {{"]
    for node in body.nodes:
        lines += node_line(node, namer, indent + "  ")
    lines.append(f"{indent}  yield {', '.join(namer.ref(v) for v in body.outputs)}")
    lines.append(f"{indent}}}")
    return lines


def print_graph(graph: Graph) -> str:
    namer = Namer()
    params = ", ".join(f"{namer.bind(v)}: {v.type}" for v in graph.inputs)
    results = ", ".join(str(v.type) for v in graph.outputs)
    if len(graph.outputs) != 1:
        results = f"({results})"
    lines = [f"def {graph.name}({params}) -> {results}:"]
    for node in graph.nodes:
        lines += node_line(node, namer, "  ")
    lines.append(f"  return {', '.join(namer.ref(v) for v in graph.outputs)}")
    return "\n".join(lines) + "\n"
