"""``jax.jit`` and ``torch.compile`` on ``bench.latency``'s models, when they are installed.

    python -m bench.latency_peers PEER block|gpt2 LAYERS      (one JSON line)

Runs in a fresh process per peer and model: the first call at seq 128 (the cold compile), the
first call at seq 64 (a new shape), and the median call of ``models.tiny.five_kernels`` on 4x4
inputs (dispatch). JAX runs the models' own source with ``np`` bound to ``jax.numpy``;
``torch.compile`` compiles the NumPy code itself (it traces NumPy calls). Neither is a
dependency: a missing one is reported as skipped.
"""
from __future__ import annotations

import inspect
import json
import sys
import time

import numpy as np

from bench.models import gpt2_block, tiny

PEERS = ("jax.jit", "torch.compile")


def gpt2_inputs(which: str, seq: int, layers: int) -> tuple:
    """Arguments of ``gpt2_block.block`` (``which="block"``) or of a ``layers``-deep
    ``gpt2_block.gpt2`` at bench size, for sequence length ``seq``."""
    if which == "block":
        (x, params, n_head), _ = gpt2_block.make_inputs(size="bench")
        x = np.random.default_rng(1).standard_normal((seq, x.shape[1])).astype(np.float32)
        return x, params, n_head
    (_, params, n_head), _ = gpt2_block.make_gpt2_inputs(size="bench")
    params = dict(params, blocks=[params["blocks"][0]] * layers)
    return np.arange(seq) % params["wte"].shape[0], params, n_head


def with_numpy(module, xp) -> dict:
    """The module's functions, re-created with ``np`` bound to ``xp``."""
    namespace: dict = {}
    exec(compile(inspect.getsource(module), module.__file__, "exec"), namespace)  # noqa: S102
    namespace["np"] = xp
    return namespace


def compiler(peer: str):
    """``compile(module, name, static) -> callable on NumPy arguments`` for the peer."""
    if peer == "jax.jit":
        import jax
        import jax.numpy as jnp

        def compile_jax(module, name, static=()):
            fn = jax.jit(with_numpy(module, jnp)[name], static_argnums=static)
            to_jax = lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v  # noqa: E731
            return lambda *args: jax.block_until_ready(
                fn(*jax.tree_util.tree_map(to_jax, args)))
        return compile_jax
    import torch

    def compile_torch(module, name, static=()):
        return torch.compile(getattr(module, name))
    return compile_torch


def seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def probe(peer: str, which: str, layers: int) -> dict:
    try:
        compile_fn = compiler(peer)
    except ImportError as exc:
        return {"skipped": f"not installed ({exc.name or exc})"}
    fn = compile_fn(gpt2_block, "block" if which == "block" else "gpt2", static=(2,))
    args, args64 = gpt2_inputs(which, 128, layers), gpt2_inputs(which, 64, layers)
    first = seconds(lambda: fn(*args))
    new_shape = seconds(lambda: fn(*args64))
    dispatch = compile_fn(tiny, "five_kernels")
    x, y = tiny.make_inputs()
    dispatch(x, y)
    samples = sorted(seconds(lambda: dispatch(x, y)) for _ in range(2000))
    return {"first_call_s": first, "new_shape_first_call_s": new_shape,
            "dispatch_us": samples[len(samples) // 2] * 1e6}


def main(argv=None) -> int:
    peer, which, layers = (argv or sys.argv[1:])[:3]
    print(json.dumps(probe(peer, which, int(layers))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
