"""Large kernel outputs are placed apart from the kernel's inputs modulo 4 KiB (store streams a
little ahead of a load stream there make every load wait: ``fusejit.codegen.placement``)."""
import numpy as np
import pytest
from codegen_helpers import fused_node

from fusejit.codegen import build_kernel
from fusejit.codegen.placement import BAND, MIN_BYTES, SPAN, STEP, apart_offset, empty_apart


def placed_apart(out: np.ndarray, array: np.ndarray) -> bool:
    distance = (out.ctypes.data - array.ctypes.data) % SPAN
    return distance == 0 or distance >= BAND


def test_offset_skips_the_band_just_after_each_input():
    start = 1 << 30                                   # 4 KiB aligned
    assert apart_offset(start, []) == 0
    # out would start 16 bytes after the input modulo SPAN (glibc's neighbouring blocks):
    # distance = offset + 16 must reach BAND = 512, the first multiple of 64 that does is 512
    assert apart_offset(start, [start - 16]) == 512
    assert apart_offset(start, [start - 16 + 7 * SPAN]) == 512  # only the address mod SPAN counts
    assert apart_offset(start, [start - 600]) == 0                # already 600 bytes apart
    assert apart_offset(start + 8, [start - 600]) == 56           # aligned: 8 + 56 = 64
    assert apart_offset(start, [start + 100]) == 0                # the input is after: no stall
    # an input at the same address modulo SPAN is not in the way (equal offsets do not stall)
    assert apart_offset(start, [start - 3 * SPAN]) == 0


def test_offset_is_cache_line_aligned_and_apart_from_several_inputs():
    start = (1 << 30) + 16
    inputs = [start - 16 + k * 1000 for k in range(5)]
    offset = apart_offset(start, inputs)
    assert (start + offset) % STEP == 0
    assert all((start + offset - a) % SPAN in range(BAND, SPAN) or (start + offset - a) % SPAN == 0
               for a in inputs)


def test_offset_falls_back_to_the_first_aligned_one_when_nothing_is_apart():
    start = 1 << 30
    crowd = [start + k * STEP - 8 for k in range(SPAN // STEP)]   # one band per candidate
    assert apart_offset(start, crowd) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.bool_, np.int16])
def test_large_outputs_are_contiguous_views_placed_apart(dtype):
    x = np.ones(MIN_BYTES // 4, np.float32)
    shape = (MIN_BYTES // 512, 512)
    out = empty_apart(shape, dtype, [x, 2.5, None])   # non-arrays are ignored
    assert out.shape == shape and out.dtype == dtype and out.flags.c_contiguous
    assert out.flags.writeable and out.ctypes.data % STEP == 0
    assert placed_apart(out, x)
    out[...] = 1
    assert out.base._raw.nbytes == out.nbytes + SPAN and not np.shares_memory(out, x)


def test_small_outputs_are_plain_arrays():
    out = empty_apart((4, 5), np.float32, [np.ones((4, 5), np.float32)])
    assert out.shape == (4, 5) and out.dtype == np.float32 and out.flags.owndata


def test_kernel_outputs_are_placed_apart_from_every_input():
    rows, cols = MIN_BYTES // 4 // 256, 256
    node = fused_node([((rows, cols), np.float32)] * 3,
                      lambda emit, a, b, c: [emit("add", emit("mul", a, b), c),
                                             emit("sub", a, c)], name="k0_apart_test")
    kernel = build_kernel(node)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(3))
    for call in (kernel.fast_call, kernel):
        first, second = call(a, b, c)
        np.testing.assert_array_equal(first, a * b + c)
        np.testing.assert_array_equal(second, a - c)
        for out in (first, second):
            assert all(placed_apart(out, x) for x in (a, b, c))
    (allocated, held) = kernel(a, b, c, out=[None, np.empty((rows, cols), np.float32)])
    assert all(placed_apart(allocated, x) for x in (a, b, c))
    np.testing.assert_array_equal(held, a - c)
