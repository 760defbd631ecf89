"""Module state that ``test_capture_routes`` reads as ``capture_state.W`` (another module)."""
import numba
import numpy as np

W = np.zeros(2)

TABLE = {"v": np.zeros(2)}


def doubled():
    """NumPy code on this module's array alone: no traced value in it."""
    return W * 2.0


def table_plus(offset):
    return TABLE["v"] + offset


@numba.njit(cache=False)
def _total(a):
    return a.sum()


def total_of_w():
    """Hands this module's array to a Numba-compiled function, which needs a real ndarray."""
    return _total(W)
