"""``fusejit demo``: compile the bundled GPT-2 block and show what fusion did."""
from __future__ import annotations

import collections
import time

from .benchtools import time_calls


def demo(size: str = "bench", repeat: int = 20) -> None:
    import fusejit
    from bench.models import gpt2_block

    args, kwargs = gpt2_block.make_inputs(size=size)
    compiled = fusejit.compile(gpt2_block.block)
    expected = gpt2_block.block(*args, **kwargs)
    start = time.perf_counter()
    compiled(*args, **kwargs)            # traces: the body runs under NumPy and is recorded
    result = compiled(*args, **kwargs)   # the first replay generates and compiles the kernels
    compile_s = time.perf_counter() - start
    entry = compiled.entry_for(*args, **kwargs).paths[0]
    _print_summary(entry, compiled.explain(*args, **kwargs))
    error = float(abs(result - expected).max())
    eager = time_calls(gpt2_block.block, args, kwargs, repeat)["median_s"]
    fused = time_calls(compiled, args, kwargs, repeat)["median_s"]
    print(f"\ntrace + compile + first replay: {compile_s:.2f} s; max |compiled - eager| = "
          f"{error:.2e} (replayed result)")
    print(f"eager NumPy: {eager * 1e3:.2f} ms   compiled: {fused * 1e3:.2f} ms   "
          f"speedup: {eager / fused:.2f}x   (median of {repeat} calls)")


def _print_summary(entry, explanation) -> None:
    traced = entry.trace.graph
    counts = collections.Counter(node.op for node in traced.nodes)
    print(f"GPT-2 block traced: {len(traced.nodes)} ops "
          f"({', '.join(f'{op} x{n}' for op, n in counts.most_common(8))}, ...)")
    print(f"after optimization: {len(explanation.kernels)} fused kernels, "
          f"{len(explanation.blas_calls)} BLAS calls, {explanation.views} views, "
          f"{len(explanation.host_ops)} host ops")
    for kernel in explanation.kernels:
        ops = " ".join(op for op, _ in kernel.source_ops)
        print(f"  {kernel.name:<32} {kernel.kind:<11} {ops}")
