"""The engine shared by the local passes (canonicalize, fold): rule tables run to a fixpoint.

A rule is ``(name, op, fn)``; ``fn(node, ctx)`` returns ``None`` (no match), a ``Value`` that
replaces the node's single output (*forwarding*), a new ``Node`` defining the same outputs, or a
tuple of new nodes whose last one defines them (``x**3 → (x*x)*x``).

Forwarding must not change what callers can observe: eager NumPy hands back a fresh array for
every result that is not a view, so a forward may not make a graph output alias a graph input or
another output where eager NumPy's result did not (see :meth:`Context.may_forward`).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..ir import Graph, Lit, Node, Value, Var, ops

Rule = tuple[str, str, Callable]
MAX_ROUNDS = 64
FRESH_ONLY = frozenset({"copy", "cast"})  # ops users call to get a new array: never forward


def is_view(node: Node) -> bool:
    return node.op in ops.REGISTRY and ops.get(node.op).kind == ops.VIEW


def view_parents(graph: Graph, writes=frozenset()) -> dict[Var, Var]:
    """Each view's output -> the Var it is a view of. ``writes``: the ``setitem`` and
    ``scatter_add`` nodes that write into their target's buffer (``in_place_writes``), whose
    results alias it like views."""
    return {out: node.inputs[0] for node in graph.nodes
            if (is_view(node) or node in writes) and node.inputs
            and isinstance(node.inputs[0], Var) for out in node.outputs}


def exposed_vars(graph: Graph) -> set[Var]:
    """Vars whose memory a caller can see: graph outputs and whatever they are views of,
    or the inputs of an opaque NumPy call that returned them (``np.flip``, ``np.diagonal``
    and ``np.atleast_2d`` may return a view of their argument, or the argument itself)."""
    exposed = {v for v in graph.outputs if isinstance(v, Var)}
    for node in reversed(graph.nodes):
        if (is_view(node) or node.op == "host") and any(out in exposed for out in node.outputs):
            exposed.update(v for v in node.inputs if isinstance(v, Var))
    return exposed


def same_type(a: Value, b: Value) -> bool:
    """Equal shape and dtype (the weak flag only matters to the tracer's promotion)."""
    return a.type.shape == b.type.shape and a.type.dtype == b.type.dtype


def substitute(values, subst: dict) -> tuple:
    return tuple(subst.get(v, v) if isinstance(v, Var) else v for v in values)


@dataclass
class Context:
    """What rules may ask about the graph being rebuilt."""

    inputs: frozenset
    exposed: set
    producers: dict = field(default_factory=dict)
    exposed_roots: set = field(default_factory=set)

    def producer(self, value: Value) -> Node | None:
        return self.producers.get(value) if isinstance(value, Var) else None

    def alias_root(self, value: Value) -> Value:
        """The value owning ``value``'s memory: follow view producers back."""
        node = self.producer(value)
        while node is not None and is_view(node):
            value = node.inputs[0]
            node = self.producer(value)
        return value

    def _broadcast(self, value: Value) -> bool:
        """``value`` is a broadcast view (``np.broadcast_to(s, shape)``), or a view of one."""
        node = self.producer(value)
        while node is not None and is_view(node):
            if node.op == "broadcast":
                return True
            node = self.producer(node.inputs[0])
        return False

    def _opaque(self, value: Value) -> bool:
        """A NumPy call's result, which may be a view of its inputs (``np.flip(x)``)."""
        producer = self.producer(value)
        return producer is not None and producer.op == "host"

    def may_forward(self, node: Node, value: Value) -> bool:
        if not same_type(node.out, value):
            return False
        if node.out not in self.exposed:
            return True
        if is_view(node):  # eager NumPy already returned a view of the same memory
            return self.alias_root(value) is self.alias_root(node.inputs[0])
        if node.op in FRESH_ONLY:
            return False
        if isinstance(value, Lit):
            return True
        if self._broadcast(value):   # NumPy's result was a new array, not a read-only view
            return False             # whose elements share memory
        root = self.alias_root(value)
        if root in self.inputs or root in self.exposed_roots or self._opaque(root):
            return False
        self.exposed_roots.add(root)
        return True


def rewrite(graph: Graph, rules: tuple[Rule, ...]) -> tuple[Graph, Counter]:
    """Apply ``rules`` until none fires; returns the new graph and how often each rule fired."""
    fired: Counter = Counter()
    for _ in range(MAX_ROUNDS):
        graph, changed = _rewrite_round(graph, rules, fired)
        if not changed:
            break
    return graph, fired


def _rewrite_round(graph: Graph, rules, fired: Counter) -> tuple[Graph, bool]:
    exposed = exposed_vars(graph)
    ctx = Context(frozenset(graph.inputs), exposed, exposed_roots=set(exposed))
    subst: dict[Var, Value] = {}
    nodes, changed = [], False
    for node in graph.nodes:
        node = node.replace(inputs=substitute(node.inputs, subst))
        result, name = _first_match(node, ctx, rules)
        if name is not None:
            fired[name] += 1
            changed = True
        if isinstance(result, Node | tuple):
            for new in result if isinstance(result, tuple) else (result,):
                nodes.append(new)
                ctx.producers.update((out, new) for out in new.outputs)
        else:
            subst[node.out] = result
    return graph.replace(nodes=nodes, outputs=substitute(graph.outputs, subst)), changed


def _first_match(node: Node, ctx: Context, rules):
    for name, op, fn in rules:
        if op not in ("*", node.op):
            continue
        result = fn(node, ctx)
        if isinstance(result, Node | tuple):
            return result, name
        if result is not None and ctx.may_forward(node, result):
            return result, name
    return node, None
