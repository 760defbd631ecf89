"""``always_inline``: an ``@njit`` function that LLVM, not Numba, inlines into every caller.

Numba's own ``inline="always"`` splices the callee's Python IR into each caller and types it
there again: every kernel variant (row, short, strided, serial and parallel) paid for the
vector math it calls, about a third of a cold compile (the 16-step LSTM 6.5 s, the GPT-2 block
7.4). A function decorated here is typed and compiled once per signature; its LLVM function
carries ``alwaysinline``, so each caller that links it inlines it whatever its size (LLVM's
size threshold alone left float64 erf's core as a call in a parallel loop, which then does
not vectorize). The machine code of the caller is the same: the callee has the caller's
flags (``fastmath=False``, NumPy's error model) and raises nothing.
"""
from __future__ import annotations

from numba.core.registry import CPUDispatcher


class _AlwaysInlined(CPUDispatcher):
    def add_overload(self, cres):
        # Before any caller links the library (Numba clones it then, once per library).
        cres.library._final_module.get_function(
            cres.fndesc.llvm_func_name).add_function_attribute("alwaysinline")
        super().add_overload(cres)


def always_inline(fn):
    return _AlwaysInlined(fn, targetoptions={"nopython": True, "fastmath": False,
                                             "error_model": "numpy"})
