"""Where a CUDA program's call goes: each step timed alone (the stream synchronized before and
after it), against the whole call, on device-resident inputs.

    python -m bench.gpu_profile [--models gpt2_decode,lstm] [--size bench] [--calls 20]

Prints, per workload, the steps by time (kind, name, launch configuration, output shape) and
the sum of the steps against one ``CudaProgram.run`` (what is left is the runtime's own
Python: environment, views, allocation, the final synchronize).
"""
from __future__ import annotations

import argparse
import copy
import sys
import time

import numpy as np


def profile(name: str, size: str, calls: int) -> str:
    from numba import cuda

    import fusejit
    from bench.gpu import device_program, model, timed
    fn, args, kwargs = model(name, size)
    compiled = fusejit.compile(fn, target="cuda")
    compiled(*copy.deepcopy(args), **kwargs)
    compiled(*copy.deepcopy(args), **kwargs)
    program, _, device = device_program(compiled, args, kwargs)
    whole = timed(lambda: program.run(device), 0.5, cuda.synchronize)
    spent: dict[int, list[float]] = {}
    original = program._run_step

    def step_timed(step, env, stream):
        stream.synchronize()
        start = time.perf_counter()
        original(step, env, stream)
        stream.synchronize()
        spent.setdefault(id(step), []).append(time.perf_counter() - start)

    program._run_step = step_timed
    try:
        for _ in range(calls):
            program.run(device)
    finally:
        del program._run_step
    rows = []
    for index, step in enumerate(program.steps):
        median = float(np.median(spent.get(id(step), [0.0])))
        kernel = step.kernel
        config = kernel.config_rule() if hasattr(kernel, "config_rule") else ""
        shapes = [list(v.type.shape) for v in step.writes]
        label = getattr(kernel, "name", step.node.op)
        rows.append((median, index, step.kind, label, config, shapes))
    total = sum(r[0] for r in rows)
    lines = [f"== {name} ({size}): one call {whole * 1e3:.3f} ms; steps alone {total * 1e3:.3f} "
             f"ms over {len(rows)} steps ({sum(r[2] == 'kernel' for r in rows)} launches)"]
    for median, index, kind, label, config, shapes in sorted(rows, reverse=True)[:15]:
        lines.append(f"  {median * 1e3:8.3f} ms  #{index:<3} {kind:<6} {label:<24} "
                     f"{str(config):<16} {shapes}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2_decode,lstm")
    parser.add_argument("--size", default="bench", choices=("small", "quick", "bench"))
    parser.add_argument("--calls", type=int, default=20)
    options = parser.parse_args(argv)
    from fusejit.runtime.cuda import cuda_usable
    if not cuda_usable():
        print("bench/gpu_profile.py needs a usable CUDA GPU (not the simulator)")
        return 2
    for name in options.models.split(","):
        print(profile(name, options.size, options.calls), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
