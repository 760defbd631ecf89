"""Layer normalization over the last axis with mean and variance, GPT-2 style."""
import numpy as np

SIZES = {"small": (8, 32), "quick": (1024, 1024), "bench": (4096, 1024)}


def layer_norm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b


def make_inputs(dtype=np.float32, size="small", seed=0):
    rows, cols = SIZES[size]
    rng = np.random.default_rng(seed)
    x = (2 * rng.standard_normal((rows, cols)) + 1).astype(dtype)
    g = (1 + 0.1 * rng.standard_normal(cols)).astype(dtype)
    b = (0.1 * rng.standard_normal(cols)).astype(dtype)
    return (x, g, b), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
