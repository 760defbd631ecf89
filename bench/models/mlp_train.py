"""One SGD step of a tanh MLP with a hand-written backward pass and in-place parameter updates.

``train_step(x, y, params, lr)`` returns the MSE loss of the forward pass (a NumPy scalar, e.g.
``np.float32``) and updates ``params``' arrays in place (``params["w1"] -= lr * dw1``). ``lr`` is
a Python float: fusejit traces it as a weak scalar, so changing it does not retrace.
"""
import numpy as np

SIZES = {"small": (16, 8, 32, 4), "quick": (256, 128, 512, 32), "bench": (1024, 256, 1024, 64)}


def train_step(x, y, params, lr):
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    # forward
    h = np.tanh(x @ w1 + b1)
    pred = h @ w2 + b2
    diff = pred - y
    loss = (diff**2).mean()
    # backward (d loss / d pred = 2 * diff / n)
    dpred = 2 * diff / diff.size
    dw2 = h.T @ dpred
    db2 = dpred.sum(axis=0)
    dh = dpred @ w2.T
    dz = dh * (1 - h * h)
    dw1 = x.T @ dz
    db1 = dz.sum(axis=0)
    # SGD, in place on the caller's arrays
    params["w1"] -= lr * dw1
    params["b1"] -= lr * db1
    params["w2"] -= lr * dw2
    params["b2"] -= lr * db2
    return loss


def make_inputs(dtype=np.float32, size="small", seed=0):
    batch, d_in, d_hidden, d_out = SIZES[size]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, d_in)).astype(dtype)
    y = np.sin(x[:, :d_out] * 1.5).astype(dtype)           # a learnable target
    params = {
        "w1": (rng.standard_normal((d_in, d_hidden)) / np.sqrt(d_in)).astype(dtype),
        "b1": np.zeros(d_hidden, dtype=dtype),
        "w2": (rng.standard_normal((d_hidden, d_out)) / np.sqrt(d_hidden)).astype(dtype),
        "b2": np.zeros(d_out, dtype=dtype),
    }
    return (x, y, params, 0.05), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
