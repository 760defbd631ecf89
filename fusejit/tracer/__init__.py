"""Record a NumPy function call into an IR Graph: eager execution on ``Tracer`` proxies."""
from . import comparisons, einsum, functions, inplace_calls, operators, reductions  # noqa: F401  (register handlers)
from .api import Mutation, OutputLeaf, Trace, trace
from .captures import Capture
from .context import Fallback
from .pytree import TreeDef, flatten, is_traced_leaf, unflatten
from .tracer import Tracer

__all__ = [
    "Capture", "Fallback", "Mutation", "OutputLeaf", "Trace", "Tracer", "TreeDef", "flatten",
    "is_traced_leaf", "trace", "unflatten",
]
