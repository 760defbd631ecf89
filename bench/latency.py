"""Compile latency: ``python -m bench.latency [--layers 12] [--json]``.

For the GPT-2 block and a multi-layer GPT-2 forward (bench sizes: seq 128, n_embd 768,
12 heads), each measured in fresh processes so that nothing is shared but the disk cache:

- cold: empty ``FUSEJIT_CACHE_DIR`` and ``NUMBA_CACHE_DIR``; the first call (trace: the body
  runs eagerly and is recorded) and the first replay (optimize, generate, Numba-compile, run);
- warm: a new process over the cache the cold run filled (Numba disk-cache hits);
- new shape: in the warm process, a new sequence length: the first call (trace, optimize,
  lower: the result), then with the first replay added; kernels compiled meanwhile;
- dispatch: a cache-hit call of a 5-kernel program on 4x4 inputs, against the eager call;
- peers: ``jax.jit`` and ``torch.compile`` on the same models (cold compile, new shape,
  dispatch; ``bench/latency_peers.py``), or "not installed".

Figures are wall-clock seconds on this machine; quote them with the machine's load in mind.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from bench.harness import REPO_ROOT, run_child
from bench.latency_peers import PEERS

# Runs in a child process: prints one JSON line of timings and cache counters.
PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import fusejit
from bench.models import gpt2_block as m
t_import = time.perf_counter() - t0
from bench.latency_peers import gpt2_inputs
which, layers = sys.argv[1], int(sys.argv[2])
inputs = lambda seq: gpt2_inputs(which, seq, layers)

fn = m.block if which == "block" else m.gpt2
compiled = fusejit.compile(fn)
args = inputs(128)
t = time.perf_counter(); compiled(*args); first = time.perf_counter() - t
t = time.perf_counter(); compiled(*args); replay = time.perf_counter() - t
t = time.perf_counter(); fn(*args); eager = time.perf_counter() - t
before = compiled.cache_info()["kernels_compiled"]
args64 = inputs(64)
t = time.perf_counter(); compiled(*args64); new_first = time.perf_counter() - t
compiled(*args64); new_shape = time.perf_counter() - t
print(json.dumps({"import_s": t_import, "first_call_s": first, "first_replay_s": replay,
                  "eager_call_s": eager, "to_first_replay_s": t_import + first + replay,
                  "new_shape_first_call_s": new_first, "new_shape_s": new_shape,
                  "new_shape_kernels_compiled": compiled.cache_info()["kernels_compiled"] - before,
                  "cache_info": compiled.cache_info()}))
"""

DISPATCH = r"""
import json, time
import numpy as np
import fusejit
from bench.models.tiny import five_kernels, make_inputs

x, y = make_inputs()
f = fusejit.compile(five_kernels)
f(x, y); f(x, y)
def median(call, n=3000):
    samples = []
    for _ in range(n):
        t = time.perf_counter(); call(); samples.append(time.perf_counter() - t)
    return sorted(samples)[n // 2]
eager, compiled = median(lambda: five_kernels(x, y)), median(lambda: f(x, y))
print(json.dumps({"kernels": len(f.explain(x, y).kernels), "eager_us": eager * 1e6,
                  "compiled_us": compiled * 1e6}))
"""


def cold_and_warm(which: str, layers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="fusejit-latency-") as tmp:
        env = dict(os.environ, FUSEJIT_CACHE_DIR=f"{tmp}/fusejit",
                   NUMBA_CACHE_DIR=f"{tmp}/numba", PYTHONPATH=str(REPO_ROOT))
        cold = run_child(PROBE, [which, str(layers)], env)
        warm = run_child(PROBE, [which, str(layers)], env)
    return {"cold": cold, "warm": warm}


def summary_rows(results) -> list[str]:
    rows = [f"{'workload':<14} {'run':<5} {'import':>7} {'trace':>7} {'replay1':>8} "
            f"{'total':>7} {'eager':>7} {'new shape':>10} {'+replay':>8} {'new kernels':>11}"]
    for name in ("block", "gpt2"):
        for run in ("cold", "warm"):
            r = results[name][run]
            if "error" in r:
                rows.append(f"{name:<14} {run:<5} error: {r['error']}")
                continue
            rows.append(f"{name:<14} {run:<5} {r['import_s']:>7.2f} {r['first_call_s']:>7.2f} "
                        f"{r['first_replay_s']:>8.2f} {r['to_first_replay_s']:>7.2f} "
                        f"{r['eager_call_s']:>7.3f} {r['new_shape_first_call_s']:>10.2f} "
                        f"{r['new_shape_s']:>8.2f} "
                        f"{r['new_shape_kernels_compiled']:>11}")
    d = results["dispatch"]
    rows.append("dispatch (5-kernel program, 4x4): " + (
        d.get("error") or f"{d['compiled_us']:.1f} us compiled vs {d['eager_us']:.1f} us "
                          f"eager ({d['kernels']} kernels)"))
    return rows + [_peer_row(peer, runs) for peer, runs in results.get("peers", {}).items()]


def _peer_row(peer: str, runs: dict) -> str:
    """``jax.jit: block cold 1.20 s, new shape 0.40 s; gpt2 ...; dispatch 30.0 us``."""
    parts, dispatch = [], None
    for which, r in runs.items():
        if "skipped" in r or "error" in r:
            return f"{peer}: {r.get('skipped') or 'error: ' + r['error']}"
        parts.append(f"{which} cold {r['first_call_s']:.2f} s, new shape "
                     f"{r['new_shape_first_call_s']:.2f} s")
        dispatch = r["dispatch_us"]
    return f"{peer}: " + "; ".join(parts) + f"; dispatch {dispatch:.1f} us"


def peer_results(layers: int, env: dict) -> dict:
    """Each installed peer, per model, in a fresh process; a missing one is skipped once."""
    results = {}
    for peer in PEERS:
        runs = {}
        for which, depth in (("block", 1), ("gpt2", layers)):
            runs[which] = run_child(None, [peer, which, str(depth)], env,
                                    module="bench.latency_peers")
            if "skipped" in runs[which]:
                break
        results[peer] = runs
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    parser.add_argument("--layers", type=int, default=12, help="GPT-2 layers (default 12)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    results = {"block": cold_and_warm("block", 1), "gpt2": cold_and_warm("gpt2", args.layers),
               "dispatch": run_child(DISPATCH, [], env),
               "peers": peer_results(args.layers, env)}
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        print(f"seconds; GPT-2 at seq 128, n_embd 768, 12 heads; gpt2 = {args.layers} layers; "
              "new shape = seq 64")
        print("\n".join(summary_rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
