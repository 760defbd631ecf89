"""Splits of an elementwise result sunk into its operands, so the pieces fuse with their users.

An LSTM cell computes ``z = x @ w_ih + h @ w_hh + b`` and splits it into four gates, each fed
to elementwise math. As written, the sum is one kernel and the gates another, with ``z``
written to memory and read back between them. When the split is the only use of an
elementwise result and every piece feeds only fusable elementwise ops or reductions of the
piece's own shape, the split moves to the operands, piece by piece::

    i, f = split(a + b)    →    a_i, a_f = split(a);  b_i, b_f = split(b)
                                i = a_i + b_i;        f = a_f + b_f

and the sum becomes part of the gate kernel, which reads strided views of ``a`` and ``b``.
Every element is still computed once (the pieces partition the result) with the same op on
the same operand values, so results are bit-identical. An operand broadcast along the split
axis (a bias of length 1 there, or without that axis) is used whole by every piece.
"""
from __future__ import annotations

from ..ir import Graph, Lit, Node, TensorType, Var, ops
from . import fusion_rules as rules

MAX_ROUNDS = 16   # one round per elementwise level above the split (z = (a + b) + c: two)


def sink_splits(graph: Graph, target: str = "cpu") -> tuple[Graph, int]:
    """The graph with every sinkable split moved above its producer; how many moved."""
    total = 0
    for _ in range(MAX_ROUNDS):
        graph, sunk = _sink_round(graph, target)
        total += sunk
        if not sunk:
            break
    return graph, total


def _sink_round(graph: Graph, target: str) -> tuple[Graph, int]:
    producers, users = graph.producers(), graph.users()
    returned = {v for v in graph.outputs if isinstance(v, Var)}
    moves = {}   # split node -> its elementwise producer
    for node in graph.nodes:
        producer = _sinkable_producer(node, producers, users, returned, target)
        if producer is not None:
            moves[node] = producer
    if not moves:
        return graph, 0
    dropped, made = set(moves.values()), {}
    nodes: list[Node] = []
    for node in graph.nodes:
        if node in moves:
            nodes += _sunk(node, moves[node], made)
        elif node not in dropped:
            nodes.append(node)
    return graph.replace(nodes=nodes), len(moves)


def _sinkable_producer(split: Node, producers, users, returned, target) -> Node | None:
    if split.op != "split" or not isinstance(split.inputs[0], Var):
        return None
    source = split.inputs[0]
    producer = producers.get(source)
    if producer is None or len(producer.outputs) != 1 or not rules.is_fusable_elementwise(
            producer, target):
        return None
    if source in returned or users.get(source) != [split]:
        return None
    for piece in split.outputs:
        if piece in returned or not users.get(piece):
            return None
        if not all(_fuses_with(user, piece, target) for user in users[piece]):
            return None
    return producer


def _fuses_with(user: Node, piece: Var, target: str) -> bool:
    """Whether ``user`` would take an elementwise producer of ``piece`` into its kernel."""
    if user.op in ops.REDUCE_OPS:
        return rules.codegen_dtype_ok(user)
    return rules.is_fusable_elementwise(user, target) and user.out.type.shape == piece.type.shape


def _sunk(split: Node, producer: Node, made: dict) -> list[Node]:
    """Splits of the producer's operands, then the producer's op once per piece. ``made``:
    the operand splits made earlier in this round, reused (an unrolled loop splits its bias the
    same way in every step)."""
    axis, rank = split.attr["axis"], len(producer.out.type.shape)
    nodes: list[Node] = []
    pieces: dict = {}   # operand -> its pieces (or None: used whole)
    for value in producer.inputs:
        if value in pieces:
            continue
        key = (value, axis - (rank - _rank(value)), split.attr["indices"])
        if key not in made:
            made[key] = _operand_pieces(value, split, key[1])
            if made[key] is not None:
                nodes.append(made[key])
        pieces[value] = made[key]
    for k, out in enumerate(split.outputs):
        operands = tuple(value if pieces[value] is None else pieces[value].outputs[k]
                         for value in producer.inputs)
        nodes.append(producer.replace(inputs=operands, outputs=(out,)))
    return nodes


def _rank(value) -> int:
    return len(value.type.shape)


def _operand_pieces(value, split: Node, axis: int) -> Node | None:
    """A split of ``value`` like ``split``'s, or None where ``value`` broadcasts along it."""
    extent = split.inputs[0].type.shape[split.attr["axis"]]
    if isinstance(value, Lit) or axis < 0 or value.type.shape[axis] != extent:
        return None   # broadcast along the split axis (its extent there is 1)
    outputs = []
    for piece in split.outputs:
        shape = list(value.type.shape)
        shape[axis] = piece.type.shape[split.attr["axis"]]
        outputs.append(Var(TensorType(tuple(shape), value.type.dtype), value.hint))
    attrs = dict(split.attr, axis=axis)
    return Node("split", (value,), tuple(outputs), attrs, split.loc)
