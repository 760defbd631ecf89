"""tanh-approximated GELU: one elementwise chain of ~9 ops, in two spellings.

``gelu`` is kept exactly as the GPT-2 reference spells it. Under NumPy 2 (NEP 50)
``np.sqrt(2 / np.pi)`` is a strong ``np.float64`` scalar, so float32 input gives a **float64**
result (twice the bytes written, float64 math); fusejit must (and does, per DESIGN.md §2)
reproduce that. ``gelu_f32`` writes the constant as a Python float, which stays weak: the whole
computation is float32, as in ``gpt2_block.gelu`` and in the jax/torch peers. Issue 3's
"tanh-GELU (float32)" row is ``gelu_f32``; the bench reports both.
"""
import math

import numpy as np

SIZES = {"small": (8, 32), "quick": (1024, 1024), "bench": (4096, 1024)}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def gelu_f32(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def make_inputs(dtype=np.float32, size="small", seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(SIZES[size]).astype(dtype)
    return (x,), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
