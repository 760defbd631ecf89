"""Graph -> Graph rewrites, run by the pass manager. Importing this package registers them."""
from . import canonicalize, cse, dce, fold, fuse, plan_memory  # noqa: F401  (registers passes)
from .manager import (
    DEFAULT_PIPELINE,
    PASSES,
    PassError,
    PassResult,
    PipelineRun,
    register_pass,
    run_pipeline,
)

__all__ = ["DEFAULT_PIPELINE", "PASSES", "PassError", "PassResult", "PipelineRun",
           "register_pass", "run_pipeline"]
