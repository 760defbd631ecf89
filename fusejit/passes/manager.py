"""The pass manager: passes are registered with what they require and preserve, and run as a
pipeline that is plain data (a tuple of names)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import FusejitError
from ..ir import Graph, print_graph, verify

DEFAULT_PIPELINE = ("canonicalize", "fold", "cse", "dce", "fuse", "plan_memory")


@dataclass
class PassResult:
    graph: Graph
    changed: bool
    stats: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PassInfo:
    name: str
    fn: Callable[[Graph], PassResult]
    requires: tuple[str, ...] = ()
    preserves: tuple[str, ...] = ()
    per_target: bool = False     # fn(graph, target=...): the result depends on the backend


@dataclass
class PipelineRun:
    graph: Graph
    target: str = "cpu"
    stats: dict = field(default_factory=dict)
    snapshots: dict = field(default_factory=dict)


class PassError(FusejitError):
    """A pass raised or produced invalid IR; names the pass and the ones that ran before."""


PASSES: dict[str, PassInfo] = {}


def register_pass(name: str, requires=(), preserves=(), per_target=False):
    def decorate(fn):
        PASSES[name] = PassInfo(name, fn, tuple(requires), tuple(preserves), per_target)
        return fn
    return decorate


def run_pipeline(graph: Graph, pipeline=DEFAULT_PIPELINE, *, target="cpu", verify_each=False,
                 print_after=(), stop_after=None) -> PipelineRun:
    """``target``: the backend ("cpu" or "cuda") the graph is optimized for."""
    _check_order(pipeline)
    run, done = PipelineRun(graph, target), []
    for name in pipeline:
        run.graph = _run_one(PASSES[name], run, done, verify_each)
        done.append(name)
        if name in print_after:
            run.snapshots[name] = print_graph(run.graph)
        if name == stop_after:
            break
    return run


def _run_one(info: PassInfo, run: PipelineRun, done: list[str], verify_each: bool) -> Graph:
    before = " → ".join(done) or "nothing"
    try:
        result = info.fn(run.graph, target=run.target) if info.per_target else info.fn(run.graph)
        if verify_each:
            verify(result.graph, where=f"pass {info.name}")
    except PassError:
        raise
    except Exception as exc:
        raise PassError(f"pass {info.name!r} (after {before}) failed: "
                        f"{type(exc).__name__}: {exc}") from exc
    run.stats[info.name] = dict(result.stats, changed=result.changed)
    return result.graph


def _check_order(pipeline) -> None:
    seen: set[str] = set()
    for name in pipeline:
        if name not in PASSES:
            raise PassError(f"unknown pass {name!r}; known: {', '.join(sorted(PASSES))}")
        missing = [req for req in PASSES[name].requires if req not in seen]
        if missing:
            raise PassError(f"pass {name!r} requires {', '.join(missing)} to run before it")
        seen.add(name)
