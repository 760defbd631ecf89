"""CompiledFunction, cache keys, programs and their executor, explain()."""
from .compiled import CompiledFunction, compile

__all__ = ["CompiledFunction", "compile"]
