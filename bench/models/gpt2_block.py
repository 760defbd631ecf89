"""GPT-2 after picoGPT: a transformer block, a multi-layer forward pass, a cached decode step.

``block(x, p, n_head) = x + attn(ln_1(x)); x + mlp(ln_2(x))`` with the tanh GELU. Parameters
are nested dicts of arrays; ``n_head`` is a Python int (static). The GELU here spells its
constant with ``math`` so that float32 stays float32 (see ``gelu.py`` for the promoting form).

Self-contained (one file, like picoGPT) so that ``fusejit dump bench/models/gpt2_block.py:block``
can load it as a plain file; the attention and layer norm match ``attention.py`` and
``layernorm.py``.
"""
import math

import numpy as np

SIZES = {  # seq, n_embd, n_head, n_vocab, n_layer
    "small": (8, 32, 4, 64, 2),
    "quick": (64, 256, 4, 512, 2),
    "bench": (128, 768, 12, 1024, 2),
}


def layer_norm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(variance + eps) + b


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def linear(x, w, b):
    return x @ w + b


def split_heads(x, n_head):
    seq, n_embd = x.shape
    return x.reshape(seq, n_head, n_embd // n_head).transpose(1, 0, 2)


def attention(x, p, n_head):
    seq, n_embd = x.shape
    q, k, v = np.split(linear(x, **p["c_attn"]), 3, axis=-1)
    q, k, v = (split_heads(t, n_head) for t in (q, k, v))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(n_embd // n_head)
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    y = softmax(np.where(causal, scores, -1e10)) @ v
    return linear(y.transpose(1, 0, 2).reshape(seq, n_embd), **p["c_proj"])


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def ffn(x, c_fc, c_proj):
    return gelu(x @ c_fc["w"] + c_fc["b"]) @ c_proj["w"] + c_proj["b"]


def block(x, p, n_head):
    x = x + attention(layer_norm(x, **p["ln_1"]), p["attn"], n_head)
    x = x + ffn(layer_norm(x, **p["ln_2"]), **p["mlp"])
    return x


def gpt2(ids, params, n_head):
    x = params["wte"][ids] + params["wpe"][np.arange(len(ids))]
    for p in params["blocks"]:
        x = block(x, p, n_head)
    x = layer_norm(x, **params["ln_f"])
    return x @ params["wte"].T                              # logits (seq, n_vocab)


def decode_step(x, k_cache, v_cache, t, p, n_head):
    """One generated token through a block, with a key/value cache: ``x`` (1, n_embd) is the
    token at position ``t`` (a 0-d integer array); its key and value are written into the
    caches (n_head, max_seq, head_dim) in place, and it attends to every cached position up to
    ``t``. The whole cache is scored and later positions masked, so the shapes are the same at
    every ``t`` (as with ``jax.jit``)."""
    n_embd = x.shape[-1]
    head_dim = n_embd // n_head
    q, k, v = np.split(linear(layer_norm(x, **p["ln_1"]), **p["attn"]["c_attn"]), 3, axis=-1)
    k_cache[:, t] = k.reshape(n_head, head_dim)
    v_cache[:, t] = v.reshape(n_head, head_dim)
    scores = q.reshape(n_head, 1, head_dim) @ k_cache.transpose(0, 2, 1) / math.sqrt(head_dim)
    visible = np.arange(k_cache.shape[1]) <= t
    y = softmax(np.where(visible, scores, -1e10)) @ v_cache          # (n_head, 1, head_dim)
    x = x + linear(y.reshape(1, n_embd), **p["attn"]["c_proj"])
    return x + ffn(layer_norm(x, **p["ln_2"]), **p["mlp"])


def _norm(rng, n_embd, dtype):
    g = 1 + 0.1 * rng.standard_normal(n_embd)
    return {"g": g.astype(dtype), "b": (0.1 * rng.standard_normal(n_embd)).astype(dtype)}


def _dense(rng, n_in, n_out, dtype):
    w = 0.02 * rng.standard_normal((n_in, n_out))
    return {"w": w.astype(dtype), "b": (0.01 * rng.standard_normal(n_out)).astype(dtype)}


def make_block_params(rng, n_embd, dtype):
    return {
        "ln_1": _norm(rng, n_embd, dtype),
        "attn": {"c_attn": _dense(rng, n_embd, 3 * n_embd, dtype),
                 "c_proj": _dense(rng, n_embd, n_embd, dtype)},
        "ln_2": _norm(rng, n_embd, dtype),
        "mlp": {"c_fc": _dense(rng, n_embd, 4 * n_embd, dtype),
                "c_proj": _dense(rng, 4 * n_embd, n_embd, dtype)},
    }


def make_inputs(dtype=np.float32, size="small", seed=0):
    """Inputs for ``block``."""
    seq, n_embd, n_head, _, _ = SIZES[size]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq, n_embd)).astype(dtype)
    return (x, make_block_params(rng, n_embd, dtype), n_head), {}


def make_gpt2_inputs(dtype=np.float32, size="small", seed=0):
    """Inputs for ``gpt2``: token ids (int64) and a parameter tree of ``n_layer`` blocks."""
    seq, n_embd, n_head, n_vocab, n_layer = SIZES[size]
    rng = np.random.default_rng(seed)
    params = {
        "wte": (0.02 * rng.standard_normal((n_vocab, n_embd))).astype(dtype),
        "wpe": (0.01 * rng.standard_normal((seq, n_embd))).astype(dtype),
        "blocks": [make_block_params(rng, n_embd, dtype) for _ in range(n_layer)],
        "ln_f": _norm(rng, n_embd, dtype),
    }
    ids = rng.integers(0, n_vocab, size=seq)
    return (ids, params, n_head), {}


def make_decode_inputs(dtype=np.float32, size="small", seed=0):
    """Inputs for ``decode_step``: caches of ``n_vocab`` positions, the first half filled."""
    _, n_embd, n_head, max_seq, _ = SIZES[size]
    rng = np.random.default_rng(seed)
    t = max_seq // 2
    caches = [np.zeros((n_head, max_seq, n_embd // n_head), dtype) for _ in range(2)]
    for cache in caches:
        cache[:, :t] = rng.standard_normal((n_head, t, n_embd // n_head))
    x = rng.standard_normal((1, n_embd)).astype(dtype)
    return (x, *caches, np.array(t), make_block_params(rng, n_embd, dtype), n_head), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
