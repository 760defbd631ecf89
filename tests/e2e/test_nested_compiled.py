"""A compiled function called by another's body while it is traced: its ops join that trace
(one program for the caller), and it neither logs nor counts an eager call of its own."""
import logging

import numpy as np

import fusejit
from tests.oracle import assert_same


@fusejit.compile
def _normalized(x):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _block(x, w):
    return x + np.tanh(_normalized(x) @ w)


def _block_eager(x, w):
    return x + np.tanh(_normalized.fn(x) @ w)


def test_a_compiled_callee_is_traced_into_its_caller(caplog):
    compiled = fusejit.compile(_block)
    rng = np.random.default_rng(0)
    with caplog.at_level(logging.INFO, logger="fusejit"):
        for rows in (4, 4, 6):
            x, w = rng.standard_normal((rows, 8)), rng.standard_normal((8, 8))
            assert_same(_block_eager(x, w), compiled(x, w))
    assert not [r for r in caplog.records if "eager" in r.getMessage()]
    caller, callee = compiled.cache_info(), _normalized.cache_info()
    assert (caller["traces"], caller["hits"], caller["eager_calls"]) == (2, 1, 0), caller
    assert (callee["traces"], callee["eager_calls"]) == (0, 0), callee
    # called on its own, the callee compiles as ever
    x = rng.standard_normal((3, 8))
    assert_same(_normalized.fn(x), _normalized(x))
    assert _normalized.cache_info()["traces"] == 1
