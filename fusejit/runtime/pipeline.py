"""From a traced graph to a runnable Program: the pass pipeline, then lowering."""
from __future__ import annotations

from .. import codegen, config
from ..ir import Graph
from ..logs import topic
from ..passes import DEFAULT_PIPELINE, PipelineRun, run_pipeline
from . import program_cache
from .deferred_writes import defer
from .program import lower

log, fusion_log, cache_log = topic("compile"), topic("fusion"), topic("cache")


def build_program(graph, target="cpu", pipeline=DEFAULT_PIPELINE, guards=(), disk_cache=True,
                  written=None):
    """Returns (program, pipeline_run, {"compiled": n, "reused": n}). ``written``: output index
    -> input position of each array the body updates in place (see ``deferred_writes``)."""
    run = _optimize(graph, target, pipeline, disk_cache)
    before = codegen.kernel_stats()
    if target == "cuda":
        from .cuda import lower_cuda
        program = lower_cuda(run.graph, guards)
    else:
        written = written or {}
        optimized, deferred = defer(run.graph, {out: run.graph.inputs[position]
                                               for out, position in written.items()})
        finals = {position: optimized.outputs[out] for out, position in written.items()
                  if out not in deferred}
        program = lower(optimized, target, guards, written=finals, deferred=deferred)
    after = codegen.kernel_stats()
    counts = {k: after[k] - before[k] for k in ("compiled", "reused")}
    for refusal in run.stats.get("fuse", {}).get("refusals", ()):
        fusion_log.debug("%s: not fused: %s at %s: %s", graph.name, refusal.op,
                         refusal.loc.short() if refusal.loc else "?", refusal.reason)
    cache_log.debug("%s: %d kernels generated, %d reused from this process", graph.name,
                    counts["compiled"], counts["reused"])
    log.debug("%s: %d steps, %d kernels (%d new)", graph.name, len(program.steps),
              len(program.kernels), counts["compiled"])
    return program, run, counts


def _is_optimized(value) -> bool:
    """(graph, stats), as ``_optimize`` stores it."""
    return type(value) is tuple and len(value) == 2 and isinstance(value[0], Graph) and \
        type(value[1]) is dict


def _optimize(graph, target, pipeline, disk_cache=True) -> PipelineRun:
    """Run the passes, or take their result from the disk cache."""
    if not disk_cache:
        return run_pipeline(graph, pipeline, target=target, verify_each=config.strict())
    key = program_cache.fingerprint(graph, target, pipeline)
    cached = program_cache.load(key, check=_is_optimized)
    if cached is not None and len(cached[0].inputs) == len(graph.inputs):
        cache_log.debug("%s: optimized program loaded from the disk cache", graph.name)
        return PipelineRun(cached[0], target, dict(cached[1], loaded_from_disk=True))
    run = run_pipeline(graph, pipeline, target=target, verify_each=config.strict())
    program_cache.store(key, (run.graph, run.stats))
    return run
