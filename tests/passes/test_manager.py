"""The pass manager: order checks, failures that name the pass, verify_each, print_after."""
import pytest

from fusejit.ir import Node, Var, print_graph
from fusejit.passes import PASSES, PassError, PassResult, register_pass, run_pipeline
from tests.strategies import Program, lit, var


@pytest.fixture
def scratch_passes():
    """Register throwaway passes and remove them afterwards (PASSES is process-wide)."""
    names = []

    def add(name, fn, requires=()):
        names.append(name)
        register_pass(name, requires=requires)(fn)

    yield add
    for name in names:
        PASSES.pop(name, None)


def sample():
    x = var("x", "f32", (3,))
    p = Program(x)
    p("neg", x)
    return p.graph(p("exp", p("mul", x, lit(1.0))))


def test_unknown_pass_is_named():
    with pytest.raises(PassError, match="unknown pass 'nope'"):
        run_pipeline(sample(), ("dce", "nope"))


def test_requires_is_checked_before_anything_runs(scratch_passes):
    scratch_passes("after_fold", lambda g: PassResult(g, False), requires=("fold",))
    with pytest.raises(PassError, match="'after_fold' requires fold"):
        run_pipeline(sample(), ("after_fold", "fold"))
    run_pipeline(sample(), ("fold", "after_fold"))


def test_a_raising_pass_names_itself_and_the_passes_before(scratch_passes):
    def explode(graph):
        raise ValueError("boom")
    scratch_passes("explode", explode)
    with pytest.raises(PassError, match=r"pass 'explode' \(after canonicalize → fold\) failed: "
                                        r"ValueError: boom"):
        run_pipeline(sample(), ("canonicalize", "fold", "explode"))


def test_verify_each_catches_a_pass_that_breaks_the_ir(scratch_passes):
    def break_types(graph):
        node = graph.nodes[-1]
        wrong = Node(node.op, node.inputs, (Var(var("t", "f64", (3,)).type),), node.attrs)
        return PassResult(graph.replace(nodes=graph.nodes[:-1] + (wrong,)), True)
    scratch_passes("break_types", break_types)
    run_pipeline(sample(), ("break_types",))   # unchecked: nobody notices
    with pytest.raises(PassError, match="break_types"):
        run_pipeline(sample(), ("break_types",), verify_each=True)


def test_print_after_snapshots_and_stats():
    run = run_pipeline(sample(), ("canonicalize", "fold", "dce"), print_after=("fold", "dce"))
    assert set(run.snapshots) == {"fold", "dce"}
    assert run.snapshots["dce"] == print_graph(run.graph)
    assert "neg" in run.snapshots["fold"] and "neg" not in run.snapshots["dce"]
    assert run.stats["fold"] == {"mul_one": 1, "changed": True}
    assert run.stats["dce"] == {"removed": 1, "changed": True}


def test_stop_after():
    run = run_pipeline(sample(), ("canonicalize", "fold", "dce"), stop_after="fold")
    assert set(run.stats) == {"canonicalize", "fold"}


def test_my_passes_are_registered_with_their_names():
    assert {"canonicalize", "fold", "cse", "dce", "plan_memory"} <= set(PASSES)
    assert PASSES["plan_memory"].requires == ()
