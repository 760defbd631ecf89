"""Timing: eager NumPy, ``fusejit.compile`` and peers side by side in one run.

For each workload: build inputs, run eager and compiled once and compare (a result that
differs is reported as MISMATCH and not timed), then time both with ``time.perf_counter``,
their samples taken in turn (warmup, N repeats, median and IQR), measure peak memory with
``tracemalloc`` and count kernels with ``explain``. Each peer then runs in a process of its
own, after eager NumPy there (``bench/peer_process.py`` says why), and eager and fusejit each
run alone in a plain process, as a user's script would (``bench/script_process.py``).
Tests never call its timing: benchmarks never decide pass or fail.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import math
import os
import subprocess
import sys
import threading
import time
import traceback
import tracemalloc
from pathlib import Path

import numpy as np

from fusejit.codegen import recycle
from fusejit.runtime import arena

from .workloads import REPEATS, compare, eager_output, fresh, nbytes, workloads

REPO_ROOT = Path(__file__).resolve().parent.parent
# A sample times a batch of back-to-back calls spanning at least this long (timeit's autorange
# batches span 0.2 s). After an eager sample (tens of ms on one core) the first few ms of a
# two-thread kernel run up to 2x slower while the idle second core comes back (np.copyto
# after a 25 ms sleep does the same): layernorm's compiled median was 0.95-0.98 ms in 5 ms
# samples and 0.84-0.86 ms in 20 ms ones, in one process, against 0.80 ms called in a loop.
MIN_SAMPLE_S = 0.02
# Samples span at least this long. On this shared host another tenant's load comes in bursts of
# 0.1-0.2 s that doubled a bandwidth-bound kernel (layernorm alone: 0.6-0.8 ms per call, 1.4-1.9
# in a burst), and 15 samples of a fast kernel took under 0.1 s: one burst moved the median.
MIN_TIMED_S = 0.5
MAX_REPEATS = 400
CALIBRATION_CALLS = 3  # timed calls that size a sample's batch (the fastest counts)
SCRIPT_ROUNDS = 3      # plain-script processes per side, eager and fusejit in turn


def time_calls(call, warmup, repeats):
    """Seconds per call: at least ``repeats`` samples after ``warmup`` untimed calls (at least
    one). Each sample is the mean of as many back-to-back calls as fill ``MIN_SAMPLE_S``, so
    that timer resolution and one-off scheduler hiccups on a shared machine do not dominate
    sub-millisecond calls (timeit's autorange does the same); samples are added until they
    span ``MIN_TIMED_S``."""
    return time_interleaved([call], warmup, repeats)[0]


def time_interleaved(calls, warmup, repeats):
    """``time_calls`` for several callables, their samples taken in turn (A B A B ...): load
    from other work on a shared machine then slows every column alike instead of skewing the
    ratio between them."""
    numbers, round_s = [], 0.0
    for call in calls:
        for _ in range(max(warmup, 1) - 1):
            call()
        elapsed = _call_seconds(call)
        numbers.append(max(1, math.ceil(MIN_SAMPLE_S / elapsed)))
        round_s += numbers[-1] * elapsed
    repeats = min(max(repeats, math.ceil(MIN_TIMED_S / round_s)), MAX_REPEATS)
    samples = [[] for _ in calls]
    for _ in range(repeats):
        for call, number, column in zip(calls, numbers, samples, strict=True):
            start = time.perf_counter()
            for _ in range(number):
                call()
            column.append((time.perf_counter() - start) / number)
    return samples


def _call_seconds(call) -> float:
    """One call's time for sizing the batches: the fastest of ``CALIBRATION_CALLS``. A single
    call can take several times the usual (the first calls of a compiled program build its
    fast paths; gpt2_decode's second call took 6.7 ms against 1.2 ms later): batches sized
    from it held 3 calls instead of 14, and the first call of each batch, which reads the
    weights back after the other side's batch, then weighed in 5 times as much."""
    best = math.inf
    for _ in range(CALIBRATION_CALLS):
        start = time.perf_counter()
        call()
        best = min(best, max(time.perf_counter() - start, 1e-9))
        if best >= MIN_SAMPLE_S:   # one call per batch either way
            break
    return best


def summarize(samples):
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return {"median_s": float(median), "iqr_s": float(q3 - q1), "n": len(samples)}


def peak_memory(call) -> int:
    """Peak bytes NumPy allocates during one call (NumPy reports its buffers to tracemalloc;
    buffers that compiled Numba code allocates through its own runtime are not seen). Dropped
    outputs' buffers kept for reuse are given back first: the figure is a call's own
    allocations, not what an earlier call left behind. So are the arenas of intermediates
    that compiled programs keep between calls: the call allocates its arena again, and it
    counts."""
    recycle.release()
    arena.BUDGET.release()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = call()
        peak = tracemalloc.get_traced_memory()[1] - base
        del result
    finally:
        tracemalloc.stop()
    return int(peak)


def copy_bandwidth(megabytes=128, threads=2, repeats=5) -> float:
    """Achieved bytes/s (read + write) of ``np.copyto`` on a large array, split across threads
    (NumPy releases the GIL while copying)."""
    copy, moved = threaded_copy(megabytes, threads)
    seconds = summarize(time_calls(copy, 1, repeats))["median_s"]
    return moved / seconds


def threaded_copy(megabytes=128, threads=2):
    """A call that copies ``megabytes`` with ``np.copyto``, split across ``threads``, and the
    bytes it moves (read + written)."""
    src = np.ones(megabytes * 2**20 // 8)
    dst = np.empty_like(src)
    chunks = np.array_split(np.arange(src.size), threads)
    bounds = [(int(c[0]), int(c[-1]) + 1) for c in chunks]

    def copy_part(lo, hi):
        np.copyto(dst[lo:hi], src[lo:hi])

    def copy_all():
        workers = [threading.Thread(target=copy_part, args=b) for b in bounds]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    return copy_all, 2 * src.nbytes


def compile_fn(workload):
    import fusejit

    if workload.static_argnames:
        return fusejit.compile(static_argnames=workload.static_argnames)(workload.fn)
    return fusejit.compile(workload.fn)


def count_kernels(compiled, args, kwargs):
    try:
        return len(compiled.explain(*args, **kwargs).kernels)
    except Exception:  # explain is optional for the table
        info = compiled.cache_info()
        return info.get("kernels_compiled", 0) + info.get("kernels_reused", 0)


def prepare_compiled(workload, args, kwargs, eager_out, timed):
    """Compile, check against eager, count kernels: a row with the timed ``call``, on the
    ``timed`` ``(args, kwargs)``. ``compile_s`` is the first call (the trace,
    which computes its result as NumPy does) and the first replay (Numba compiles or loads the
    kernels): both results are checked, the replay's being the compiled program's."""
    copies = [fresh(args, kwargs) for _ in range(2)]
    try:
        compiled = compile_fn(workload)
        start = time.perf_counter()
        outs = [compiled(*call_args, **call_kwargs) for call_args, call_kwargs in copies]
        compile_s = time.perf_counter() - start
    except Exception as exc:  # report, don't crash the whole bench
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    updated = eager_args_after(workload, args, kwargs) if workload.mutates_args else None
    try:
        for (call_args, _), out in zip(copies, outs, strict=True):
            compare(eager_out, out, workload.dtype)
            if updated is not None:  # the in-place updates must match too
                compare(updated, call_args, workload.dtype)
    except AssertionError as exc:
        return {"status": "MISMATCH", "error": str(exc).strip().splitlines()[0]}
    call_args, call_kwargs = timed
    return {
        "status": "ok",
        "compile_s": compile_s,
        "call": lambda: compiled(*call_args, **call_kwargs),
        "kernels": count_kernels(compiled, call_args, call_kwargs),
        "cache_info": dict(compiled.cache_info()),
    }


def eager_args_after(workload, args, kwargs):
    call_args, call_kwargs = fresh(args, kwargs)
    workload.fn(*call_args, **call_kwargs)
    return call_args


def run_child(code, args, env, module=None) -> dict:
    """One JSON line from ``python -c code args`` (or ``python -m module args``)."""
    entry = ["-m", module] if module else ["-c", code]
    proc = subprocess.run([sys.executable, *entry, *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:] if proc.stderr else ["failed"]
        return {"error": " | ".join(tail)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_elsewhere(module, workload, what, repeats=None) -> dict:
    """``python -m bench.<module> WORKLOAD WHAT SIZE DTYPE REPEATS`` in a fresh process."""
    result = run_child(None, [workload.name, what, workload.size, workload.dtype.name,
                              str(repeats or 0)], dict(os.environ), module=f"bench.{module}")
    return result if "status" in result else {"status": "error", **result}


def child_main(measure, argv=None) -> int:
    """``main`` of the modules ``run_elsewhere`` runs: one JSON line from ``measure``."""
    name, what, size, dtype, *rest = argv or sys.argv[1:]
    print(json.dumps(measure(name, what, size, np.dtype(dtype), int(rest[0]) if rest else 0)))
    return 0


def run_scripts(workload, repeats=None, rounds=SCRIPT_ROUNDS) -> dict:
    """Eager and fusejit each alone in a plain process (``bench/script_process.py``), in turn
    for ``rounds`` rounds: a burst of load from another tenant then slows one process of
    each side rather than a whole side (measured: quick ``mlp`` took 0.47-0.55 ms in most
    processes and 0.77 ms in a few, eager and fusejit alike). Each side reports the median of
    its processes' medians."""
    runs = {"eager": [], "fusejit": []}
    for _ in range(rounds):
        for which, results in runs.items():
            results.append(run_elsewhere("script_process", workload, which, repeats))
    script = {which: _median_of_runs(results) for which, results in runs.items()}
    if all(result.get("status") == "ok" for result in script.values()):
        script["speedup"] = script["eager"]["median_s"] / script["fusejit"]["median_s"]
    return script


def _median_of_runs(results: list[dict]) -> dict:
    """The first failure, or ``median_s`` and ``iqr_s`` over the runs' medians."""
    failed = [result for result in results if result.get("status") != "ok"]
    if failed:
        return failed[0]
    medians = [result["median_s"] for result in results]
    q1, median, q3 = np.percentile(medians, [25, 50, 75])
    return {"status": "ok", "median_s": float(median), "iqr_s": float(q3 - q1),
            "n": sum(result["n"] for result in results), "processes": len(results)}


def run_workload(workload, peers=True, repeats=None, scripts=True):
    """Eager NumPy and fusejit, their samples taken in turn; then each peer on its own."""
    warmup, timed = REPEATS[workload.size]
    args, kwargs = workload.inputs()
    eager_out = eager_output(workload, args, kwargs)
    # Both sides run on the same arrays, a workload's updates in place included (each call
    # does the same work whatever the values): with a copy each, the first call of every batch
    # read its copy of the weights back from memory after the other side's batch.
    timed_args, timed_kwargs = fresh(args, kwargs) if workload.mutates_args else (args, kwargs)
    eager_call = lambda: workload.fn(*timed_args, **timed_kwargs)
    fusejit_row = prepare_compiled(workload, args, kwargs, eager_out, (timed_args, timed_kwargs))
    if fusejit_row["status"] == "ok":
        call = fusejit_row.pop("call")
        eager, samples = time_interleaved([eager_call, call], warmup, repeats or timed)
        fusejit_row.update(summarize(samples), peak_bytes=peak_memory(call))
    else:
        eager = time_calls(eager_call, warmup, repeats or timed)
    row = {
        "workload": workload.name, "size": workload.size, "dtype": workload.dtype.name,
        "bytes_moved": nbytes((args, kwargs)) + nbytes(eager_out),
        "eager": {"status": "ok", **summarize(eager), "peak_bytes": peak_memory(eager_call)},
        "fusejit": fusejit_row,
        "peers": {name: run_elsewhere("peer_process", workload, name, repeats)
                  for name, _ in (workload.peers if peers else ())},
    }
    if scripts and fusejit_row["status"] == "ok":
        row["script"] = run_scripts(workload, repeats)
    add_ratios(row)
    return row


def add_ratios(row):
    for result in [row["fusejit"], *row["peers"].values()]:
        if result.get("status") == "ok":
            eager_s = result.get("eager_median_s", row["eager"]["median_s"])
            result["speedup"] = eager_s / result["median_s"]
            result["bandwidth_Bps"] = row["bytes_moved"] / result["median_s"]
    row["eager"]["bandwidth_Bps"] = row["bytes_moved"] / row["eager"]["median_s"]


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory(megabytes=512) -> bool:
    """Let glibc keep freed blocks of up to ``megabytes`` in the heap for reuse.

    Eager NumPy's speed on large arrays depends on its allocator: by default glibc maps blocks
    above a dynamic threshold (128 KiB at start, rising to at most 32 MiB as large blocks are
    freed) straight from the OS and unmaps them on free, so every temporary page-faults its
    memory in again (eager layernorm at 4096x1024: 16.8 ms that way, 10.3 ms with freed memory
    reused). Which state a process is in depends on what it freed before. Fixing the
    thresholds measures eager NumPy at its fastest, whatever ran earlier: the conservative
    baseline. Returns False where the C library is not glibc (nothing changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        limit = megabytes * 2**20
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, limit)
                    and libc.mallopt(_M_TRIM_THRESHOLD, 2 * limit))
    except (OSError, AttributeError):
        return False


def run_all(size="bench", dtype=np.float32, only=None, peers=True, repeats=None, log=print,
            scripts=True):
    """Run every workload; returns ``{"copy_bandwidth_Bps": ..., "rows": [...]}``."""
    if keep_freed_memory():
        log("allocator: glibc keeps freed blocks for reuse (eager NumPy at its fastest)")
    bandwidth = copy_bandwidth(megabytes=64 if size == "quick" else 256)
    log(f"copy bandwidth: {bandwidth / 1e9:.1f} GB/s")
    rows = []
    for workload in workloads(size, dtype, only):
        log(f"running {workload.name} ({size}, {workload.dtype.name}) ...")
        try:
            rows.append(run_workload(workload, peers, repeats, scripts))
        except Exception:  # an eager failure is a bug in the model: show it
            log(traceback.format_exc())
            rows.append({"workload": workload.name, "size": size, "error": "eager failed"})
    return {"copy_bandwidth_Bps": bandwidth, "rows": rows}
