"""fusejit: a tracing JIT that compiles unmodified NumPy model code into fused kernels."""
from .errors import FusejitError, UnsupportedError, VerifyError

__version__ = "0.1.0"

__all__ = ["FusejitError", "UnsupportedError", "VerifyError", "__version__"]
