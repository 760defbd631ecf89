"""Serial or parallel: an estimate of a kernel's serial time from its body, decided once per
kernel. Numba compiles the ``prange`` variant on its first call, so small kernels never do.

Measured on this project's 2-core machine (operands in cache, medians): a parallel kernel pays
about 50 us to wake the OpenMP workers (they sleep between kernels, ``OMP_WAIT_POLICY=PASSIVE``),
then two threads halve the rest. So parallel pays once the serial loop takes more than about
100 us, and that depends on the work per element, not only on the element count:

==================  ==============  =========================================================
kernel              serial ns/elem  faster variant (serial vs parallel)
==================  ==============  =========================================================
float32 ``x + 1``   0.09            serial at 1M elements (94 vs 143 us)
float32 row sum     0.05            serial at 1M (55 vs 79 us)
float32 layernorm   0.19            level at 1M (199 vs 190 us)
float32 exp         0.32            parallel from 512K (167 vs 134 us)
float32 softmax     0.52            parallel from 256K (136 vs 117 us)
float32 tanh-GELU   0.54            parallel from 256K (142 vs 125 us)
float32 ``x + 1``   0.12-0.19       parallel at 2M (243 vs 184 us), 4M (779 vs 312)
float64 ``x + 1``   0.19            level at 512K (99 vs 104 us)
float64 exp         1.25            serial at 64K (84 vs 123 us), parallel at 256K
float64 tanh        2.35            parallel from 64K (154 vs 126 us)
float32 row argmax  0.08            serial at 512K (44 vs 71 us), parallel at 2M (170 vs 124)
==================  ==============  =========================================================

The estimate adds, per element of the iteration space, the cost of each op evaluated per
element (``OP_NS``, measured serially per op) and of each full-size operand read or written.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph

PARALLEL_MIN_NS = 120_000   # estimated serial time from which the prange variant runs
# ns per element, (float32, float64): a plain arithmetic op, a full-size operand read or written.
# Two threads do not halve memory traffic as they halve arithmetic (x + 1 on 1M float32: 94 us
# serial, 143 parallel), so an operand counts as one arithmetic op.
ARITHMETIC_NS = MEMORY_NS = (0.025, 0.05)
OP_NS = {
    **dict.fromkeys(("div", "reciprocal", "mod", "floordiv"), (0.05, 0.15)),
    **dict.fromkeys(("sqrt", "rsqrt"), (0.1, 0.35)),
    **dict.fromkeys(("argmax", "argmin"), (0.06, 0.08)),   # blocks, then a scan of the best
    "exp": (0.2, 1.0), "expm1": (0.3, 1.5), "log": (0.4, 1.1), "log1p": (0.4, 1.1),
    "sigmoid": (0.3, 1.2), "tanh": (0.25, 2.1), "erf": (0.8, 3.6),
    "sin": (1.2, 1.4), "cos": (1.2, 1.4),   # vecmath below 2**26 (elementwise kernels)
    # one scalar libm call per element (on the CPU these usually run as NumPy ufuncs instead)
    **dict.fromkeys(("tan", "sinh", "cosh", "arctan", "arctan2", "log2", "log10", "pow"),
                    (10.0, 10.0)),
}


def serial_ns(plan, body: Graph) -> float:
    """Estimated serial time of one call, in ns."""
    elements = int(np.prod(plan.space_shape))
    per_element = 0.0
    for node in body.nodes:  # ops evaluated per element (a reduction accumulates per element)
        if node in plan.reduces or plan.region_of.get(node.outputs[0]) == "inner":
            per_element += _op_ns(node.op, node.inputs[0].type.dtype if node.inputs else None)
    # a row-persistent kernel's later passes read each row again, from cache: half the cost
    reads = 1 + (plan.passes - 1) / 2
    for var in (*body.inputs, *body.outputs):
        if int(np.prod(var.type.shape)) == elements:
            per_element += MEMORY_NS[wide(var.type.dtype)] * (reads if var in body.inputs else 1)
    return per_element * elements


def runs_parallel(plan, body: Graph) -> bool:
    return plan.has_parallel_loop and serial_ns(plan, body) >= PARALLEL_MIN_NS


def _op_ns(op: str, dtype) -> float:
    return OP_NS.get(op, ARITHMETIC_NS)[wide(dtype)]


def wide(dtype) -> int:
    """0 for 4-byte (or narrower) elements, 1 for 8-byte ones."""
    return int(dtype is not None and np.dtype(dtype).itemsize > 4)
