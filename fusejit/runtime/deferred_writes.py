"""In-place updates of arguments and captured arrays written straight into them.

The graph computes an updated array functionally: ``setitem(x, v, key)`` copies ``x``, then
writes ``v``, and the runtime copied the last copy back into the caller's array. For
``W[idx] -= lr * g`` on a large embedding that is two full copies where eager NumPy writes a few
rows. When every version of the array between its first write and the write-back feeds nothing
but the next write, the program returns the written values (and index arrays) instead, and the
runtime writes them into the caller's array in order -- after every step and guard ran, so a
replay that fails leaves the array as it was."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Lit, Var, indexing

WRITE_OPS = ("setitem", "scatter_add")


@dataclass(frozen=True)
class Write:
    op: str                      # "setitem" | "scatter_add"
    key: object                  # the encoded index (indexing.encode)
    operands: tuple[int, ...]    # program outputs: the value, then the key's index arrays


def written_inputs(trace) -> dict[int, int]:
    """Output index of each array the body updates in place -> its position among the graph's
    inputs (the array arguments, then the captured arrays). An output that a guard, a result
    or an attribute also reads is left out: it must hold the whole new value."""
    position = {leaf: p for p, leaf in enumerate(trace.arg_leaves)}
    first_capture = len(trace.arg_leaves)
    read = {guard.output for guard in trace.guards}
    read.update(leaf.index for leaf in trace.out_leaves if leaf.kind == "value")
    read.update(i for write in trace.attr_writes for i in write.outputs if type(i) is int)
    return {m.output: position[m.index] if m.target == "arg" else first_capture + m.index
            for m in trace.mutations if m.output not in read}


def defer(graph: Graph, targets: dict[int, Var]) -> tuple[Graph, dict[int, tuple[Write, ...]]]:
    """``targets``: output index of each written-back array -> the input Var it updates.
    Returns the graph without the deferred chains, and each output's writes."""
    producers, uses = graph.producers(), _uses(graph)
    outputs, dropped, plans = list(graph.outputs), set(), {}
    for index, source in targets.items():
        chain = _chain(outputs[index], source, producers, uses)
        if not chain:
            continue
        writes = []
        for node in chain:
            operands = []
            for value in node.inputs[1:]:
                outputs.append(value)
                operands.append(len(outputs) - 1)
            writes.append(Write(node.op, node.attr["key"], tuple(operands)))
        outputs[index] = Lit(0, np.int8)   # the copy is no longer computed
        dropped.update(chain)
        plans[index] = tuple(writes)
    if not plans:
        return graph, {}
    nodes = [node for node in graph.nodes if node not in dropped]
    return graph.replace(nodes=nodes, outputs=outputs), plans


def write_all(program, targets: list[tuple[np.ndarray, int]], values: list) -> None:
    """Give each written array (paired with its output index) its new value, in order: by its
    deferred writes, or by copying the program's result over it. A written value that is a
    view of any of these arrays is taken first: it must not see the writes made before it.

    Nothing is written unless every write can be made: a read-only array or an index out of
    bounds raises first, and the caller traces again, which gives eager NumPy's partial writes
    and error in the body's own order."""
    deferred = getattr(program, "deferred", None) or {}
    arrays = [target for target, _ in targets]
    planned = []
    for target, output in targets:
        writes = deferred.get(output)
        if writes is None:
            planned.append((target, None, values[output]))
            continue
        planned += [(target, write, [_unaliased(values[i], arrays) for i in write.operands])
                    for write in writes]
    _check_writes(planned)
    for target, write, operands in planned:
        if write is None:
            program.write_back(target, operands)
            continue
        value, *index_arrays = operands
        key = indexing.decode(write.key, index_arrays)
        if write.op == "setitem":
            target[key] = value
        else:
            np.add.at(target, key, value)


def check_writeable(targets) -> None:
    """Raise NumPy's error for the first read-only array among ``targets``."""
    for target in targets:
        if isinstance(target, np.ndarray) and not target.flags.writeable:
            raise ValueError("assignment destination is read-only")


def _check_writes(planned) -> None:
    """Raise what the first failing write would raise, before anything is written."""
    check_writeable([target for target, _, _ in planned])
    for target, write, operands in planned:
        if write is not None and len(operands) > 1:  # index arrays: bounds known only now
            selected = target[indexing.decode(write.key, operands[1:])]  # IndexError
            np.broadcast_to(operands[0], np.shape(selected))  # a mask's count: ValueError


def _unaliased(value, targets):
    if isinstance(value, np.ndarray) and any(np.may_share_memory(value, t) for t in targets):
        return value.copy()
    return value


def _chain(var, source: Var, producers: dict, uses: Counter) -> list:
    """The writes from ``source`` to ``var`` in order, when each version between them feeds
    only the next one; else empty."""
    chain = []
    while var is not source:
        node = producers.get(var) if isinstance(var, Var) else None
        if node is None or node.op not in WRITE_OPS or uses[var] != 1:
            return []
        chain.append(node)
        var = node.inputs[0]
    return chain[::-1]


def _uses(graph: Graph) -> Counter:
    uses = Counter({var: len(nodes) for var, nodes in graph.users().items()})
    uses.update(v for v in graph.outputs if isinstance(v, Var))
    return uses
