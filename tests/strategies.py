"""Hypothesis strategies for random valid programs drawn from the op registry.

``graphs()`` builds small Graphs that ``verify()`` accepts: 1-3 inputs (f32/f64/i32/i64/bool,
0-d to 3-d, size-1 dims that broadcast), elementwise ops only for the dtypes whose NumPy
reference keeps the homogeneous dtype rule (``cast`` is inserted to get there), reductions,
views and literals. ``inputs_for(graph)`` draws well-behaved arrays for its inputs.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fusejit.ir import Graph, Lit, Node, TensorType, Var, indexing, ops, parse_dtype

DTYPES = tuple(np.dtype(name) for name in ("float32", "float64", "int32", "int64", "bool"))
_SPECIAL_OPS = frozenset({"where", "cast", "full"})


def _sample(dtype) -> np.ndarray:
    return np.array([-2, -1, 0, 1, 2, 3, 0, 1]).astype(dtype)


def _keeps_dtype(op: ops.OpDef, dtype) -> bool:
    """Whether NumPy's reference runs on ``dtype`` and gives the dtype the IR rule says."""
    sample = _sample(dtype)
    try:
        with np.errstate(all="ignore"):
            result = op.impl(*[sample, sample[::-1]][: op.arity])
    except Exception:
        return False
    return np.asarray(result).dtype == (np.dtype(bool) if op.predicate else dtype)


def _supported(arity: int) -> dict[np.dtype, tuple[str, ...]]:
    table = {}
    for dtype in DTYPES:
        table[dtype] = tuple(name for name, op in sorted(ops.REGISTRY.items())
                             if op.kind == ops.ELEMENTWISE and op.arity == arity
                             and name not in _SPECIAL_OPS and _keeps_dtype(op, dtype))
    return table


UNARY = _supported(1)
BINARY = _supported(2)
_LITERALS = {"f": [0.0, -0.0, 1.0, 2.0, 0.5, -1.5, 3.0], "i": [0, 1, 2, -1, 3], "b": [0, 1]}


class Builder:
    """Accumulates nodes; every value it hands out is defined by then."""

    def __init__(self, draw, inputs):
        self.draw, self.nodes, self.pool = draw, [], list(inputs)

    def add(self, op, inputs, **attrs) -> Var | None:
        try:
            types = ops.infer_types(op, [v.type for v in inputs], tuple(attrs.items()))
        except Exception:  # operands NumPy rejects (shapes that do not broadcast, ...)
            return None
        node = Node(op, inputs, [Var(t) for t in types], attrs)
        self.nodes.append(node)
        self.pool.extend(node.outputs)
        return node.outputs[0]

    def value(self):
        return self.draw(st.sampled_from(self.pool))

    def literal(self, dtype) -> Lit:
        return Lit(self.draw(st.sampled_from(_LITERALS[np.dtype(dtype).kind])), dtype)

    def operand(self, dtype):
        """A pool value or a literal, cast to ``dtype`` when needed."""
        if self.draw(st.integers(0, 3)) == 0:
            return self.literal(dtype)
        return self.as_dtype(self.value(), dtype)

    def as_dtype(self, value, dtype):
        if isinstance(value, Lit) or value.type.dtype == dtype:
            return value if value.type.dtype == dtype else Lit(value.value, dtype)
        return self.add("cast", [value], dtype=np.dtype(dtype)) or value


def _unary(b: Builder):
    x = b.value()
    choices = UNARY[x.type.dtype]
    return b.add(b.draw(st.sampled_from(choices)), [x]) if choices else None


def _binary(b: Builder, literal_only=False):
    dtype = b.draw(st.sampled_from(DTYPES))
    choices = BINARY[dtype]
    if not choices:
        return None
    op = b.draw(st.sampled_from(choices))
    if literal_only:
        return b.add(op, [b.literal(dtype), b.literal(dtype)])
    return b.add(op, [b.operand(dtype), b.operand(dtype)])


def _where(b: Builder):
    dtype = b.draw(st.sampled_from(DTYPES))
    return b.add("where", [b.as_dtype(b.value(), np.dtype(bool)), b.operand(dtype),
                           b.operand(dtype)])


def _cast(b: Builder):
    return b.add("cast", [b.value()], dtype=b.draw(st.sampled_from(DTYPES)))


def _full(b: Builder):
    dtype = b.draw(st.sampled_from(DTYPES))
    shape = b.draw(st.sampled_from([(), (1,), (2, 1)]))
    return b.add("full", [], shape=shape, dtype=dtype, value=b.literal(dtype).value.item())


def _reduce(b: Builder):
    x, op = b.value(), b.draw(st.sampled_from(ops.REDUCE_OPS))
    if op in ("any", "all"):
        x = b.as_dtype(x, np.dtype(bool))
    elif op in ("sum", "prod") and x.type.dtype == np.bool_:
        x = b.as_dtype(x, np.dtype("int64"))
    axes = tuple(i for i in range(x.type.ndim) if b.draw(st.booleans()))
    if op in ("argmax", "argmin") and len(axes) > 1:
        axes = tuple(range(x.type.ndim))
    if not axes and x.type.ndim:
        axes = (b.draw(st.integers(0, x.type.ndim - 1)),)
    return b.add(op, [x], axes=axes, keepdims=b.draw(st.booleans()))


def _view(b: Builder, x=None):
    x = x if x is not None else b.value()
    shape = x.type.shape
    kind = b.draw(st.sampled_from(["reshape", "permute", "broadcast", "expand_dims",
                                   "squeeze", "getitem"]))
    if kind == "reshape":
        target = b.draw(st.sampled_from([(x.type.size,), shape + (1,), (1,) + shape,
                                         tuple(d for d in shape if d != 1), shape]))
        return b.add("reshape", [x], shape=target)
    if kind == "permute":
        return b.add("permute", [x], perm=tuple(b.draw(st.permutations(range(len(shape))))))
    if kind == "broadcast":
        target = tuple(2 if d == 1 and b.draw(st.booleans()) else d for d in shape)
        return b.add("broadcast", [x], shape=b.draw(st.sampled_from([(), (2,)])) + target)
    if kind == "expand_dims":
        axes = b.draw(st.sets(st.integers(0, len(shape)), max_size=2))
        return b.add("expand_dims", [x], axes=tuple(sorted(axes)))
    if kind == "squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        return b.add("squeeze", [x], axes=tuple(i for i in ones if b.draw(st.booleans())))
    return b.add("getitem", [x], key=indexing.encode(tuple(_slice(b, d) for d in shape)))


def _slice(b: Builder, size: int) -> slice:
    """A slice that keeps at least one element (reductions of empty arrays raise)."""
    step = b.draw(st.sampled_from([1, 2, -1]))
    if step < 0:
        return slice(None, None, step)
    return slice(b.draw(st.integers(0, size - 1)), None, step)


def _pattern(b: Builder):
    """Shapes the fold rules look for, so random programs exercise them often."""
    x = b.value()
    dtype = x.type.dtype
    kind = b.draw(st.sampled_from(["identity", "neg_neg", "square", "view_chain", "cast_chain"]))
    if kind == "identity" and BINARY[dtype]:
        op = b.draw(st.sampled_from([o for o in ("mul", "add", "sub", "div", "pow")
                                     if o in BINARY[dtype]] or ["eq"]))
        literal = Lit(b.draw(st.sampled_from([1, 0, -0.0, 2])), dtype)
        inputs = [x, literal] if b.draw(st.booleans()) else [literal, x]
        return b.add(op, inputs)
    if kind == "neg_neg" and "neg" in UNARY[dtype]:
        return b.add("neg", [b.add("neg", [x])])
    if kind == "square" and "pow" in BINARY[dtype]:
        return b.add("pow", [x, Lit(2, dtype)])
    if kind == "view_chain":
        first = _view(b, x)
        return _view(b, first) if first is not None else None
    target = b.draw(st.sampled_from(DTYPES))
    return b.add("cast", [b.add("cast", [x], dtype=target)],
                 dtype=b.draw(st.sampled_from(DTYPES)))


_MAKERS = {"pattern": _pattern, "unary": _unary, "binary": _binary,
           "literals": lambda b: _binary(b, True),
           "where": _where, "cast": _cast, "full": _full, "reduce": _reduce, "view": _view}


@st.composite
def shapes(draw, max_dims=3):
    return tuple(draw(st.lists(st.integers(1, 3), max_size=max_dims)))


@st.composite
def graphs(draw, max_nodes=6) -> Graph:
    base = draw(shapes())
    inputs = []
    for index in range(draw(st.integers(1, 3))):
        shape = tuple(d if draw(st.booleans()) else 1 for d in base)
        shape = shape[draw(st.integers(0, len(shape))):]  # fewer leading dims still broadcast
        inputs.append(Var(TensorType(shape, draw(st.sampled_from(DTYPES))), f"x{index}"))
    builder = Builder(draw, inputs)
    for _ in range(draw(st.integers(1, max_nodes))):
        _MAKERS[draw(st.sampled_from(sorted(_MAKERS)))](builder)
    produced = [v for node in builder.nodes for v in node.outputs] or inputs
    outputs = [produced[-1]] + draw(st.lists(st.sampled_from(builder.pool), max_size=1))
    return Graph("random", inputs, builder.nodes, outputs)


def _elements(dtype):
    if dtype.kind == "f":
        return st.floats(-4, 4, width=dtype.itemsize * 8)
    if dtype.kind == "b":
        return st.booleans()
    return st.integers(-4, 4)


@st.composite
def inputs_for(draw, graph: Graph) -> tuple[np.ndarray, ...]:
    return tuple(draw(hnp.arrays(v.type.dtype, v.type.shape, elements=_elements(v.type.dtype)))
                 for v in graph.inputs)


# -- building small graphs by hand in unit tests ---------------------------------------------
def var(name: str, dtype="f32", shape=()) -> Var:
    return Var(TensorType(shape, parse_dtype(dtype)), name)


def lit(value, dtype="f32") -> Lit:
    return Lit(value, parse_dtype(dtype))


class Program:
    """``p = Program(x); y = p("exp", x); g = p.graph(y)``: nodes typed by the registry."""

    def __init__(self, *inputs: Var):
        self.inputs, self.nodes = list(inputs), []

    def __call__(self, op, *inputs, **attrs):
        types = ops.infer_types(op, [v.type for v in inputs], tuple(attrs.items()))
        node = Node(op, inputs, [Var(t) for t in types], attrs)
        self.nodes.append(node)
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def graph(self, *outputs, name="f") -> Graph:
        return Graph(name, self.inputs, self.nodes, outputs)
