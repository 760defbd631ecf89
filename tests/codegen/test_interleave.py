"""Loops interleaved 4 ways (``codegen/interleave.py``): which kernels ask for it, that LLVM's
option is set only while their module compiles and always set back, and results against
NumPy."""
import numpy as np
import pytest
from codegen_helpers import check_kernel, fused_node

from fusejit.codegen import build_kernel, interleave, source_cache
from fusejit.codegen.numba_cpu import generate_source
from fusejit.codegen.prelude import radd

F32, F64 = np.float32, np.float64
LINE = "interleave_loops(4, globals())"


def unary(op, dtype=F32, then=None):
    """``op(x)`` (then ``then(op(x))``) over a 6x70 array."""
    def body(emit, x):
        y = emit(op, x)
        return [emit(then, y) if then else y]
    return fused_node([((6, 70), dtype)], body)


def source(node) -> str:
    return generate_source(node.attr["body"])[0]


@pytest.mark.parametrize("op, dtype", [("tanh", F32), ("sigmoid", F32), ("tanh", F64),
                                       ("exp", F64), ("log", F64), ("expm1", F64)])
def test_loops_with_tanh_sigmoid_or_float64_exp_and_log_are_interleaved(op, dtype):
    text = source(unary(op, dtype))
    assert text.rstrip().endswith(LINE)
    assert text.count(LINE) == 1


@pytest.mark.parametrize("op, dtype", [("exp", F32), ("log", F32), ("erf", F64), ("sqrt", F64)])
def test_loops_it_does_not_speed_up_are_left_to_llvm(op, dtype):
    assert LINE not in source(unary(op, dtype))


def test_erf_anywhere_in_the_body_keeps_the_cost_model():
    assert LINE not in source(unary("tanh", F32, then="erf"))


def test_a_reduction_is_never_interleaved_its_partial_sums_would_change():
    def body(emit, x):
        return [emit("sum", emit("tanh", x), axes=(1,), keepdims=False)]
    node = fused_node([((6, 70), F32)], body, kind="reduce")
    assert LINE not in source(node)


@pytest.fixture
def options(monkeypatch):
    """The LLVM options set, in order (and still set: the compilations are real)."""
    seen = []
    real = interleave.llvm.set_option

    def record(name, option):
        seen.append(option)
        real(name, option)
    monkeypatch.setattr(interleave.llvm, "set_option", record)
    return seen


def test_the_option_is_set_while_the_module_compiles_and_set_back_after(options, tmp_path,
                                                                         monkeypatch):
    # a new cache and an empty module table: the module is imported and compiled anew
    monkeypatch.setenv("FUSEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(source_cache, "_modules", {})
    node = unary("tanh", F32, then="neg")
    x = np.random.default_rng(3).standard_normal((6, 70)).astype(F32)
    kernel = check_kernel(node, x)
    # kernel_serial compiles row_loop0 inside its own compilation: one setting, one reset
    assert options == ["-force-vector-interleave=4", "-force-vector-interleave=0"]
    assert interleave._depth == 0
    assert kernel.module.kernel_serial.signatures and kernel.module.row_loop0.signatures


def test_a_failed_compilation_sets_the_option_back(options):
    # nested: only the outermost sets and resets
    with (pytest.raises(RuntimeError, match="lowering failed"), interleave.interleaved(4),
          interleave.interleaved(4)):
        raise RuntimeError("lowering failed")
    assert options == ["-force-vector-interleave=4", "-force-vector-interleave=0"]
    assert interleave._depth == 0


def test_only_the_modules_own_functions_are_wrapped():
    node = unary("tanh", F32, then="neg")
    kernel = build_kernel(node)
    own = [name for name in ("kernel_serial", "strided_serial", "short_serial", "row_loop0")
           if hasattr(kernel.module, name)]
    assert own and all(getattr(kernel.module, name)._fusejit_ways == 4 for name in own)
    assert not getattr(radd, "_fusejit_ways", 0)   # imported from the prelude: not ours


@pytest.mark.parametrize("op, dtype", [("tanh", F32), ("sigmoid", F32), ("exp", F64)])
def test_interleaved_kernels_match_numpy(op, dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((6, 70)) * 4).astype(dtype)
    x[0, :5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    check_kernel(unary(op, dtype, then="neg"), x)
