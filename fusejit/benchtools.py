"""Timing helpers shared by ``fusejit bench`` and ``fusejit demo``. Never used by tests."""
from __future__ import annotations

import statistics
import time
import tracemalloc

import numpy as np


def time_calls(fn, args, kwargs, repeat: int) -> dict:
    """Median and interquartile range of ``repeat`` calls, after one warm-up call."""
    fn(*args, **kwargs)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        samples.append(time.perf_counter() - start)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) >= 2 else samples * 3
    return {"median_s": statistics.median(samples), "iqr_s": quartiles[2] - quartiles[0]}


def peak_bytes(fn, args, kwargs) -> int:
    """Peak traced allocation of one call (NumPy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def compile_latency(function: str, specs) -> dict:
    """Cold (empty cache) and warm (that cache, new process) first-call latency."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    command = [sys.executable, "-m", "fusejit.benchprobe", function]
    for spec in specs:
        command += ["--arg", spec]
    result = {}
    with tempfile.TemporaryDirectory(prefix="fusejit-bench-") as tmp:
        env = dict(os.environ, FUSEJIT_CACHE_DIR=tmp)
        for run in ("cold", "warm"):
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=900)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"{run} compile probe failed: {last}")
            timings = json.loads(done.stdout.strip().splitlines()[-1])
            result[f"{run}_first_result_s"] = round(timings["trace_s"], 4)
            result[f"{run}_to_first_replay_s"] = round(
                timings["trace_s"] + timings["first_replay_s"], 4)
    return result


def bench_function(compiled, fn, args, kwargs, repeat=20) -> dict:
    start = time.perf_counter()
    compiled(*args, **kwargs)   # first: an error in the model names the user's line
    first_call = time.perf_counter() - start
    expected = fn(*args, **kwargs)
    _check_equal(expected, compiled(*args, **kwargs))
    eager, fused = time_calls(fn, args, kwargs, repeat), time_calls(compiled, args, kwargs, repeat)
    explanation = compiled.explain(*args, **kwargs)
    return {
        "first_call_s": round(first_call, 4),
        "eager_median_ms": round(eager["median_s"] * 1e3, 4),
        "eager_iqr_ms": round(eager["iqr_s"] * 1e3, 4),
        "compiled_median_ms": round(fused["median_s"] * 1e3, 4),
        "compiled_iqr_ms": round(fused["iqr_s"] * 1e3, 4),
        "speedup": round(eager["median_s"] / fused["median_s"], 3),
        "kernels": len(explanation.kernels),
        "blas_calls": len(explanation.blas_calls),
        "eager_peak_bytes": peak_bytes(fn, args, kwargs),
        "compiled_peak_bytes": peak_bytes(compiled, args, kwargs),
    }


def _check_equal(expected, actual) -> None:
    from .tracer import flatten
    for a, b in zip(flatten(expected)[0], flatten(actual)[0], strict=True):
        if isinstance(a, (np.ndarray, np.generic, float)) and np.asarray(a).dtype.kind in "biufc":
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5, equal_nan=True)
        elif isinstance(a, (np.ndarray, np.generic)):   # strings, objects: exactly
            np.testing.assert_array_equal(b, a)
