"""Module state that ``test_capture_routes`` reads as ``capture_state.W`` (another module)."""
import numpy as np

W = np.zeros(2)

TABLE = {"v": np.zeros(2)}


def doubled():
    """NumPy code on this module's array alone: no traced value in it."""
    return W * 2.0


def table_plus(offset):
    return TABLE["v"] + offset
