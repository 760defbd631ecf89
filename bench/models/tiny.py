"""The dispatch probe of ``bench.latency``: five kernels' worth of work on 4x4 inputs, where
the time per call is the framework's overhead, not arithmetic. Not a ``MODELS`` workload."""
import numpy as np


def five_kernels(x, y):
    a = np.tanh(x) * y + 1.0                     # elementwise, then a row-sum reduction
    b = a.sum(axis=0)
    c = np.exp(x - x.max(axis=1, keepdims=True))
    c = c / c.sum(axis=1, keepdims=True)         # one row-persistent softmax kernel
    d = np.maximum(a @ y, 0)                     # BLAS + epilogue
    e = (d * 2).argmax(axis=0)
    return b + d.min(axis=0), c, e, np.sqrt(np.abs(y)).sum()


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((4, 4)), rng.random((4, 4))
