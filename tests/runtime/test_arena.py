"""The CPU runtime's arena: which outputs live there, and that results do not depend on it."""
import copy

import numpy as np

import fusejit
from bench.models import mlp_train


def test_kernels_keep_hidden_outputs_in_the_arena_and_allocate_what_the_caller_sees():
    # mlp_train's b1 kernel yields dz (an intermediate the next matmul reads) and the updated
    # b1 (written back into the caller's dict): dz goes to the arena, b1 is allocated.
    (x, y, params, lr), _ = mlp_train.make_inputs(size="quick")  # products >= OUT_MIN_BYTES
    compiled = fusejit.compile(mlp_train.train_step)
    ours, theirs = copy.deepcopy(params), copy.deepcopy(params)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x, y, ours, lr), mlp_train.train_step(x, y, theirs, lr),
                                   rtol=1e-5)
    for name in params:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-7)
    program = compiled.entry_for(x, y, ours, lr).paths[0].program
    layouts = program.arena.layouts
    mixed = [layout for layout in layouts.values()
             if any(spec is None for spec in layout) and any(spec is not None for spec in layout)]
    matmuls = [i for i in layouts if program.steps[i].node.op == "matmul"]
    assert mixed and matmuls


def test_im2col_concatenation_is_written_into_the_arena():
    # NumPy writes large concatenations and products into the arena (out=); small ones are
    # cheaper to allocate.
    from bench.models import conv
    (x, w, b), _ = conv.make_inputs(size="quick")
    compiled = fusejit.compile(conv.conv2d_relu)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x, w, b), conv.conv2d_relu(x, w, b), rtol=1e-5,
                                   atol=1e-6)
    program = compiled.entry_for(x, w, b).paths[0].program
    ops = {program.steps[i].node.op for i in program.arena.layouts}
    assert {"concatenate", "matmul"} <= ops


def test_small_products_are_left_to_numpy():
    from fusejit.runtime.arena import OUT_MIN_BYTES
    (x, y, params, lr), _ = mlp_train.make_inputs(size="small")
    compiled = fusejit.compile(mlp_train.train_step)
    compiled(x, y, params, lr)
    compiled(x, y, params, lr)
    program = compiled.entry_for(x, y, params, lr).paths[0].program
    assert all(step.node.op == "fused" for i, step in enumerate(program.steps)
               if i in program.arena.layouts)
    assert all(v.type.nbytes < OUT_MIN_BYTES for step in program.steps
               if step.node.op == "matmul" for v in step.node.outputs)


def _attention(x):
    s = x @ x.T
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return s @ x


def test_arenas_past_the_bound_are_freed_least_recently_used_first(monkeypatch):
    # One arena per shape, kept for the function's life: a model called with 16 sequence
    # lengths held 23 MiB of them (eager NumPy's largest peak: 12 MiB).
    from fusejit.runtime import arena
    monkeypatch.setenv("FUSEJIT_ARENA_MAX_MB", "1")
    monkeypatch.setattr(arena, "BUDGET", arena.ArenaBudget())
    compiled, rng = fusejit.compile(_attention), np.random.default_rng(0)
    arenas = {}
    for rows in (256, 320, 256, 384):     # 0.25, 0.39 and 0.56 MiB; 256 used again before 384
        x = rng.standard_normal((rows, 256)).astype(np.float32) * 0.01
        for _ in range(3):
            np.testing.assert_allclose(compiled(x), _attention(x), rtol=1e-4, atol=1e-7)
        arenas[rows] = compiled.entry_for(x).paths[0].program.arena
    assert [rows for rows, a in arenas.items() if a.by_thread] == [256, 384]
    assert arena.BUDGET.total == arenas[256].size + arenas[384].size <= 2**20


def test_an_evicted_arena_is_allocated_again_and_results_stay_right(monkeypatch):
    from fusejit.runtime import arena
    monkeypatch.setenv("FUSEJIT_ARENA_MAX_MB", "0")
    monkeypatch.setattr(arena, "BUDGET", arena.ArenaBudget())
    compiled, rng = fusejit.compile(_attention), np.random.default_rng(1)
    shapes = [(256, 64), (320, 64)] * 3
    kept = []
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32) * 0.1
        first = compiled(x)
        np.testing.assert_allclose(compiled(x), _attention(x), rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(first, _attention(x), rtol=1e-4, atol=1e-7)
        kept.append(len(arena.BUDGET.kept))
    assert kept[1:] == [1] * 5


def test_the_traced_calls_result_is_not_kept():
    import gc
    import weakref

    compiled = fusejit.compile(lambda x: np.tanh(x) * 2 + 1)
    for rows in (3, 4):
        result = compiled(np.ones((rows, 5), np.float32))
        alive = weakref.ref(result)
        del result
        gc.collect()
        assert alive() is None


def test_a_collected_functions_arena_leaves_the_budget(monkeypatch):
    import gc

    from fusejit.runtime import arena
    monkeypatch.setattr(arena, "BUDGET", arena.ArenaBudget())
    compiled = fusejit.compile(_attention)
    x = np.random.default_rng(2).standard_normal((256, 64)).astype(np.float32)
    for _ in range(3):
        compiled(x)
    assert arena.BUDGET.total > 0
    del compiled
    gc.collect()
    assert (arena.BUDGET.total, len(arena.BUDGET.kept)) == (0, 0)
