"""Graph export for tools: networkx, Graphviz DOT and JSON."""
from __future__ import annotations

import json

import networkx as nx

from ..ir import Graph, Lit
from ..ir.printer import Namer


def to_networkx(graph: Graph) -> nx.DiGraph:
    """Nodes are values (named as in the printed IR) and ops; edges follow data flow."""
    namer, result = Namer(), nx.DiGraph(name=graph.name)
    for var in graph.inputs:
        result.add_node(namer.bind(var), kind="input", type=str(var.type))
    for index, node in enumerate(graph.nodes):
        op_id = f"op{index}:{node.op}"
        label = node.attr.get("name", node.op) if node.op == "fused" else node.op
        result.add_node(op_id, kind="op", op=node.op, label=label,
                        loc=node.loc.short() if node.loc else "")
        for value in node.inputs:
            if not isinstance(value, Lit):
                result.add_edge(namer.ref(value), op_id)
        for var in node.outputs:
            result.add_node(namer.bind(var), kind="value", type=str(var.type))
            result.add_edge(op_id, namer.names[var])
    for value in graph.outputs:
        if not isinstance(value, Lit):
            result.nodes[namer.ref(value)]["output"] = True
    return result


def graph_json(graph: Graph) -> str:
    return json.dumps(nx.node_link_data(to_networkx(graph), edges="edges"), indent=1) + "\n"


def graph_dot(graph: Graph) -> str:
    g = to_networkx(graph)
    lines = [f'digraph "{graph.name}" {{', "  rankdir=TB;"]
    for name, data in g.nodes(data=True):
        if data["kind"] == "op":
            shape = "box3d" if data["op"] == "fused" else "box"
            lines.append(f'  "{name}" [shape={shape}, label="{data["label"]}"];')
        else:
            lines.append(f'  "{name}" [shape=ellipse, label="{name}: {data["type"]}"];')
    lines += [f'  "{a}" -> "{b}";' for a, b in g.edges]
    return "\n".join(lines + ["}"]) + "\n"
