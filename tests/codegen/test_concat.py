"""Concatenations of short rows run as a generated copy loop (``codegen/concat.py``); the
others, and any call whose inputs' rows are not unit-stride, stay NumPy's. Every result is
compared with NumPy's (``tests/oracle.py``: integer and bool exactly)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fusejit
from fusejit.codegen import concat
from fusejit.codegen.concat import MIN_BYTES, PARALLEL_MIN_BYTES, loop_source
from tests.oracle import assert_same, check_calls


def _kinds(compiled, *args) -> list[str]:
    return [k.kind for k in compiled.explain(*args).kernels]


def _im2col(x):
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    windows = [xp[:, i:i + x.shape[1], j:j + x.shape[2]] for i in range(3) for j in range(3)]
    return np.stack(windows, axis=1) * 2


def _three_ways(a, b):
    return (np.concatenate([a, b, a], axis=0), np.concatenate([a, b], axis=1),
            np.stack([a, b], axis=2))


def _views(a):
    rows = a[::-1]                                  # negative stride across rows
    window = a[:, 1:a.shape[1] - 1]                 # strided rows, unit-stride within
    return np.concatenate([rows[:, 1:-1], window, a[::2].repeat(2, 0)[:, 2:]], axis=1)


def _broadcasts(a):
    spread = np.broadcast_to(a[0], a.shape)         # read-only, stride 0 across rows
    return np.concatenate([spread, np.broadcast_to(a[-1], a.shape)], axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8,
                                   np.bool_, np.complex128])
def test_short_rows_are_copied_by_the_loop_exactly(dtype):
    x = (np.arange(6 * 40 * 48) % 7).astype(dtype).reshape(6, 40, 48)
    compiled = check_calls(_im2col, lambda call: (x + np.asarray(call).astype(dtype),))
    assert "concatenate" in _kinds(compiled, x)


@pytest.mark.parametrize("shape", [(512, 64), (700, 17), (64, 1030)])
def test_each_axis_and_ragged_rows(shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    compiled = check_calls(_three_ways, lambda call: (a + call, a * 2 - call))
    # the stack along a new last axis has rows of one element: NumPy's
    assert _kinds(compiled, a, a).count("concatenate") == 2


@pytest.mark.parametrize("fn", [_views, _broadcasts])
def test_views_with_any_stride_across_rows(fn):
    a = np.arange(400 * 96, dtype=np.float64).reshape(400, 96)
    compiled = check_calls(fn, lambda call: (a - call,))
    assert "concatenate" in _kinds(compiled, a)


def test_the_loop_copies_views_of_one_type_itself():
    # views of any stride across rows, of one Numba type: the loop runs (returns True)
    a = np.arange(300 * 40, dtype=np.float32).reshape(300, 40)
    for parts in ([a[::-1, 1:], a[::2, :-1].repeat(2, 0)[::2]], [np.broadcast_to(a[0], a.shape),
                                                                 np.broadcast_to(a[1], a.shape)]):
        loop = _loop(fusejit.compile(lambda *p: np.concatenate(p, axis=0)), parts)
        out = np.full((sum(p.shape[0] for p in parts), parts[0].shape[1]), np.nan, np.float32)
        assert loop.module.concat(out, tuple(parts))
        np.testing.assert_array_equal(out, np.concatenate(parts, axis=0))


def _loop(compiled, parts):
    compiled(*parts)
    program = compiled.entry_for(*parts).paths[0].program
    return next(k for k in program.kernels if getattr(k, "kind", "") == "concatenate")


def test_inputs_laid_out_by_columns_are_left_to_numpy():
    # The same compiled program meets a transposed argument: its rows are columns of memory,
    # which the loop declines before writing anything, and NumPy concatenates.
    def f(a, b):
        return np.concatenate([a, b], axis=1)

    a = np.arange(200 * 80, dtype=np.float32).reshape(200, 80)
    compiled = fusejit.compile(f)
    assert_same(compiled(a, a + 1), f(a, a + 1))
    assert "concatenate" in _kinds(compiled, a, a)
    for b in (np.asfortranarray(a), a.T.copy().T, a[:, ::-1]):
        assert_same(compiled(a, b), f(a, b))
        assert_same(compiled(b, a), f(b, a))


@pytest.mark.parametrize("case", ["small", "single-element rows", "float16"])
def test_numpy_concatenates_where_it_is_as_fast_or_numba_cannot(case):
    n = MIN_BYTES // 8
    a = {"small": np.ones((4, 8)), "single-element rows": np.ones((n, 1)),
         "float16": np.ones((n, 4), np.float16)}[case]

    def f(a, b):
        return np.concatenate([a, b], axis=1) + 1

    compiled = check_calls(f, lambda call: (a + call, a * 3))
    assert "concatenate" not in _kinds(compiled, a, a)


def test_explain_and_the_kernel_stages_show_the_loop():
    x = np.ones((6, 40, 48), np.float32)
    compiled = fusejit.compile(_im2col)
    compiled(x)
    assert "concatenate_9x4d  [concatenate] fuses 1 op" in str(compiled.explain(x))
    assert "# a copy loop (codegen/concat.py), 9 inputs along axis 1" in compiled.ir(
        x, stage="kernels")
    assert "def concat(out, inputs):" in compiled.ir(x, stage="source")


def test_the_loop_writes_into_the_arena_and_its_result_is_numpys():
    from bench.models import conv
    (x, w, b), _ = conv.make_inputs(size="quick")
    compiled = check_calls(conv.conv2d_relu, lambda call: (x + call, w, b))
    assert "concatenate" in _kinds(compiled, x, w, b)
    program = compiled.entry_for(x, w, b).paths[0].program
    looped = [i for i, step in enumerate(program.steps) if type(step.fn).__name__ == "ConcatLoop"]
    assert looped and all(program.steps[i].in_arena for i in looped)


def test_a_returned_concatenation_is_a_fresh_writeable_array():
    def f(a):
        joined = np.concatenate([a, a * 2], axis=1)
        joined[0, 0] = -1
        return joined, a

    a = np.arange(300 * 64, dtype=np.float32).reshape(300, 64)
    compiled = check_calls(f, lambda call: (a + call,))
    out, _ = compiled(a)
    assert out.flags.c_contiguous and out.flags.writeable and out.flags.owndata


@pytest.mark.parametrize("fn, parallel", [(_im2col, True), (_three_ways, None)])
def test_large_results_share_their_rows_between_threads(fn, parallel):
    # im2col's 9 MiB (axis 1 of 4, 16 leading rows) runs concat_parallel; of _three_ways'
    # 2-D results, the one along axis 1 does and the one along axis 0 cannot (no axis before)
    x = np.random.default_rng(1).standard_normal((16, 128, 128)).astype(np.float32)
    args = (x,) if fn is _im2col else (x.reshape(1024, 256), x.reshape(1024, 256) * 2)
    compiled = check_calls(fn, lambda call: tuple(a + call for a in args))
    program = compiled.entry_for(*args).paths[0].program
    loops = [k for k in program.kernels if getattr(k, "kind", "") == "concatenate"]
    assert all(k.node.out.type.nbytes >= PARALLEL_MIN_BYTES for k in loops)
    if parallel:
        assert [k.parallel for k in loops] == [True]
    else:
        assert sorted((k.axis, k.parallel) for k in loops) == [(0, False), (1, True)]


def test_small_results_stay_serial():
    x = np.ones((6, 40, 48), np.float32)   # a 0.4 MiB im2col: one thread copies it faster
    compiled = check_calls(_im2col, lambda call: (x * call,))
    program = compiled.entry_for(x).paths[0].program
    assert [k.parallel for k in program.kernels if getattr(k, "kind", "") == "concatenate"] \
        == [False]


def test_the_parallel_loop_recovers_each_leading_index():
    # axes 0..2 flattened into one prange: each row lands where NumPy puts it
    module_source = loop_source(4, 3)
    assert "for flat in numba.prange(out.shape[0] * out.shape[1] * out.shape[2]):" in \
        module_source
    assert "def concat_parallel" not in loop_source(3, 0)
    a = np.arange(3 * 5 * 7 * 40, dtype=np.float64).reshape(3, 5, 7, 40)
    parts = (a, a[..., ::-1].copy())
    loop = _loop(fusejit.compile(lambda *p: np.concatenate(p, axis=3)), parts)
    out = np.full((3, 5, 7, 80), np.nan)
    assert loop.module.concat_parallel(out, parts)
    np.testing.assert_array_equal(out, np.concatenate(parts, axis=3))


def test_the_loop_source_walks_the_result_in_order():
    # the loop over the inputs runs inside the loops over the axes before ``axis``: each
    # stretch of the result is written whole before the next
    body = loop_source(3, 1)
    body = body[body.index("def concat"):]
    assert body.index("for i0 in range(out.shape[0])") < body.index("part = inputs[j]")
    assert body.index("part = inputs[j]") < body.index("for i1 in range(part.shape[1])")
    assert "dst = crow(out, (i0, start + i1))" in body
    assert "dst[start + k] = src[k]" in loop_source(2, 1)


@st.composite
def _concatenations(draw):
    """1-4 inputs of one small shape but the axis, some of them views whose rows are reversed,
    stepped or broadcast (the loop), or transposed (NumPy's), in one dtype."""
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    axis = draw(st.integers(-ndim, ndim - 1))
    dtype = draw(st.sampled_from([np.float64, np.int32, np.bool_, np.complex64]))
    parts, kinds = [], []
    for _ in range(draw(st.integers(1, 4))):
        part_shape = list(shape)
        part_shape[axis] = draw(st.integers(0, 3))
        kind = draw(st.sampled_from(["plain", "reversed", "stepped", "broadcast", "transposed"]))
        parts.append(_made(part_shape, dtype, kind, len(parts)))
        kinds.append(kind)
    return parts, axis, kinds


def _made(shape, dtype, kind, seed):
    size = int(np.prod(shape))
    values = (np.arange(size) * 7 + seed * 3) % 5 - 2
    base = values.astype(dtype).reshape(shape)
    if kind == "reversed" and base.ndim > 1:
        return np.ascontiguousarray(base[::-1])[::-1]
    if kind == "stepped" and base.ndim > 1:
        wide = np.repeat(base, 2, axis=0)
        return wide[::2]
    if kind == "broadcast" and base.ndim > 1 and base.shape[0]:
        return np.broadcast_to(base[:1], base.shape)
    if kind == "transposed" and base.ndim > 1:
        return np.ascontiguousarray(base.T).T
    return base


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the same patch each
@given(_concatenations())
def test_the_loop_equals_numpy_on_any_small_concatenation(monkeypatch, case):
    # every size and row length, forced through the loop (MIN_BYTES, MIN_ROW at 0)
    monkeypatch.setattr(concat, "MIN_BYTES", 0)
    monkeypatch.setattr(concat, "MIN_ROW", 0)
    parts, axis, _ = case

    def f(*parts):
        return np.concatenate(parts, axis=axis) * 1

    compiled = fusejit.compile(f)
    for _ in range(2):   # the trace, then a replay
        assert_same(f(*parts), compiled(*parts))
    assert "concatenate" in _kinds(compiled, *parts)
