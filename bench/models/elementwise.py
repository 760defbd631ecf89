"""An 8-op elementwise chain over three inputs: memory-bound, one fused kernel in fusejit.

Eager NumPy makes a temporary per op (7 of them); the fused kernel reads a, b, c once and writes
the result once.
"""
import numpy as np

SIZES = {"small": (8, 32), "quick": (1024, 1024), "bench": (4096, 1024)}


def elementwise(a, b, c):
    t = a * b + c                      # mul, add
    t = t - 0.5 * a                    # mul, sub
    t = np.maximum(t, c)               # maximum
    t = np.exp(-np.abs(t))             # abs, neg, exp
    return t


def make_inputs(dtype=np.float32, size="small", seed=0):
    rng = np.random.default_rng(seed)
    shape = SIZES[size]
    a, b, c = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    return (a, b, c), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
