"""tanh-approximated GELU, as written in GPT-2: one elementwise chain of ~9 ops.

Kept exactly as the reference spells it. Under NumPy 2 (NEP 50) ``np.sqrt(2 / np.pi)`` is a
strong ``np.float64`` scalar, so float32 input gives a **float64** result; fusejit must (and
does, per DESIGN.md §2) reproduce that. ``gpt2_block.gelu`` is the dtype-preserving spelling.
"""
import numpy as np

SIZES = {"small": (8, 32), "quick": (1024, 1024), "bench": (4096, 1024)}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def make_inputs(dtype=np.float32, size="small", seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(SIZES[size]).astype(dtype)
    return (x,), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
