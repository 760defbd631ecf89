"""``python -m bench [--quick] [--only NAME ...] [--dtype f32|f64] [--no-peers] [--no-scripts]``.

Runs every workload eagerly and through ``fusejit.compile`` in one process, prints a table,
writes ``bench/results/bench-<date>.json`` and, with matplotlib, a PNG of the speedups.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from . import harness, report
from .models import MODELS


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[2])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes and fewer repeats (under 3 minutes)")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(MODELS),
                        help="run only these workloads")
    parser.add_argument("--dtype", default="f32", choices=("f32", "f64"))
    parser.add_argument("--repeats", type=int, help="timed repeats per measurement")
    parser.add_argument("--no-peers", action="store_true", help="skip numexpr/numba/jax/torch")
    parser.add_argument("--no-scripts", action="store_true",
                        help="skip timing eager and fusejit each alone in a plain process")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    size = "quick" if args.quick else "bench"
    dtype = np.float32 if args.dtype == "f32" else np.float64
    log = lambda message: print(message, file=sys.stderr, flush=True)
    results = harness.run_all(size, dtype, args.only, not args.no_peers, args.repeats, log,
                              not args.no_scripts)
    results["meta"] = report.metadata(size, dtype)
    print(report.render(results))
    path = report.write_json(results)
    print(f"\nresults: {path}")
    print(report.write_plot(results, path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
