"""Build every kernel the CUDA cases generate, compile each to PTX for cc 9.0 and assemble it
with ``ptxas -arch=sm_90 -v``. Run by ``test_ptx.py`` in a subprocess WITHOUT the simulator
(``compile_ptx`` needs the real ``numba.cuda``). Usage: ``python -m tests.cuda.ptx_cases OUTDIR``;
writes one report per kernel plus ``summary.txt``; exits 1 on a ptxas error or any spill."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

from fusejit.codegen.numba_cuda import ptx_report
from fusejit.passes import run_pipeline
from fusejit.runtime.cuda import lower_cuda
from fusejit.tracer import trace
from tests.cuda.cases import all_cases

SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def unique_kernels():
    """(case id, kernel) for every distinct generated kernel (by key)."""
    seen: set[str] = set()
    for case_id, fn, args, kwargs in all_cases():
        with np.errstate(all="ignore"):
            recorded = trace(fn, args, kwargs, name=re.sub(r"\W", "_", case_id))
        program = lower_cuda(run_pipeline(recorded.graph).graph)
        for kernel in program.kernels:
            if getattr(kernel, "kind", "") == "host":
                continue
            for part in getattr(kernel, "parts", (kernel,)):   # an injective op's launches
                if part.key not in seen:
                    seen.add(part.key)
                    yield case_id, part


def check(kernel, case_id: str, out_dir: Path) -> str | None:
    """Writes the report; returns a problem (error or spill) or None."""
    try:
        report = ptx_report(kernel)
    except Exception as exc:  # noqa: BLE001 -- every failure is reported, none hides another
        return f"{case_id}: {kernel.name}: {type(exc).__name__}: {exc}"
    (out_dir / f"{kernel.key}.txt").write_text(f"# case {case_id}\n{kernel.source}\n{report}")
    spills = [int(a) + int(b) for a, b in SPILL.findall(report)]
    if not spills:
        return f"{case_id}: {kernel.name}: no resource report in ptxas output"
    if any(spills):
        return f"{case_id}: {kernel.name}: spills ({report.strip().splitlines()[-3:]})"
    return None


def _multiply_add(a, b, c):
    return np.floor(a * b + c), (a * a).sum(-1) - c.sum(-1)


def contraction_problems() -> list[str]:
    """A product then a sum must stay two roundings, as NumPy's: NVVM contracts ``a * b + c``
    into one FMA by default (on an H200, floor(x * 10 + y) and E[x**2] - E[x]**2 differed)."""
    problems = []
    for dtype in (np.float32, np.float64):
        args = tuple(np.ones((4, 8), dtype) for _ in range(3))
        recorded = trace(_multiply_add, args, {}, name=f"multiply_add_{dtype.__name__}")
        for kernel in lower_cuda(run_pipeline(recorded.graph).graph).kernels:
            if "fma." in kernel.ptx((9, 0)):
                problems.append(f"{kernel.name} ({dtype.__name__}): an FMA in its PTX")
    return problems


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    problems, count = contraction_problems(), 0
    for case_id, kernel in unique_kernels():
        count += 1
        problem = check(kernel, case_id, out)
        if problem:
            problems.append(problem)
    summary = [f"{count} kernels assembled for sm_90, {len(problems)} problems"] + problems
    (out / "summary.txt").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "ptx-reports"))
