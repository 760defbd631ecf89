"""Graph -> Graph rewrites, run by the pass manager. Importing this package registers them."""
from .manager import (DEFAULT_PIPELINE, PASSES, PassError, PassResult, PipelineRun,
                      register_pass, run_pipeline)

__all__ = ["DEFAULT_PIPELINE", "PASSES", "PassError", "PassResult", "PipelineRun",
           "register_pass", "run_pipeline"]
