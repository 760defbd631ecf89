"""Property tests: on random programs every pass keeps the interpreter's results and verify()."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusejit.ir import Lit, interpret, print_graph, verify
from fusejit.passes import PASSES, run_pipeline
from fusejit.passes.plan_memory import assign_offsets, lifetimes, peak_bytes, view_parents
from tests.strategies import graphs, inputs_for

PIPELINE = ("canonicalize", "fold", "cse", "dce", "plan_memory")
PROPERTY = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def run(graph, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return interpret(graph, *args)


def assert_same_results(expected, actual):
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)


@st.composite
def programs(draw):
    graph = draw(graphs())
    return graph, draw(inputs_for(graph))


@PROPERTY
@given(programs())
def test_generated_graphs_verify(program):
    graph, args = program
    verify(graph)
    run(graph, args)


@pytest.mark.parametrize("name", ["canonicalize", "fold", "cse", "dce", "plan_memory"])
@PROPERTY
@given(program=programs())
def test_pass_preserves_results_and_verifies(name, program):
    graph, args = program
    result = PASSES[name].fn(graph)
    verify(result.graph, where=f"pass {name}")
    assert_same_results(run(graph, args), run(result.graph, args))


@pytest.mark.parametrize("name", ["fold", "dce"])
@PROPERTY
@given(graph=graphs())
def test_pass_is_idempotent(name, graph):
    once = PASSES[name].fn(graph).graph
    again = PASSES[name].fn(once)
    assert not again.changed, print_graph(once)


@PROPERTY
@given(graphs())
def test_printing_is_deterministic(graph):
    assert print_graph(graph) == print_graph(graph.replace(nodes=list(graph.nodes)))


@PROPERTY
@given(programs())
def test_pipeline_preserves_results(program):
    graph, args = program
    optimized = run_pipeline(graph, PIPELINE, verify_each=True).graph
    assert_same_results(run(graph, args), run(optimized, args))


@PROPERTY
@given(graphs())
def test_memory_plan_never_overlaps_live_buffers(graph):
    spans = lifetimes(graph)
    offsets = assign_offsets(spans)
    for a, (a_start, a_end) in spans.items():
        for b, (b_start, b_end) in spans.items():
            if a is b or a_end < b_start or b_end < a_start:
                continue
            disjoint = (offsets[a] + a.type.nbytes <= offsets[b]
                        or offsets[b] + b.type.nbytes <= offsets[a])
            assert disjoint or not a.type.nbytes or not b.type.nbytes
    live_total = max((sum(v.type.nbytes for v, (s, e) in spans.items() if s <= i <= e)
                      for i in range(len(graph.nodes) + 1)), default=0)
    assert peak_bytes(spans) == live_total


def output_roots(graph):
    """For each output position: the graph input it is a view of, else the Var owning it."""
    parents = view_parents(graph)
    roots = []
    for value in graph.outputs:
        while value in parents:
            value = parents[value]
        roots.append(value)
    return roots


def aliasing(graph):
    roots, inputs = output_roots(graph), set(graph.inputs)
    of_inputs = {i for i, root in enumerate(roots) if root in inputs}
    shared = {(i, j) for i, a in enumerate(roots) for j, b in enumerate(roots)
              if i < j and a is b and not isinstance(a, Lit)}
    return of_inputs, shared


@pytest.mark.parametrize("name", ["canonicalize", "fold", "cse", "dce"])
@PROPERTY
@given(graph=graphs())
def test_pass_never_makes_results_alias_more(name, graph):
    """Eager NumPy returns fresh arrays; a pass must not hand back the caller's array or one
    array for two results where eager NumPy did not."""
    of_inputs, shared = aliasing(graph)
    new_of_inputs, new_shared = aliasing(PASSES[name].fn(graph).graph)
    assert new_of_inputs <= of_inputs and new_shared <= shared
