"""An LSTM cell and a 16-step unrolled LSTM over a sequence (Python ``for`` loop).

Gate order i, f, g, o; ``w_ih`` (n_in, 4h), ``w_hh`` (h, 4h), ``b`` (4h,). Tracing unrolls the
loop: the compiled program has 16 copies of the cell, whose kernels share structure and so
compile once.
"""
import numpy as np

SIZES = {"small": (4, 8, 16), "quick": (32, 128, 128), "bench": (64, 256, 512)}  # batch, in, h
STEPS = 16


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_cell(x, h, c, w_ih, w_hh, b):
    z = x @ w_ih + h @ w_hh + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, c


def lstm(xs, h, c, params):
    hs = []
    for t in range(STEPS):
        h, c = lstm_cell(xs[t], h, c, params["w_ih"], params["w_hh"], params["b"])
        hs.append(h)
    return np.stack(hs), c


def make_inputs(dtype=np.float32, size="small", seed=0):
    batch, n_in, n_hidden = SIZES[size]
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((STEPS, batch, n_in)).astype(dtype)
    h = np.zeros((batch, n_hidden), dtype=dtype)
    c = np.zeros((batch, n_hidden), dtype=dtype)
    params = {
        "w_ih": (rng.standard_normal((n_in, 4 * n_hidden)) / np.sqrt(n_in)).astype(dtype),
        "w_hh": (rng.standard_normal((n_hidden, 4 * n_hidden)) / np.sqrt(n_hidden)).astype(dtype),
        "b": (0.1 * rng.standard_normal(4 * n_hidden)).astype(dtype),
    }
    return (xs, h, c, params), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
