"""Numerically stable softmax over the last axis: max, subtract, exp, sum, divide.

fusejit turns this into one row-persistent kernel (DESIGN.md §5).
"""
import numpy as np

SIZES = {"small": (8, 32), "quick": (1024, 1024), "bench": (4096, 1024)}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def make_inputs(dtype=np.float32, size="small", seed=0):
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal(SIZES[size])).astype(dtype)
    return (x,), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
