"""The one-input workloads on F-ordered arguments: ``python -m bench.layouts [--size bench]``.

An F-ordered argument (``x.T`` passed in, an array from Fortran code) keys apart from a
C-ordered one and compiles in its memory order (``fusejit/runtime/input_layouts.py``). For
tanh-GELU, the 8-op chain, softmax and layernorm (float32, ``bench/models``), each argument
F-ordered, this times compiled against eager NumPy side by side (samples taken in turn, as in
``python -m bench``) and checks the compiled result's values and layout against NumPy's first.
A last row has the 8-op chain's first input F-ordered beside two C-ordered ones (its kernel
copies it C-ordered by tiles first: ``fusejit/codegen/relayout.py``).
Timing only: nothing here decides pass or fail. Writes ``bench/results/layouts-<date>.json``.
"""
from __future__ import annotations

import argparse

import numpy as np

from . import harness, report
from .workloads import compare, workloads

NAMES = ("gelu_f32", "elementwise", "softmax", "layernorm")


def measure(workload, repeats: int, fortran: int | None = None) -> dict:
    """``fortran``: how many leading arguments are F-ordered (all when None)."""
    import fusejit

    args, _ = workload.inputs()
    count = len(args) if fortran is None else fortran
    args = [np.asfortranarray(a) if k < count else a for k, a in enumerate(args)]
    compiled = fusejit.compile(workload.fn)
    compiled(*args)   # the trace, whose result NumPy computes: the check is on a replay
    want, got = workload.fn(*args), compiled(*args)
    compare(want, got, workload.dtype)
    assert got.strides == want.strides, f"strides {got.strides}, NumPy's {want.strides}"
    samples = harness.time_interleaved([lambda: compiled(*args), lambda: workload.fn(*args)],
                                       2, repeats)
    fused_s, eager_s = (harness.summarize(s)["median_s"] for s in samples)
    return {"workload": workload.name, "shape": list(args[0].shape),
            "order": "".join("F" if k < count else "C" for k in range(len(args))),
            "fusejit_s": fused_s,
            "eager_s": eager_s, "speedup": eager_s / fused_s,
            "kernels": len(compiled.explain(*args).kernels)}


def format_row(row: dict) -> str:
    return (f"{row['workload']:<12} {row['order']:>5} {'x'.join(map(str, row['shape'])):>10} "
            f"{row['eager_s'] * 1e3:9.2f} {row['fusejit_s'] * 1e3:9.2f} "
            f"{row['speedup']:8.2f}x {row['kernels']:>7}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.layouts",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="bench", choices=("small", "quick", "bench"))
    parser.add_argument("--repeats", type=int, default=15, help="timed samples of each")
    options = parser.parse_args(argv)
    harness.keep_freed_memory()
    print(f"{'workload':<12} {'order':>5} {'shape':>10} {'eager ms':>9} {'fusejit':>9} "
          f"{'ratio':>9} {'kernels':>7}")
    rows = []
    for workload in workloads(options.size, np.float32, NAMES):
        rows.append(measure(workload, options.repeats))
        print(format_row(rows[-1]))
        if workload.name == "elementwise":
            rows.append(measure(workload, options.repeats, fortran=1))
            print(format_row(rows[-1]))
    result = {**report.metadata(options.size, np.float32), "order": "F", "rows": rows}
    print(f"results: {report.write_json(result, prefix='layouts')}")


if __name__ == "__main__":
    main()
