"""The IR: immutable, typed SSA. Values are ``Var`` (defined once) or ``Lit`` (a typed scalar).

Names are the printer's business, not the IR's: a Var carries only an optional user-facing
``hint`` (the argument name), and is compared by identity.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .types import TensorType, short_dtype

_ids = itertools.count()


@dataclass(frozen=True, eq=False)
class Var:
    """An SSA value. Identity is the object itself; ``uid`` only orders and hashes it."""

    type: TensorType
    hint: str | None = None
    uid: int = field(default_factory=lambda: next(_ids))

    def __hash__(self):
        return self.uid

    def __repr__(self):
        return f"Var({self.hint or self.uid}: {self.type})"


@dataclass(frozen=True)
class Lit:
    """A typed scalar literal. ``value`` is a NumPy scalar of ``dtype``."""

    value: Any
    dtype: np.dtype

    def __post_init__(self):
        dtype = np.dtype(self.dtype)
        object.__setattr__(self, "dtype", dtype)
        if dtype.kind == "f" and dtype.itemsize < 8:   # 1e40 as f32: NumPy warned already,
            with np.errstate(all="ignore"):            # from the user's line
                object.__setattr__(self, "value", dtype.type(self.value))
        else:
            object.__setattr__(self, "value", dtype.type(self.value))

    @property
    def type(self) -> TensorType:
        return TensorType((), self.dtype)

    def __hash__(self):
        # -0.0 and 0.0 (and NaN payloads) must stay distinct for CSE: hash the bytes.
        return hash((self.dtype.str, self.value.tobytes()))

    def __eq__(self, other):
        return (isinstance(other, Lit) and self.dtype == other.dtype
                and self.value.tobytes() == other.value.tobytes())

    def text(self) -> str:
        """``0.5:f32`` -- shortest round-trip spelling for the dtype, never ``%g``."""
        if self.dtype == np.bool_:
            body = repr(bool(self.value))
        elif self.dtype.kind in "iu":
            body = repr(int(self.value))
        elif self.dtype.kind == "f":
            body = _float_text(self.value)
        else:
            body = repr(self.value.item())
        return f"{body}:{short_dtype(self.dtype)}"


class SizeLit(Lit):
    """A literal that is an element count of the traced shapes (a mean's divisor). It equals
    the plain literal of its value, but a kernel takes it as an argument instead of writing it
    into its source, so that one kernel serves every length of the axis it counts."""


def _float_text(value) -> str:
    if np.isnan(value) or np.isinf(value):
        return repr(float(value))
    # NumPy's str() is the shortest text that round-trips in the value's own dtype.
    return str(value)


Value = Var | Lit


@dataclass(frozen=True)
class Loc:
    """Where the user's code made a call: file, line and the chain of user functions."""

    file: str
    line: int
    scope: str = ""
    code: str = ""

    def short(self) -> str:
        name = self.file.replace("\\", "/").rsplit("/", 1)[-1]
        scope = f" ({self.scope})" if self.scope else ""
        return f"{name}:{self.line}{scope}"

    def __str__(self):
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, eq=False)
class Node:
    """One operation. ``attrs`` is a sorted tuple of (name, hashable value) pairs."""

    op: str
    inputs: tuple[Value, ...]
    outputs: tuple[Var, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    loc: Loc | None = None

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        attrs = self.attrs.items() if isinstance(self.attrs, dict) else self.attrs
        object.__setattr__(self, "attrs", tuple(sorted(attrs, key=lambda kv: kv[0])))

    @property
    def attr(self) -> dict[str, Any]:
        return dict(self.attrs)

    @property
    def out(self) -> Var:
        """The single output (most ops have exactly one)."""
        (only,) = self.outputs
        return only

    def replace(self, **changes) -> Node:
        fields = dict(op=self.op, inputs=self.inputs, outputs=self.outputs,
                      attrs=self.attrs, loc=self.loc)
        fields.update(changes)
        return Node(**fields)


@dataclass(frozen=True, eq=False)
class Graph:
    """A function: named inputs, nodes in topological order, outputs (Vars or Lits)."""

    name: str
    inputs: tuple[Var, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Value, ...]

    def __post_init__(self):
        for name in ("inputs", "nodes", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def replace(self, **changes) -> Graph:
        fields = dict(name=self.name, inputs=self.inputs, nodes=self.nodes,
                      outputs=self.outputs)
        fields.update(changes)
        return Graph(**fields)

    def producers(self) -> dict[Var, Node]:
        return {out: node for node in self.nodes for out in node.outputs}

    def users(self) -> dict[Var, list[Node]]:
        """Each Var's consuming nodes, in program order."""
        result: dict[Var, list[Node]] = {}
        for node in self.nodes:
            for value in node.inputs:
                if isinstance(value, Var):
                    result.setdefault(value, []).append(node)
        return result
