"""Module state that ``test_capture_routes`` reads as ``capture_state.W`` (another module)."""
import numpy as np

W = np.zeros(2)
