"""Two-layer perceptron: ``relu(x @ w1 + b1) @ w2 + b2``.

Bench size follows the issue: x (256, 1024), w1 (1024, 4096), w2 (4096, 1024). Two BLAS calls,
each followed by an elementwise epilogue (bias + relu, bias) that fusejit fuses onto the matmul.
"""
import numpy as np

SIZES = {"small": (8, 16, 32), "quick": (64, 256, 1024), "bench": (256, 1024, 4096)}


def relu(x):
    return np.maximum(x, 0)


def mlp(x, w1, b1, w2, b2):
    h = relu(x @ w1 + b1)
    return h @ w2 + b2


def make_inputs(dtype=np.float32, size="small", seed=0):
    batch, d_in, d_hidden = SIZES[size]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, d_in)).astype(dtype)
    w1 = (rng.standard_normal((d_in, d_hidden)) / np.sqrt(d_in)).astype(dtype)
    b1 = (0.1 * rng.standard_normal(d_hidden)).astype(dtype)
    w2 = (rng.standard_normal((d_hidden, d_in)) / np.sqrt(d_hidden)).astype(dtype)
    b2 = (0.1 * rng.standard_normal(d_in)).astype(dtype)
    return (x, w1, b1, w2, b2), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
