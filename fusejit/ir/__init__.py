"""Typed SSA IR: types, values, nodes, graphs, the op registry, printer, verifier, interpreter."""
from . import indexing, ops
from .graph import Graph, Lit, Loc, Node, SizeLit, Value, Var
from .interpret import interpret
from .printer import print_graph
from .types import TensorType, parse_dtype, short_dtype, type_of
from .verify import verify

__all__ = [
    "Graph", "Lit", "Loc", "Node", "TensorType", "Value", "Var", "indexing", "interpret",
    "SizeLit", "ops", "parse_dtype", "print_graph", "short_dtype", "type_of", "verify",
]
