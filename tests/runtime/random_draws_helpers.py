"""A module of its own for ``test_random_draws``: a helper that draws from its own global."""
import numpy as np

RNG = np.random.default_rng(7)


def noisy(x):
    return x + RNG.standard_normal(x.shape).astype(x.dtype)
