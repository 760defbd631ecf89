"""One Adam step over a model's parameters, every array updated in place, as NumPy training
loops write it.

``adam_step(params, grads, m, v, t, lr)``: dicts of arrays with the same keys (the first and
second moments ``m`` and ``v``); ``t`` is the step number counted from 1, a Python float (an
int would be static: each new step would trace again), ``lr`` a Python float. Returns nothing.
"""
import numpy as np

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8

# (d_in, d_hidden, d_out): the parameters of a two-layer MLP
SIZES = {"small": (8, 16, 4), "quick": (256, 512, 256), "bench": (1024, 2048, 1024)}


def adam_step(params, grads, m, v, t, lr):
    correction1 = 1 - BETA1**t
    correction2 = 1 - BETA2**t
    for name, w in params.items():
        g = grads[name]
        m[name] *= BETA1
        m[name] += (1 - BETA1) * g
        v[name] *= BETA2
        v[name] += (1 - BETA2) * g * g
        w -= lr * (m[name] / correction1) / (np.sqrt(v[name] / correction2) + EPS)


def make_inputs(dtype=np.float32, size="small", seed=0):
    d_in, d_hidden, d_out = SIZES[size]
    shapes = {"w1": (d_in, d_hidden), "b1": (d_hidden,), "w2": (d_hidden, d_out),
              "b2": (d_out,)}
    rng = np.random.default_rng(seed)
    draw = lambda scale: {k: (scale * rng.standard_normal(s)).astype(dtype)
                          for k, s in shapes.items()}
    params, grads, m = draw(0.1), draw(1.0), draw(0.1)
    v = {k: np.abs(a) for k, a in draw(0.1).items()}
    return (params, grads, m, v, 3.0, 1e-3), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
