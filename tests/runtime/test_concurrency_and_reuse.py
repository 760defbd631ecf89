"""Compile once: concurrent first calls, identical layers, new shapes."""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fusejit
from bench.models import gpt2_block
from tests.oracle import assert_same


def _in_threads(count, call):
    """``call(i)`` in ``count`` threads at once: (results by i, exceptions raised)."""
    results, errors = [None] * count, []

    def run(i):
        try:
            results[i] = call(i)
        except Exception as exc:  # noqa: BLE001 -- returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


def test_eight_threads_first_calling_one_function_trace_it_once():
    traced = []

    @fusejit.compile
    def scaled_softmax(x):
        traced.append(1)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    barrier = threading.Barrier(8)

    def call(i):
        barrier.wait()
        return scaled_softmax(x)

    results, errors = _in_threads(8, call)
    assert not errors
    assert len(traced) == 1 and scaled_softmax.cache_info()["traces"] == 1
    for result in results:
        assert_same(scaled_softmax.fn(x), result)


def test_identical_gpt2_layers_compile_each_kernel_once():
    (ids, params, n_head), _ = gpt2_block.make_gpt2_inputs(size="small")
    one = dict(params, blocks=params["blocks"][:1])
    four = dict(params, blocks=[params["blocks"][0]] * 4)
    single, deep = fusejit.compile(gpt2_block.gpt2), fusejit.compile(gpt2_block.gpt2)
    single(ids, one, n_head)
    single(ids, one, n_head)
    deep(ids, four, n_head)
    deep(ids, four, n_head)
    kernels_per_layer = len(single.explain(ids, one, n_head).kernels)
    assert len(deep.explain(ids, four, n_head).kernels) > 3 * kernels_per_layer // 2
    assert deep.cache_info()["kernels_compiled"] == 0  # every structure already existed
    assert_same(gpt2_block.gpt2(ids, four, n_head), deep(ids, four, n_head))


def test_new_sequence_length_traces_again_and_compiles_nothing():
    (ids, params, n_head), _ = gpt2_block.make_gpt2_inputs(size="small")
    compiled = fusejit.compile(gpt2_block.gpt2)
    compiled(ids, params, n_head)
    compiled(ids, params, n_head)
    before = compiled.cache_info()
    shorter = ids[: len(ids) // 2]
    assert_same(gpt2_block.gpt2(shorter, params, n_head), compiled(shorter, params, n_head))
    assert_same(gpt2_block.gpt2(shorter, params, n_head), compiled(shorter, params, n_head))
    after = compiled.cache_info()
    assert after["traces"] == before["traces"] + 1
    assert after["kernels_compiled"] == before["kernels_compiled"]


def test_traces_started_at_once_in_two_threads_run_one_after_the_other():
    # One trace at a time in a process (runtime/compiled.py _TRACING): the second waits for
    # the first. Each wraps np.asarray while it runs (tracer/conversions.py); NumPy's is back
    # after both.
    # A log the bodies append to, not a number they change: that would trace again
    # (tracer/pystate.py).
    original, start = np.asarray, threading.Barrier(2, timeout=60)
    running, seen = [], []

    def make(scale):
        def body(x):
            x = np.asarray(x)
            running.append(1)
            seen.append(len(running))
            time.sleep(0.05)
            running.pop()
            return x * scale
        return fusejit.compile(body)

    compiled = [make(2.0), make(3.0)]
    x = np.arange(6, dtype=np.float32)
    def call(i):
        start.wait()
        return compiled[i](x)

    results, errors = _in_threads(2, call)
    assert not errors and np.asarray is original and max(seen) == 1
    for fn, result, scale in zip(compiled, results, (2.0, 3.0), strict=True):
        assert_same(x * scale, result)
        assert_same(x * scale, fn(x))          # a replay: the trace compiled
        assert fn.cache_info()["eager_calls"] == 0 and fn.cache_info()["hits"] == 1


class _Paused:
    def __init__(self):
        self.w = np.arange(4.0)
        self.inside, self.go_on = threading.Event(), threading.Event()

    @fusejit.compile
    def scaled(self, x):
        y = x * self.w
        self.inside.set()      # this trace holds self.w's proxy until go_on
        self.go_on.wait(10)
        return y

    @fusejit.compile
    def shifted(self, x):
        return x - self.w


def test_a_method_traced_while_another_method_of_the_object_traces_waits_for_it():
    # Before, the second trace took the first one's proxy of self.w for a rebinding: its
    # replays set self.w = None (or, strict, failed verification).
    model, x, results = _Paused(), np.ones(4), {}
    first = threading.Thread(target=lambda: results.update(scaled=model.scaled(x)))
    second = threading.Thread(target=lambda: results.update(shifted=model.shifted(x)))
    first.start()
    assert model.inside.wait(10)
    second.start()
    second.join(0.3)           # blocked until the first trace ends
    model.go_on.set()
    first.join(10)
    second.join(10)
    assert_same(x - np.arange(4.0), results["shifted"])
    assert_same(x * np.arange(4.0), results["scaled"])
    model.w[:] = 10.0
    for _ in range(2):
        assert_same(x - model.w, model.shifted(x))
    assert type(model.w) is np.ndarray
    assert _Paused.shifted.cache_info()["hits"] == 2


def test_a_constant_shaped_by_a_guarded_value_keeps_both_paths():
    # np.ones(t + 1) differs between the paths of t = 0 and t = 1: before, each new path
    # dropped the other as stale, and alternating calls traced every time.
    def head(x, t):
        return x[:, :t + 1] @ np.ones(t + 1)

    compiled, x = fusejit.compile(head), np.ones((4, 8))
    for i in range(6):
        assert_same(head(x, np.int64(i % 2)), compiled(x, np.int64(i % 2)))
    info = compiled.cache_info()
    assert info["traces"] == 2 and info["hits"] == 4


# Four threads calling one compiled softmax large enough for its prange variant, and a 4 MiB
# im2col run by the parallel copy loop (codegen/concat.py), under Numba's workqueue threading
# layer (its default without OpenMP or TBB), which aborts the whole process when two threads
# enter parallel regions at once.
WORKQUEUE_SCRIPT = r"""
import threading
import numpy as np
import fusejit
from bench.models.softmax import softmax
def im2col(x):
    return np.stack([x[:, i:i + 60, j:j + 60] for i in range(3) for j in range(3)], axis=1)
compiled, failures = fusejit.compile(softmax), []
stacked = fusejit.compile(im2col)
def work(seed):
    x = np.random.default_rng(seed).standard_normal((1024, 1024)).astype(np.float32)
    for _ in range(6):
        if not np.allclose(compiled(x), softmax(x), rtol=1e-5, atol=1e-8):
            failures.append(seed)
        image = x[:32 * 62].reshape(32, 62, 1024)[:, :, :62]
        if not np.array_equal(stacked(image), im2col(image)):
            failures.append(seed)
threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
import numba
print(numba.threading_layer(), len(failures))
"""


def _run_under_layer(script: str, layer: str, cache_dir) -> subprocess.CompletedProcess:
    """``script`` in a fresh process with ``NUMBA_THREADING_LAYER=layer``; it must succeed."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer, FUSEJIT_CACHE_DIR=str(cache_dir),
               PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_threads_running_parallel_kernels_at_once_under_the_workqueue_layer(tmp_path):
    done = _run_under_layer(WORKQUEUE_SCRIPT, "workqueue", tmp_path)
    assert done.stdout.split() == ["workqueue", "0"]


# A softmax large enough for its prange variant, with a threading layer Numba cannot load:
# each prange launch raises ValueError before it runs. It used to be retraced 8 times (23 s
# for 12 calls of one reduction) and then run eagerly.
NO_THREADS_SCRIPT = r"""
import numpy as np
import fusejit
from bench.models.softmax import softmax
compiled = fusejit.compile(softmax)
x = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
for _ in range(3):
    assert np.allclose(compiled(x), softmax(x), rtol=1e-5, atol=1e-8)
stacked = fusejit.compile(lambda x: np.stack([x[:, 1:], x[:, :-1]], axis=1))
image = x[:512].reshape(16, 32, 1024)   # 4 MiB: the parallel copy loop's size
for _ in range(2):
    assert np.array_equal(stacked(image), np.stack([image[:, 1:], image[:, :-1]], axis=1))
loop = stacked.cache_info()   # a failed parallel launch retraced every call
assert (loop["traces"], loop["hits"], loop["eager_calls"]) == (1, 1, 0), loop
info = compiled.cache_info()
print(info["traces"], info["hits"], info["eager_calls"])
"""


def test_kernels_run_serially_when_numba_cannot_start_its_threads(tmp_path):
    try:
        from numba.np.ufunc import tbbpool  # noqa: F401 -- only its absence matters
        pytest.skip("TBB is installed, so Numba's tbb threading layer starts: this test needs "
                    "a machine where the requested layer cannot (the CI venv has no TBB)")
    except ImportError:
        pass
    done = _run_under_layer(NO_THREADS_SCRIPT, "tbb", tmp_path)
    assert done.stdout.split() == ["1", "2", "0"]
    assert done.stderr.count("Numba could not start its threads") == 1, done.stderr[-2000:]


def test_a_forked_child_gets_a_free_parallel_region_lock(monkeypatch):
    # A child forked while another thread ran a prange variant inherited the held lock and
    # would have run serial variants only.
    from fusejit.codegen import kernel
    held = kernel._PARALLEL_REGION
    monkeypatch.setattr(kernel, "_PARALLEL_REGION", held)   # restored afterwards
    monkeypatch.setattr(kernel, "_parallel_ran", False)
    with held:
        kernel._new_region_lock()   # what os.register_at_fork runs in the child
        assert kernel._PARALLEL_REGION is not held
        assert kernel._PARALLEL_REGION.acquire(blocking=False)
        kernel._PARALLEL_REGION.release()
    monkeypatch.setattr(kernel, "_parallel_ran", True)
    kernel._new_region_lock()       # after the parent ran a prange variant: serial for good
    assert not kernel._PARALLEL_REGION.acquire(blocking=False)


# A forked pool after the parent ran a prange variant (GNU OpenMP killed the children, and the
# pool waited for ever), and a child forked while another thread traced (it inherited the
# held tracing lock and waited for ever on its first trace).
FORK_SCRIPT = r"""
import multiprocessing as mp, threading, time
import numpy as np
import fusejit

@fusejit.compile
def f(x):
    return np.exp(-x * x) * 2 + 1

@fusejit.compile
def slow(x):
    time.sleep(2)
    return x + 1

def child(rows):
    return float(f(np.full((rows, 1024), 0.5)).sum())

if __name__ == "__main__":
    for _ in range(3):
        f(np.full((512, 1024), 0.5))
    tracing = threading.Thread(target=slow, args=(np.ones(3),))
    tracing.start()
    time.sleep(0.3)
    with mp.get_context("fork").Pool(2) as pool:
        sums = pool.map_async(child, [4, 512, 4, 512]).get(timeout=120)
    tracing.join()
    want = [float((np.exp(-0.25) * 2 + 1) * rows * 1024) for rows in (4, 512, 4, 512)]
    print(np.allclose(sums, want, rtol=1e-6))
"""


def test_forked_children_after_parallel_kernels_and_during_a_trace(tmp_path):
    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "fork_script.py"
    script.write_text(FORK_SCRIPT)
    env = dict(os.environ, FUSEJIT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True"]
