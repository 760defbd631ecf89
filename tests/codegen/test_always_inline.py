"""``always_inline``: vector math is compiled once per signature, and LLVM inlines it into
every loop that calls it, whatever its size, so the loop has no call left and vectorizes."""
import re

import numba
import numpy as np
import scipy.special

from fusejit.codegen import vecmath
from fusejit.codegen.always_inline import always_inline


@numba.njit(error_model="numpy")
def _erf_and_cos(x, out):
    for i in range(x.size):
        out[i] = vecmath.erf_f64(x[i]) + vecmath.cos_f64(x[i])


def _calls(asm: str) -> list[str]:
    # a direct call, or one through a register loaded with the callee's address
    lines = asm.splitlines()
    return [" ".join(lines[max(0, i - 3):i + 1]) for i, line in enumerate(lines)
            if re.search(r"\bcall", line)]


def test_the_largest_core_leaves_no_call_in_the_loop():
    # LLVM's size threshold alone left float64 erf's core as a call beside cos
    x = np.linspace(-6, 6, 1001)
    out = np.empty_like(x)
    _erf_and_cos(x, out)
    np.testing.assert_allclose(out, scipy.special.erf(x) + np.cos(x), rtol=1e-15, atol=1e-15)
    asm = next(iter(_erf_and_cos.inspect_asm().values()))
    assert not [call for call in _calls(asm) if "vecmath" in call]


def test_the_callee_is_compiled_once_and_stays_callable():
    @always_inline
    def twice(v):
        return v + v

    @numba.njit
    def first(v):
        return twice(v) * 3

    @numba.njit
    def second(v):
        return twice(v) - 1

    assert (first(2.0), second(2.0), twice(2.5)) == (12.0, 3.0, 5.0)
    assert len(twice.overloads) == 1
    for caller in (first, second):
        assert not [call for call in _calls(next(iter(caller.inspect_asm().values())))
                    if "twice" in call]
