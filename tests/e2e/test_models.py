"""Every bundled model compiles and matches eager NumPy, on the trace call and on replay."""
import copy

import numpy as np
import pytest

import fusejit
from bench.models import MODELS, STATIC_ARGNAMES, load
from tests.oracle import assert_same, tolerance_for

DTYPES = [np.float32, np.float64]


def compile_model(name):
    fn, make_inputs = load(name)
    return fn, make_inputs, fusejit.compile(fn, static_argnames=STATIC_ARGNAMES.get(name, ()))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_eager_on_trace_and_replay(name, dtype):
    fn, make_inputs, compiled = compile_model(name)
    for seed in (0, 1, 2):  # seed 0 traces; 1 and 2 replay with new data of the same shapes
        args, kwargs = make_inputs(dtype=dtype, size="small", seed=seed)
        eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
        expected = fn(*eager_args, **eager_kwargs)
        tolerance = tolerance_for(dtype)
        assert_same(expected, compiled(*args, **kwargs), tolerance)
        assert_same((eager_args, eager_kwargs), (args, kwargs), tolerance)  # in-place updates
    info = compiled.cache_info()
    assert info["traces"] == 1 and info["hits"] == 2, info
    assert info["eager_signatures"] == 0, compiled.explain(*args, **kwargs)


def test_training_step_updates_parameters_in_place_on_every_call():
    fn, make_inputs, compiled = compile_model("mlp_train")
    args, kwargs = make_inputs(size="small")
    eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
    for _ in range(4):
        expected = fn(*eager_args, **eager_kwargs)
        assert_same(expected, compiled(*args, **kwargs))
        assert_same(eager_args, args)
    assert compiled.cache_info()["traces"] == 1


def test_decoding_writes_each_position_into_the_caches_with_one_trace():
    fn, make_inputs, compiled = compile_model("gpt2_decode")
    (x, k_cache, v_cache, t, p, n_head), _ = make_inputs(size="small")
    eager_caches = copy.deepcopy((k_cache, v_cache))
    for step in range(int(t), int(t) + 4):
        token = x * (1.0 + step)
        expected = fn(token, *eager_caches, np.array(step), p, n_head)
        assert_same(expected, compiled(token, k_cache, v_cache, np.array(step), p, n_head))
        assert_same(eager_caches, (k_cache, v_cache))
    program = compiled.entry_for(token, k_cache, v_cache, np.array(step), p, n_head).paths[0]
    assert len(program.program.caller_writes) == 2     # both caches, written in place
    assert compiled.cache_info()["traces"] == 1
