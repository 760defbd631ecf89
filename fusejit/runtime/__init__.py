"""CompiledFunction, cache keys, programs and their executor, explain()."""
from ..logs import configure
from .compiled import CompiledFunction, compile

configure()

__all__ = ["CompiledFunction", "compile"]
