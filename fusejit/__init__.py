"""fusejit: a tracing JIT that compiles unmodified NumPy model code into fused kernels."""
from .errors import FusejitError, UnsupportedError, VerifyError

__version__ = "0.1.0"

__all__ = ["CompiledFunction", "FusejitError", "UnsupportedError", "VerifyError",
           "__version__", "compile"]


def __getattr__(name):
    # The runtime imports Numba; keep ``import fusejit.ir`` light by loading it on first use.
    if name in ("compile", "CompiledFunction"):
        from . import runtime
        return getattr(runtime, name)
    raise AttributeError(f"module 'fusejit' has no attribute {name!r}")
