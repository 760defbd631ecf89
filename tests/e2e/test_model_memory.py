"""Issue 3: for every bundled model, a compiled call's peak memory is at most eager NumPy's.

Both are measured as the bench measures them (``bench.harness.peak_memory``: tracemalloc,
which NumPy reports its buffers to), on a replay at the ``quick`` size, with the arena of
intermediates the program keeps between calls given back first, so the call allocates it
again inside the window and it counts.
"""
import copy

import numpy as np
import pytest

import fusejit
from bench.harness import peak_memory
from bench.models import MODELS, STATIC_ARGNAMES, load


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_replays_peak_memory_is_at_most_eager_numpys(name):
    fn, make_inputs = load(name)
    compiled = fusejit.compile(fn, static_argnames=STATIC_ARGNAMES.get(name, ()))
    args, kwargs = make_inputs(dtype=np.float32, size="quick")
    for _ in range(3):   # the trace, then replays (the second builds its straight-line code)
        compiled(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    eager_args, compiled_args = copy.deepcopy((args, kwargs)), copy.deepcopy((args, kwargs))
    eager = peak_memory(lambda: fn(*eager_args[0], **eager_args[1]))
    replay = peak_memory(lambda: compiled(*compiled_args[0], **compiled_args[1]))
    assert compiled.cache_info()["hits"] == 3
    assert replay <= eager, f"{name}: compiled {replay} bytes, eager NumPy {eager}"
