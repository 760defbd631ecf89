"""Latency figures: ``python -m bench.latency``.

- cold compile: first call in a fresh process with empty ``FUSEJIT_CACHE_DIR`` and
  ``NUMBA_CACHE_DIR`` (trace + optimize + codegen + Numba compile + run);
- warm start: first call in another fresh process reusing that cache (disk hits);
- new-shape retrace: same process, a second input shape (expect a trace, no new kernels);
- dispatch overhead: a cache-hit call on 4x4 inputs, against the eager call.

Each process measurement runs ``python -c PROBE`` so that no import or cache is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent

# Runs in a child process: prints one JSON line with its timings and fusejit's cache counters.
PROBE = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import fusejit
from bench.models import load
t1 = time.perf_counter()
fn, make_inputs = load(sys.argv[1])
args, kwargs = make_inputs(size="small")
compiled = fusejit.compile(fn)
t2 = time.perf_counter()
compiled(*args, **kwargs)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_call_s": t3 - t2,
                  "cache_info": dict(compiled.cache_info())}))
"""


def run_probe(model, env) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, model], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cold_and_warm(model) -> dict:
    with tempfile.TemporaryDirectory(prefix="fusejit-latency-") as tmp:
        env = dict(os.environ, FUSEJIT_CACHE_DIR=f"{tmp}/fusejit", NUMBA_CACHE_DIR=f"{tmp}/numba")
        cold = run_probe(model, env)
        warm = run_probe(model, env)
    return {"cold": cold, "warm": warm}


def median_seconds(call, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def retrace(model) -> dict:
    import fusejit

    from .models import load

    fn, make_inputs = load(model)
    compiled = fusejit.compile(fn)
    (x, *rest), kwargs = make_inputs(size="small")
    compiled(x, *rest, **kwargs)
    before = dict(compiled.cache_info())
    bigger = np.concatenate([x, x])                      # a new leading dimension
    start = time.perf_counter()
    compiled(bigger, *rest, **kwargs)
    seconds = time.perf_counter() - start
    after = dict(compiled.cache_info())
    return {"retrace_s": seconds, "cache_info_before": before, "cache_info_after": after}


def dispatch(model, repeats=2000) -> dict:
    import fusejit

    from .models import load

    fn, make_inputs = load(model)
    args, kwargs = make_inputs(size="small")
    args = tuple(a[:4, :4] if isinstance(a, np.ndarray) and a.ndim == 2 else a for a in args)
    compiled = fusejit.compile(fn)
    compiled(*args, **kwargs)
    eager_s = median_seconds(lambda: fn(*args, **kwargs), repeats)
    compiled_s = median_seconds(lambda: compiled(*args, **kwargs), repeats)
    return {"eager_us": eager_s * 1e6, "compiled_us": compiled_s * 1e6,
            "overhead_us": (compiled_s - eager_s) * 1e6}


def guarded(name, measure, *args):
    try:
        return measure(*args)
    except Exception as exc:  # the runtime may not exist yet: report, don't crash
        return {"error": f"{name}: {type(exc).__name__}: {exc}"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    parser.add_argument("--model", default="gelu", help="workload (default: gelu)")
    args = parser.parse_args(argv)
    results = {
        "model": args.model,
        **guarded("cold/warm", cold_and_warm, args.model),
        "new_shape": guarded("retrace", retrace, args.model),
        "dispatch_4x4": guarded("dispatch", dispatch, args.model),
    }
    print(json.dumps(results, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
