"""CUDA backend cases for Numba's simulator (and, with FUSEJIT_CUDA_REAL=1, a real GPU).
Run by ``test_simulator.py`` in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the simulator replaces ``numba.cuda`` at import, so it never shares
a process with the rest of the suite); not collected on its own (no ``test_`` prefix)."""
import copy
import os

import numpy as np
import pytest

import fusejit
from tests.cuda.cases import all_cases, structure_cases
from tests.oracle import assert_same, tolerance_for

REAL_GPU = os.environ.get("FUSEJIT_CUDA_REAL") == "1"   # bench/gpu.py runs these on a GPU
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and not REAL_GPU:
    pytest.skip("runs under NUMBA_ENABLE_CUDASIM=1 (or FUSEJIT_CUDA_REAL=1 on a GPU)",
                allow_module_level=True)

from numba import cuda  # noqa: E402 -- after the simulator check

from fusejit.runtime.cuda import cuda_usable, simulator_active  # noqa: E402

CASES = list(all_cases())
TOLERANCE = tolerance_for(np.float32)


def run_twice(fn, args, kwargs, convert=lambda x: x):
    """The first call traces (and returns NumPy's own result); the second replays the
    compiled CUDA program. Returns (eager, replayed, compiled function)."""
    compiled = fusejit.compile(fn, target="cuda")
    with np.errstate(all="ignore"):
        compiled(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        eager_args, eager_kwargs = copy.deepcopy((args, kwargs))
        expected = fn(*eager_args, **eager_kwargs)
        run_args, run_kwargs = copy.deepcopy((args, kwargs))
        replayed = compiled(*convert(run_args), **run_kwargs)
    return expected, replayed, compiled, (eager_args, run_args)


@pytest.mark.parametrize("case_id, fn, args, kwargs", CASES, ids=[c[0] for c in CASES])
def test_case_matches_eager(case_id, fn, args, kwargs):
    expected, replayed, compiled, (eager_args, run_args) = run_twice(fn, args, kwargs)
    assert_same(expected, replayed, TOLERANCE)
    assert_same(eager_args, run_args, TOLERANCE)  # in-place updates replayed
    info = compiled.cache_info()
    assert info["traces"] == 1 and info["hits"] == 1, info
    assert info["eager_signatures"] == 0


# (the program of an in-place update also returns the updated argument)
IN_PLACE = {"setitem-index", "setitem-several-host"}
STRUCTURE = [c for c in structure_cases() if "guard" not in c[0] and c[0] not in IN_PLACE]


@pytest.mark.parametrize("case_id, fn, args", STRUCTURE, ids=[c[0] for c in STRUCTURE])
def test_device_inputs_give_device_results(case_id, fn, args):
    """The CudaProgram itself: device-array inputs stay on the device, results too."""
    compiled = fusejit.compile(fn, target="cuda")
    program = compiled.entry_for(*args).paths[0].program
    results = program.run([cuda.to_device(x) for x in args])
    assert all(hasattr(r, "copy_to_host") for r in results)
    expected = fn(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert_same(expected, tuple(r.copy_to_host() for r in results), TOLERANCE)
    again = program.run([cuda.to_device(x) for x in args])  # the arena is reused
    assert_same(expected, tuple(r.copy_to_host() for r in again), TOLERANCE)


def test_a_mean_count_goes_to_the_device_once(monkeypatch):
    # The count a layernorm divides by is a kernel operand (it keeps the kernel generic over
    # the row length): replays with device inputs upload nothing.
    from fusejit.codegen import cuda_arrays

    def layer_norm(x):
        centered = x - x.mean(-1, keepdims=True)
        return centered / np.sqrt(x.var(-1, keepdims=True) + 1e-5)

    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    compiled, on_device = fusejit.compile(layer_norm, target="cuda"), cuda.to_device(x)
    compiled(on_device)   # traces
    compiled(on_device)   # the first replay sends the count
    uploads, upload = [], cuda_arrays.upload
    monkeypatch.setattr(cuda_arrays, "upload", lambda a, s: uploads.append(a) or upload(a, s))
    for _ in range(2):
        assert_same(layer_norm(x), compiled(on_device).copy_to_host(), TOLERANCE)
    assert uploads == []


def test_guards_pick_the_branch_on_replay():
    def branchy(x):
        return x * 2 if x.sum() > 0 else x - 1
    compiled = fusejit.compile(branchy, target="cuda")
    positive, negative = np.ones((2, 3), np.float32), -np.ones((2, 3), np.float32)
    for x in (positive, negative, positive, negative):
        np.testing.assert_array_equal(compiled(x), branchy(x))
    assert compiled.cache_info()["traces"] == 2


def test_simulator_is_not_a_usable_gpu():
    assert simulator_active() != cuda_usable()
    assert simulator_active() != REAL_GPU


def _program(case_id):
    fn, args = next((c[1], c[2]) for c in structure_cases() if c[0] == case_id)
    compiled = fusejit.compile(fn, target="cuda")
    compiled(*copy.deepcopy(args))
    return compiled.entry_for(*args).paths[0].program


def test_kernels_are_listed_with_source():
    kinds = set()
    for case_id in ("injective", "setitem-several-host"):
        program = _program(case_id)
        assert all(k.source and k.name and k.key for k in program.kernels)
        kinds.update(getattr(k, "kind", "?") for k in program.kernels)
    assert kinds >= {"host", "injective"}


@pytest.mark.parametrize("case_id", ["injective", "concatenate-mixed", "setitem-region",
                                     "setitem-index", "gather"])
def test_injective_ops_run_on_the_device(case_id):
    # pad, concatenate, setitem and gather were host round-trips (conv and gpt2_decode ran
    # slower on an H200 than NumPy on its host); test_case_matches_eager checks the values
    kinds = [getattr(k, "kind", "?") for k in _program(case_id).kernels]
    assert "injective" in kinds and "host" not in kinds, kinds


def _embed(w, ids):
    return w[ids] * 2


def test_an_index_out_of_range_on_the_device_raises_numpys_error():
    # the kernel flags it; the call traces again and NumPy raises from the user's line
    compiled = fusejit.compile(_embed, target="cuda")
    w = np.arange(15, dtype=np.float32).reshape(5, 3)
    for ids in ([0, 4], [-5, 1]):
        assert_same(_embed(w, np.array(ids)), compiled(w, np.array(ids)), TOLERANCE)
    for on_device in (False, True):
        convert = cuda.to_device if on_device else np.asarray
        compiled(convert(w), convert(np.array([0, 1])))   # traced for device arguments
        for bad in ([1, 5], [-6, 0]):
            with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5") as info:
                compiled(convert(w), convert(np.array(bad)))
            assert any(__file__ in note for note in info.value.__notes__)
    hits = compiled.cache_info()["hits"]
    assert_same(_embed(w, np.array([3, 2])), compiled(w, np.array([3, 2])), TOLERANCE)
    assert compiled.cache_info()["hits"] == hits + 1   # the flag was cleared


def _columns(x, ids):
    return x[:, ids] * 2


def _set_columns(x, ids):
    y = x * 1
    y[:, ids] = 1
    return y


@pytest.mark.parametrize("fn", [_columns, _set_columns], ids=["gather", "setitem"])
def test_an_index_out_of_range_of_an_empty_array_raises_as_numpys(fn):
    # nothing to move, but NumPy checks the indices: the kernel was skipped and the call
    # returned an empty result
    compiled = fusejit.compile(fn, target="cuda")
    x = np.zeros((0, 3), np.float32)
    for ids in ([1], [-3], [2]):
        assert_same(fn(x, np.array(ids)), compiled(x, np.array(ids)), TOLERANCE)
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(x, np.array([5]))
    assert compiled.cache_info()["eager_signatures"] == 0


def _matmul_plus_one(a, b):
    return a @ b + 1


def test_a_matmul_with_no_rows_compiles():
    # the split-K kernel's store had an empty body: the signature ran eagerly
    compiled = fusejit.compile(_matmul_plus_one, target="cuda")
    a, b = np.ones((0, 5), np.float32), np.ones((5, 3), np.float32)
    for _ in range(2):
        assert_same(_matmul_plus_one(a, b), compiled(a, b), TOLERANCE)
    assert compiled.cache_info()["eager_signatures"] == 0


def _embed_then_branch(w, ids):
    y = w[ids]
    return y * 2 if (ids * 1).sum() > 0 else y - 1


def test_an_out_of_range_flag_left_by_a_failed_guard_does_not_fail_the_next_call():
    # the guard after the gather fails (the call never reaches the flag's check): the next
    # call must not see the flag
    compiled = fusejit.compile(_embed_then_branch, target="cuda")
    w = np.arange(15, dtype=np.float32).reshape(5, 3)
    compiled(w, np.array([1, 2]))
    compiled(w, np.array([2, 3]))
    with pytest.raises(IndexError):
        compiled(w, np.array([-7, 1]))
    info = compiled.cache_info()
    ids = np.array([4, 0])
    assert_same(_embed_then_branch(w, ids), compiled(w, ids), TOLERANCE)
    assert compiled.cache_info()["hits"] == info["hits"] + 1
    assert compiled.cache_info()["traces"] == info["traces"]


@pytest.mark.skipif(not REAL_GPU, reason="the buffer pool serves a GPU only (bench/gpu.py)")
def test_results_reuse_pooled_memory_and_live_results_keep_theirs():
    from fusejit.codegen.cuda_pool import POOL
    compiled = fusejit.compile(_embed, target="cuda")
    w, ids = cuda.to_device(np.ones((64, 32), np.float32)), cuda.to_device(np.arange(8))
    kept = compiled(w, ids)
    compiled(w, ids)                      # compiles and replays
    before = POOL.allocations
    for k in range(5):
        result = compiled(w, cuda.to_device(np.arange(8) * 0 + k))
        assert_same(np.full((8, 32), 2, np.float32), result.copy_to_host(), TOLERANCE)
        del result
    assert POOL.allocations - before <= 2           # a dead result's buffer is taken again
    assert_same(np.full((8, 32), 2, np.float32), kept.copy_to_host(), TOLERANCE)


@pytest.mark.skipif(not REAL_GPU, reason="direct launches serve a GPU only (bench/gpu.py)")
def test_kernels_launch_directly_after_their_first_launch():
    # Numba's dispatcher typed and wrapped every argument on every launch (0.1 ms each)
    fn, args = next((c[1], c[2]) for c in structure_cases() if c[0] == "layernorm-rows")
    compiled = fusejit.compile(fn, target="cuda")
    for _ in range(3):
        assert_same(fn(*args), compiled(*args), TOLERANCE)
    program = compiled.entry_for(*args).paths[0].program
    launchers = [k._launch for k in program.kernels if hasattr(k, "_launch")]
    assert launchers and all(launcher.direct is not None for launcher in launchers)


def test_results_numpy_made_views_of_one_copy_stay_device_arrays():
    # the runtime copies such a group on the host (returned_views._separated): a device
    # array is handed out as it is instead, never given to NumPy's view calls
    def raveled(x):
        y = x.T + 0
        r = y.ravel()
        return y, r[:3], r[1:]

    compiled = fusejit.compile(raveled, target="cuda")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(3):
        results = compiled(cuda.to_device(x))
        assert all(hasattr(r, "copy_to_host") for r in results)
        assert_same(raveled(x), tuple(r.copy_to_host() for r in results), TOLERANCE)


@pytest.mark.parametrize("body", [lambda a, b: a @ b, lambda a, b: a[1] * b[2] + np.median(a)],
                         ids=["dot", "host-median"])
def test_a_0d_result_of_device_inputs_is_a_scalar_on_every_call(body):
    # a 0-d host result went up as shape (1,) and came back as a (1,) device array
    compiled = fusejit.compile(body, target="cuda")
    a = np.arange(5, dtype=np.float32)
    for _ in range(3):
        got = compiled(cuda.to_device(a), cuda.to_device(a))
        assert np.shape(got) == () and not hasattr(got, "copy_to_host")
        assert_same(body(a, a), got, TOLERANCE)


def test_a_strided_view_result_of_device_inputs_on_the_traced_call():
    # the traced call's result went to the device as it was: CUDA refuses a strided buffer
    compiled = fusejit.compile(lambda x: x[::-1, ::2], target="cuda")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for _ in range(3):
        assert_same(x[::-1, ::2], compiled(cuda.to_device(x)).copy_to_host(), TOLERANCE)


def test_a_signature_that_runs_eagerly_writes_into_its_device_arguments():
    # the body ran on the device arrays themselves (trace: on host copies, never copied back)
    def row_update(x, t):
        row = x[t % 2]   # a view by a traced integer, written through: eager
        row += 1

    compiled = fusejit.compile(row_update, target="cuda")
    for _ in range(3):
        d = cuda.to_device(np.zeros((2, 3), np.float32))
        compiled(d, np.array(1, np.int32))
        np.testing.assert_array_equal(d.copy_to_host(), [[0, 0, 0], [1, 1, 1]])
    assert compiled.cache_info()["eager_calls"] >= 2


def test_a_write_through_a_transposed_device_argument_is_replayed():
    def transposed_update(x):
        y = x.T          # a view holding every element once: written through to x
        y += 1

    compiled = fusejit.compile(transposed_update, target="cuda")
    for _ in range(3):
        d = cuda.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
        compiled(d)
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(1, 7).reshape(2, 3))
    assert compiled.cache_info()["eager_calls"] == 0


def test_signed_zeros_of_maximum_minimum_and_clip_follow_numpy():
    # np.maximum/np.minimum give the second of two equal operands (-0.0, +0.0); np.clip with
    # single-valued bounds keeps the value. The CUDA kernels gave the first.
    def extremes(a, b):
        return np.maximum(a, b), np.minimum(a, b), np.clip(a, 0.0, 1.0), np.clip(a, b, 1.0)

    a = np.array([-0.0, 0.0, -0.0, 0.0, np.nan], np.float32)
    b = np.array([0.0, -0.0, -0.0, 0.0, 1.0], np.float32)
    expected, replayed, _, _ = run_twice(extremes, (a, b), {})
    for want, got in zip(expected, replayed, strict=True):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.signbit(got)[:4], np.signbit(want)[:4])


def _sharing(results, args) -> list:
    """Which results share memory with which results and arguments (the graph NumPy makes)."""
    results = results if isinstance(results, tuple) else (results,)
    return [np.shares_memory(r, other) for r in results for other in (*results, *args)]


def _view_of_result(x):
    y = x * 2
    return y, y[1:], y.T


def _view_of_argument(x):
    return x[1:], x * 2, x.reshape(-1)


def _view_taken_before_a_write(x):
    v = x[::2]
    x += 1
    return v, x * 3


def _one_result_twice(x):
    y = x + 1
    return y, y, y[0]


def _reversed_views(x):
    y = x * 2
    return y, y[::-1], x[::-1]      # negative strides: views lowered as host steps


@pytest.mark.parametrize("fn", [_view_of_result, _view_of_argument, _view_taken_before_a_write,
                                _one_result_twice, _reversed_views])
def test_results_share_memory_as_numpys_with_numpy_inputs(fn):
    # each result came back from the device as its own copy: y[1:] did not share y's memory,
    # x[1:] not the caller's x, and a result returned twice was two arrays
    compiled = fusejit.compile(fn, target="cuda")
    for _ in range(3):
        eager_args = (np.arange(12, dtype=np.float32).reshape(3, 4),)
        run_args = copy.deepcopy(eager_args)
        expected, got = fn(*eager_args), compiled(*run_args)
        assert_same(expected, got, TOLERANCE)
        assert_same(eager_args, run_args, TOLERANCE)
        assert _sharing(got, run_args) == _sharing(expected, eager_args)
        assert [r is got[0] for r in got] == [r is expected[0] for r in expected]
    assert compiled.cache_info()["hits"] == 2


def _add_one_then_double(x):
    x += 1
    return x * 2


def test_an_in_place_update_of_a_strided_device_view_writes_through_its_strides():
    # CUDA transfers contiguous buffers only: copying the update back into d[:, ::2] raised,
    # and every call traced again and raised
    compiled = fusejit.compile(_add_one_then_double, target="cuda")
    base, host = cuda.to_device(np.zeros((2, 4), np.float32)), np.zeros((2, 4), np.float32)
    for _ in range(3):
        got = compiled(base[:, ::2])
        assert_same(_add_one_then_double(host[:, ::2]), got.copy_to_host(), TOLERANCE)
        np.testing.assert_array_equal(base.copy_to_host(), host)
    assert compiled.cache_info()["hits"] == 2


def _write_one_read_other(x, y):
    x += 1
    return y * 2


@pytest.mark.parametrize("views", [lambda d: (d, d), lambda d: (d[1:], d[:3])],
                         ids=["same-array", "overlapping-views"])
def test_device_arguments_that_share_memory_see_each_others_writes(views):
    # each device argument went to the host as its own copy: y did not see x's write (y * 2
    # of the old values, on every call)
    compiled = fusejit.compile(_write_one_read_other, target="cuda")
    for _ in range(3):
        host = np.arange(6, dtype=np.float32)
        device = cuda.to_device(host)
        got = compiled(*views(device))
        assert_same(_write_one_read_other(*views(host)), got.copy_to_host(), TOLERANCE)
        np.testing.assert_array_equal(device.copy_to_host(), host)


def test_overlapping_device_views_that_are_only_read_replay():
    def differences(a, b):
        return b - a

    compiled = fusejit.compile(differences, target="cuda")
    values = np.arange(6, dtype=np.float32) ** 2
    for _ in range(3):
        device = cuda.to_device(values)
        got = compiled(device[:-1], device[1:])
        assert_same(differences(values[:-1], values[1:]), got.copy_to_host(), TOLERANCE)
    assert compiled.cache_info()["hits"] == 2


def _reversed_results(x):
    return x * 2, x[::-1] + 0, (x + 1)[::-1]


def test_device_arguments_and_results_with_negative_strides():
    # Numba copies no negative strides to the host (a GPU raises NotImplementedError; the
    # simulator does not): such arrays go through a contiguous device copy first
    compiled = fusejit.compile(_reversed_results, target="cuda")
    updating = fusejit.compile(_add_one_then_double, target="cuda")
    for _ in range(3):
        base, host = cuda.to_device(np.arange(6, dtype=np.float32)), np.arange(6, dtype=np.float32)
        got = compiled(base[::-1])
        assert_same(_reversed_results(host[::-1]), tuple(r.copy_to_host() for r in got), TOLERANCE)
        got = updating(base[::-1])
        assert_same(_add_one_then_double(host[::-1]), got.copy_to_host(), TOLERANCE)
        np.testing.assert_array_equal(base.copy_to_host(), host)


def _complex_to_real(z):
    return z.astype(np.float64) + 1


def test_a_complex_warning_names_the_users_line_on_cuda_replays():
    # the declined complex kernel ran through the reference interpreter: it named ir/ops.py
    import warnings
    compiled = fusejit.compile(_complex_to_real, target="cuda")
    z = np.array([1 + 2j, 3 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _complex_to_real(z)
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert_same(expected, compiled(z), TOLERANCE)
        assert [(w.category, w.filename) for w in caught] == [
            (np.exceptions.ComplexWarning, __file__)]


def _momentum_into(vel, g):
    vel["w"] = np.float32(0.9) * vel["w"] - g   # a new array into the caller's dict
    return g * 2


def test_new_arrays_stored_into_a_dict_of_device_arrays_reach_it_on_every_call():
    # the traced call ran on host copies of the dict: its new item goes back to the device
    compiled = fusejit.compile(_momentum_into, target="cuda")
    vel, want = {"w": cuda.to_device(np.zeros(4, np.float32))}, np.zeros(4, np.float32)
    for step in range(3):
        g = np.full(4, step + 1, np.float32)
        compiled(vel, cuda.to_device(g))
        want = np.float32(0.9) * want - g
        assert hasattr(vel["w"], "copy_to_host")
        np.testing.assert_allclose(vel["w"].copy_to_host(), want, rtol=1e-6)
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (1, 2, 0)


def _count_into(x, d):
    d["t"] += 1.0                  # a Python float stored into the caller's dict
    return x + 1, d["t"] * 2.0     # and one returned


def test_python_floats_of_device_calls_are_read_back_as_python_floats():
    compiled = fusejit.compile(_count_into, target="cuda")
    d, x = {"t": 0.0}, np.arange(4, dtype=np.float32)
    for step in range(1, 4):
        y, doubled = compiled(cuda.to_device(x), d)
        assert type(d["t"]) is float and d["t"] == step
        assert type(doubled) is float and doubled == 2.0 * step
        np.testing.assert_array_equal(y.copy_to_host(), x + 1)
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (1, 2, 0)
