"""Quick check of the fusion targets of issue 3: eager NumPy vs ``fusejit.compile``.

    python -m bench.fusion_check [--size bench] [--repeats 10] [--only softmax,layernorm]

For each workload (float32, ``bench/models``): compile, check the result against eager NumPy,
then time both (median of ``--repeats`` after one warm-up call each) and print the ratio next to
the issue's target and the kernel / BLAS counts. Timing only: nothing here decides pass or fail.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import fusejit
from bench.models import elementwise, gelu, layernorm, mlp
from bench.models import softmax as softmax_model

WORKLOADS = {  # name: (module, function, target ratio)
    "gelu_f32": (gelu, gelu.gelu_f32, 60.0),
    "chain8": (elementwise, elementwise.elementwise, 10.0),
    "softmax": (softmax_model, softmax_model.softmax, 5.0),
    "layernorm": (layernorm, layernorm.layer_norm, 15.0),
    "mlp": (mlp, mlp.mlp, 1.05),
}


def median_ms(call, repeats: int) -> float:
    call()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples)) * 1e3


def check(name: str, size: str, repeats: int) -> str:
    module, fn, target = WORKLOADS[name]
    args, kwargs = module.make_inputs(dtype=np.float32, size=size)
    compiled = fusejit.compile(fn)
    compiled(*args, **kwargs)   # the trace, whose result NumPy computes: check a replay
    got, want = compiled(*args, **kwargs), fn(*args, **kwargs)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)
    info = compiled.explain(*args, **kwargs)
    eager = median_ms(lambda: fn(*args, **kwargs), repeats)
    fused = median_ms(lambda: compiled(*args, **kwargs), repeats)
    ratio = eager / fused
    mark = "ok" if ratio >= target else "below target"
    return (f"{name:<10} eager {eager:9.3f} ms  compiled {fused:9.3f} ms  {ratio:7.2f}x "
            f"(target {target}x: {mark})  kernels={len(info.kernels)} "
            f"blas={len(info.blas_calls)}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="bench", choices=("small", "quick", "bench"))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    options = parser.parse_args(argv)
    import numba
    print(f"numba threads={numba.get_num_threads()} size={options.size}")
    for name in options.only.split(","):
        print(check(name, options.size, options.repeats), flush=True)
    print(f"threading layer: {numba.threading_layer()}")


if __name__ == "__main__":
    main()
