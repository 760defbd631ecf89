"""A kernel Numba cannot compile: the signature runs eagerly at once, with NumPy's answer.

Kernels compile at their first replay (the first call runs eagerly while it traces), so the
failure surfaces there. Numba is made to fail by handing every kernel a module whose functions
do not type-check.
"""
import logging
import types

import numba
import numpy as np
import pytest

import fusejit
from fusejit.codegen import source_cache
from tests.oracle import assert_same


@numba.njit
def _untypable(*args):
    return args.no_such_attribute


@pytest.fixture
def failing_kernels(monkeypatch):
    """Every kernel built from here on fails to compile; counts the modules handed out."""
    loads = []

    def load_module(key, source):
        loads.append(key)
        return types.SimpleNamespace(**{name: _untypable for name in (
            "kernel_serial", "kernel_parallel", "strided_serial", "strided_parallel")})

    monkeypatch.setattr(source_cache, "load_module", load_module)
    return loads


def model(x, y):
    return np.tanh(x * y + 1.5) - y


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((6, 5)), rng.standard_normal((6, 5))


def test_a_kernel_that_fails_to_compile_makes_the_signature_eager(failing_kernels, monkeypatch,
                                                                   caplog):
    monkeypatch.delenv("FUSEJIT_STRICT", raising=False)
    compiled = fusejit.compile(model, cache=False)
    with caplog.at_level(logging.WARNING, logger="fusejit"):
        for seed in range(4):
            assert_same(model(*inputs(seed)), compiled(*inputs(seed)))
    info = compiled.cache_info()
    assert info["traces"] == 1, "the signature was traced again after its kernel failed"
    assert info["eager_signatures"] == 1 and info["paths"] == 0
    assert info["eager_calls"] == 3
    assert len(failing_kernels) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "failed to compile in Numba (TypingError" in warnings[0]
    assert "failed to compile in Numba" in str(compiled.explain(*inputs()))


def test_strict_mode_raises_numbas_error(failing_kernels, monkeypatch):
    monkeypatch.setenv("FUSEJIT_STRICT", "1")
    compiled = fusejit.compile(model, cache=False)
    compiled(*inputs())
    with pytest.raises(numba.core.errors.TypingError):
        compiled(*inputs())
