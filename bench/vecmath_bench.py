"""Speed of fusejit.codegen.vecmath in prange loops vs libm calls in the same loop vs NumPy.

    python -m bench.vecmath_bench [--n 4000000] [--repeats 7] [--fit]

Prints medians (ms) for 4M float32 and float64 elements: the vecmath prange loop with all
threads and with one (NumPy's ufuncs are single-threaded), the same loop calling libm, NumPy,
and the ratios libm/vecmath (threads alike) and numpy/vecmath-1-thread; then confirms from the
assembly of one loop that it was vectorized (zmm/ymm packed instructions, no libm call).
``--fit`` instead reprints the erfcx polynomial coefficients used by vecmath's erf.
"""
from __future__ import annotations

import argparse
import math
import re
import time

import numba
import numpy as np
import scipy.special
from numba import prange

from fusejit.codegen import vecmath

NAMES = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "sin", "cos")


@numba.njit(inline="always", error_model="numpy")
def _libm_sigmoid(x):
    return 1 / (1 + np.exp(-x))


@numba.njit(inline="always", error_model="numpy")
def _libm_erf(x):
    return math.erf(x)


_LIBM = {"sigmoid": _libm_sigmoid, "erf": _libm_erf}
_NUMPY = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": scipy.special.erf}


def _libm_scalar(name):
    if name in _LIBM:
        return _LIBM[name]
    ufunc = getattr(np, name)
    return numba.njit(inline="always", error_model="numpy")(lambda x: ufunc(x))


def _prange_loop(fn):
    @numba.njit(parallel=True, error_model="numpy")
    def loop(x, out):
        for i in prange(x.size):
            out[i] = fn(x[i])
    return loop


def _inputs(name, n, dtype):
    rng = np.random.default_rng(0)
    lo, hi = {"log": (0.01, 100.0), "log1p": (-0.9, 100.0), "sin": (-100.0, 100.0),
              "cos": (-100.0, 100.0)}.get(name, (-10.0, 10.0))
    return rng.uniform(lo, hi, n).astype(dtype)


def _median_ms(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def bench_one(name, dtype, n, repeats):
    x = _inputs(name, n, dtype)
    out = np.empty_like(x)
    fast = _prange_loop(vecmath.VECMATH[(name, np.dtype(dtype).name)])
    slow = _prange_loop(_libm_scalar(name))
    numpy_fn = _NUMPY[name] if name in _NUMPY else getattr(np, name)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)      # the single-thread vecmath time compares with NumPy directly
    single = _median_ms(lambda: fast(x, out), repeats)
    numba.set_num_threads(threads)
    times = (_median_ms(lambda: fast(x, out), repeats), single,
             _median_ms(lambda: slow(x, out), repeats), _median_ms(lambda: numpy_fn(x), repeats))
    return times, fast


def vectorization_line(loop):
    asm = loop.inspect_asm(loop.signatures[0])
    packed = len(re.findall(r"\tv\w+p[sd]\t.*%zmm", asm))
    packed_ymm = len(re.findall(r"\tv\w+p[sd]\t.*%ymm", asm))
    libm = sorted(set(re.findall(r"call\w*\s+\*?\w*(tanh|exp|log|sin|cos|erf)\w*", asm)))
    return (f"vectorization check (tanh_f32 loop asm): {packed} packed zmm ops, "
            f"{packed_ymm} packed ymm ops, libm calls: {libm or 'none'}")


def print_fit():
    from numpy.polynomial import chebyshev
    for (a, b), degree in (((1.0, 2.5), 22), ((2.5, 6.0), 18)):
        x = np.cos(np.linspace(0, np.pi, 4000)) * (b - a) / 2 + (a + b) / 2
        t = (2 * x - (a + b)) / (b - a)
        coeffs = chebyshev.cheb2poly(chebyshev.chebfit(t, scipy.special.erfcx(x), degree))
        print(f"erfcx on [{a}, {b}], low order first:", [float(c) for c in coeffs])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--fit", action="store_true")
    args = parser.parse_args(argv)
    if args.fit:
        return print_fit()
    print(f"n={args.n}, threads={numba.get_num_threads()}, medians in ms")
    print(f"{'function':9s} {'dtype':8s} {'vecmath':>8s} {'vec 1thr':>8s} {'libm':>8s} "
          f"{'numpy':>8s} {'libm/vec':>9s} {'numpy/vec1':>10s}")
    tanh_loop = None
    for dtype in (np.float32, np.float64):
        for name in NAMES:
            (vec, vec1, libm, ref), loop = bench_one(name, dtype, args.n, args.repeats)
            tanh_loop = loop if (name, dtype) == ("tanh", np.float32) else tanh_loop
            print(f"{name:9s} {np.dtype(dtype).name:8s} {vec:8.2f} {vec1:8.2f} {libm:8.2f} "
                  f"{ref:8.2f} {libm / vec:9.2f} {ref / vec1:10.2f}")
    print(vectorization_line(tanh_loop))


if __name__ == "__main__":
    main()
