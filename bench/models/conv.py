"""2-D convolution via im2col: NCHW input, OIHW weights, stride 1, zero padding, bias, relu.

im2col is built by slicing the padded input in Python loops over the kernel window and stacking
the slices; the product is one batched matmul.
"""
import numpy as np

SIZES = {  # batch, c_in, height/width, c_out, kernel
    "small": (2, 3, 8, 4, 3),
    "quick": (4, 32, 16, 32, 3),
    "bench": (8, 64, 32, 64, 3),
}


def conv2d_relu(x, w, b, padding=1):
    n, c_in, height, width = x.shape
    c_out, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out_h = height + 2 * padding - kh + 1
    out_w = width + 2 * padding - kw + 1
    patches = []
    for i in range(kh):
        for j in range(kw):
            patches.append(xp[:, :, i:i + out_h, j:j + out_w])
    cols = np.stack(patches, axis=2)                       # (n, c_in, kh*kw, out_h, out_w)
    cols = cols.reshape(n, c_in * kh * kw, out_h * out_w)
    out = w.reshape(c_out, -1) @ cols                      # (n, c_out, out_h*out_w)
    out = out.reshape(n, c_out, out_h, out_w) + b[None, :, None, None]
    return np.maximum(out, 0)


def make_inputs(dtype=np.float32, size="small", seed=0):
    n, c_in, hw, c_out, k = SIZES[size]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c_in, hw, hw)).astype(dtype)
    w = (rng.standard_normal((c_out, c_in, k, k)) / np.sqrt(c_in * k * k)).astype(dtype)
    b = (0.1 * rng.standard_normal(c_out)).astype(dtype)
    return (x, w, b), {}


def example_args():
    """Small inputs for ``fusejit dump bench/models/<this file>.py:FUNC`` without ``--arg``."""
    return make_inputs(size="small")
