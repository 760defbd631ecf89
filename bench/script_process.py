"""Eager NumPy or fusejit alone in a fresh process with glibc's default allocator, as a user's
own script runs them:

    python -m bench.script_process WORKLOAD eager|fusejit SIZE DTYPE [REPEATS]  (one JSON line)

The main table measures eager NumPy at its fastest (``harness.keep_freed_memory``). A plain
script does not get that: glibc maps large blocks from the OS and returns them on free, so
eager NumPy's temporaries page-fault their memory in on every call (the elementwise chain at
4096x1024: 20.2 ms in a plain script, 9.0 ms with freed memory kept). Which state a process is
in depends on everything it allocated and freed before, so each side runs alone here, the
function called back to back and nothing else, and the result is checked against eager NumPy
after the timing.
"""
from __future__ import annotations

import sys

from .harness import child_main, compile_fn, summarize, time_calls
from .workloads import REPEATS, compare, eager_output, fresh, workloads


def measure(name: str, which: str, size: str, dtype, repeats: int = 0) -> dict:
    """``median_s``, ``iqr_s`` and ``n`` of ``which`` ("eager" or "fusejit") called alone."""
    workload = workloads(size, dtype, [name])[0]
    warmup, timed = REPEATS[size]
    args, kwargs = workload.inputs()
    fn = compile_fn(workload) if which == "fusejit" else workload.fn
    call_args, call_kwargs = fresh(args, kwargs) if workload.mutates_args else (args, kwargs)
    fn(*call_args, **call_kwargs)  # fusejit compiles here: not in the calls that size a sample
    samples = time_calls(lambda: fn(*call_args, **call_kwargs), warmup, repeats or timed)
    if which == "fusejit":  # after the timing, which eager's buffers must not precede
        want = eager_output(workload, args, kwargs)
        check_args, check_kwargs = fresh(args, kwargs)
        try:
            compare(want, fn(*check_args, **check_kwargs), dtype)
        except AssertionError as exc:
            return {"status": "MISMATCH", "error": str(exc).strip().splitlines()[0]}
    return {"status": "ok", **summarize(samples)}


if __name__ == "__main__":
    sys.exit(child_main(measure))
