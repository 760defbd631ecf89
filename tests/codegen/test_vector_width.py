"""CPU kernels ask LLVM for 512-bit vectors where the CPU has AVX-512 (``FUSEJIT_VECTOR_BITS``
overrides): LLVM's own tuning prefers 256 bits on every AVX-512 CPU."""
import numba
import numpy as np
import pytest
from codegen_helpers import fused_node

from fusejit import config
from fusejit.codegen import build_kernel, kernel_source
from fusejit.codegen.prelude import vector_width


@pytest.mark.parametrize("bits", ["256", "512"])
def test_the_environment_sets_the_width(monkeypatch, bits):
    monkeypatch.setenv("FUSEJIT_VECTOR_BITS", bits)
    assert config.vector_bits() == int(bits)


def test_without_the_environment_the_cpu_decides(monkeypatch):
    monkeypatch.delenv("FUSEJIT_VECTOR_BITS", raising=False)
    has_avx512 = "+avx512f" in config._cpu_features().split(",")
    assert config.vector_bits() == (512 if has_avx512 else None)


def test_a_bad_width_is_ignored_with_a_warning_naming_the_variable(monkeypatch, caplog):
    # A bad setting raised here, and every signature then ran eagerly.
    monkeypatch.setenv("FUSEJIT_VECTOR_BITS", "1024")
    config._ignored.cache_clear()
    assert config.vector_bits() == (512 if config.cpu_has("avx512f") else None)
    assert "FUSEJIT_VECTOR_BITS='1024' is not 256 or 512: ignored" in caplog.text


def softmax_node():
    def body(emit, x):
        shifted = emit("sub", x, emit("reduce_max", x, axes=(1,), keepdims=True))
        e = emit("exp", shifted)
        return [emit("div", e, emit("sum", e, axes=(1,), keepdims=True))]
    return fused_node([((64, 300), np.float32)], body, name="k0_softmax_test", kind="reduce")


def test_every_function_and_prange_body_asks_for_the_width(monkeypatch):
    monkeypatch.setenv("FUSEJIT_VECTOR_BITS", "512")
    source, _ = kernel_source(softmax_node())
    lines = source.splitlines()
    defs = [k for k, line in enumerate(lines) if line.startswith("def ")]
    # the exp pass's row loop (called by the serial and parallel row variants), then the
    # serial and parallel variants for short rows, the row variants, and the strided ones
    assert len(defs) == 7 and all(lines[k + 1] == "    vector_width(512)" for k in defs)
    assert lines[defs[0]].startswith("def row_loop0(") and lines[defs[0] + 2] == \
        "    never_inline()"
    pranges = [k for k, line in enumerate(lines) if "numba.prange(" in line]
    assert len(pranges) == 3
    assert all(lines[k + 1].strip() == "vector_width(512)" for k in pranges)
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    kernel = build_kernel(softmax_node())
    for parallel in (False, True):
        (got,) = kernel(x, parallel=parallel)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)


def test_without_a_width_the_source_has_no_call(monkeypatch):
    monkeypatch.setattr(config, "vector_bits", lambda: None)
    source, _ = kernel_source(softmax_node())
    assert "vector_width" not in source


def test_the_call_marks_the_llvm_function():
    @numba.njit
    def twice(x):
        vector_width(512)
        return x * 2

    assert twice(np.arange(3.0)).tolist() == [0.0, 2.0, 4.0]
    (llvm_ir,) = twice.inspect_llvm().values()
    lines = llvm_ir.splitlines()
    definition = next(line for line in lines if line.startswith("define") and "twice" in line
                      and "cpython" not in line)
    group = definition.rsplit("#", 1)[1].split()[0]        # optimized IR: attributes #0 = {...}
    attributes = next(line for line in lines if line.startswith(f"attributes #{group} "))
    assert '"prefer-vector-width"="512"' in attributes


def test_a_generic_numba_cpu_has_no_features(monkeypatch):
    # NUMBA_CPU_NAME=generic (portable caches) compiles for no features: fusejit took the
    # host's and chose AVX-512 forms that became libm calls per element.
    from numba.core import config as numba_config
    monkeypatch.setattr(numba_config, "CPU_NAME", "generic")
    monkeypatch.setattr(numba_config, "CPU_FEATURES", None)
    config._cpu_features.cache_clear()
    try:
        assert not config.cpu_has("avx512f") and not config.cpu_has("fma")
        assert config.vector_bits() is None
    finally:
        monkeypatch.undo()
        config._cpu_features.cache_clear()
