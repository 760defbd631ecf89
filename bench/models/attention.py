"""Causal multi-head self-attention in the GPT-2 style (after picoGPT).

``x`` is (seq, n_embd); ``p = {"c_attn": {"w", "b"}, "c_proj": {"w", "b"}}``; ``n_head`` is a
Python int, so it is static for fusejit. The scale uses ``math.sqrt``: ``np.sqrt(d)`` would be a
strong ``np.float64`` and promote float32 scores to float64 under NumPy 2 (NEP 50).
"""
import math

import numpy as np

SIZES = {"small": (8, 32, 4), "quick": (64, 256, 4), "bench": (128, 768, 12)}


def linear(x, w, b):
    return x @ w + b


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def split_heads(x, n_head):
    seq, n_embd = x.shape
    return x.reshape(seq, n_head, n_embd // n_head).transpose(1, 0, 2)


def attention(x, p, n_head):
    seq, n_embd = x.shape
    qkv = linear(x, **p["c_attn"])                         # (seq, 3 * n_embd)
    q, k, v = np.split(qkv, 3, axis=-1)
    q, k, v = (split_heads(t, n_head) for t in (q, k, v))  # (n_head, seq, head_dim)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(n_embd // n_head)
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    scores = np.where(causal, scores, -1e10)
    y = softmax(scores) @ v                                # (n_head, seq, head_dim)
    y = y.transpose(1, 0, 2).reshape(seq, n_embd)          # merge heads
    return linear(y, **p["c_proj"])


def make_params(rng, n_embd, dtype):
    def dense(n_in, n_out):
        w = 0.02 * rng.standard_normal((n_in, n_out))
        b = 0.01 * rng.standard_normal(n_out)
        return {"w": w.astype(dtype), "b": b.astype(dtype)}

    return {"c_attn": dense(n_embd, 3 * n_embd), "c_proj": dense(n_embd, n_embd)}


def make_inputs(dtype=np.float32, size="small", seed=0):
    seq, n_embd, n_head = SIZES[size]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq, n_embd)).astype(dtype)
    return (x, make_params(rng, n_embd, dtype), n_head), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
