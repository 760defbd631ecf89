"""One peer on one workload, in a process of its own:

    python -m bench.peer_process WORKLOAD PEER SIZE DTYPE [REPEATS]      (one JSON line)

jax, PyTorch, numexpr, OpenBLAS and Numba each keep a pool of worker threads that spin for a
while after a parallel call (OpenBLAS's for about 2^28 cycles). On a 2-core machine a library
timed right after another one also measures the other's spinning pool. With fusejit and every
peer taking turns in one process, ``jax.jit``'s MLP took 35 ms and ``torch.compile``'s 52 ms,
against 22.7 and 25.6 ms when each was timed after the others had finished. Taking turns with
eager NumPy's BLAS calls in a process of their own, they took 38.5 and 88.5 ms; a 0.2 s sleep
before each sample made every column slower and noisier instead. So each peer runs here alone,
after eager NumPy: eager's samples (before the peer's library is even imported), then at
least ``SETTLE_S`` of untimed peer calls, then the peer's samples. Its speedup is against that
eager time.
"""
from __future__ import annotations

import sys
import time

from .harness import child_main, keep_freed_memory, summarize, time_calls
from .workloads import REPEATS, compare_values, eager_output, workloads

SETTLE_S = 0.3  # of untimed peer calls: longer than OpenBLAS's workers spin after eager's calls


def measure(name: str, peer: str, size: str, dtype, repeats: int = 0) -> dict:
    """The peer's row: status, compile_s, median_s, iqr_s, n and ``eager_median_s``."""
    keep_freed_memory()
    workload = workloads(size, dtype, [name])[0]
    warmup, timed = REPEATS[size]
    args, kwargs = workload.inputs()
    eager_out = eager_output(workload, args, kwargs)
    eager = time_calls(lambda: workload.fn(*args, **kwargs), warmup, repeats or timed)
    result = prepare_peer(workload, dict(workload.peers)[peer], args, kwargs, eager_out)
    if result["status"] != "ok":
        return result
    peer_call = result.pop("call")
    start = time.perf_counter()
    while time.perf_counter() - start < SETTLE_S:
        peer_call()
    samples = time_calls(peer_call, warmup, repeats or timed)
    return {**result, **summarize(samples), "eager_median_s": summarize(eager)["median_s"]}


def prepare_peer(workload, builder, args, kwargs, eager_out):
    """Build and check one peer: a row with the timed ``call``, or why it did not run."""
    try:
        call = builder(workload.name, args, kwargs)
    except ImportError as exc:
        return {"status": "skipped", "error": f"not installed ({exc.name or exc})"}
    try:
        start = time.perf_counter()
        out = call()
        first_call_s = time.perf_counter() - start
        compare_values(eager_out, out, workload.dtype)
    except AssertionError as exc:
        return {"status": "MISMATCH", "error": str(exc).strip().splitlines()[0]}
    except Exception as exc:
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok", "compile_s": first_call_s, "call": call}


if __name__ == "__main__":
    sys.exit(child_main(measure))
