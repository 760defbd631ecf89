"""Peer implementations the harness times next to fusejit: numexpr, hand-written Numba loops,
``jax.jit`` and ``torch.compile`` (CPU). The one-kernel workloads and the MLP are written again
in each library's own array API; the models (attention, GPT-2, LSTM, conv) are the bench
models' own source, run by ``jax.jit`` with ``np`` bound to ``jax.numpy`` and by
``torch.compile``, which traces NumPy calls itself. Every peer library is optional: a builder
raises ``ImportError`` when its library is missing and the harness reports the peer as skipped.

A builder takes the workload's ``(args, kwargs)`` and returns a zero-argument callable, so that
input conversion (to jax/torch arrays) stays outside the timed region.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .models import MODELS

GELU_C = math.sqrt(2 / math.pi)


# -- hand-written Numba loops (what a user would write without fusejit) ----------------------
@functools.cache
def _numba_kernels():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def elementwise(a, b, c, out):
        for i in prange(a.shape[0]):
            for j in range(a.shape[1]):
                t = a[i, j] * b[i, j] + c[i, j]
                t = t - 0.5 * a[i, j]
                t = max(t, c[i, j])
                out[i, j] = np.exp(-abs(t))

    @njit(parallel=True, cache=False)
    def gelu(x, out):
        for i in prange(x.shape[0]):
            for j in range(x.shape[1]):
                v = x[i, j]
                out[i, j] = 0.5 * v * (1 + np.tanh(GELU_C * (v + 0.044715 * v**3)))

    @njit(parallel=True, cache=False)
    def softmax(x, out):
        for i in prange(x.shape[0]):
            row_max = x[i, 0]
            for j in range(1, x.shape[1]):
                row_max = max(row_max, x[i, j])
            total = 0.0
            for j in range(x.shape[1]):
                out[i, j] = np.exp(x[i, j] - row_max)
                total += out[i, j]
            for j in range(x.shape[1]):
                out[i, j] /= total

    @njit(parallel=True, cache=False)
    def layer_norm(x, g, b, eps, out):
        n = x.shape[1]
        for i in prange(x.shape[0]):
            mean = 0.0
            for j in range(n):
                mean += x[i, j]
            mean /= n
            var = 0.0
            for j in range(n):
                var += (x[i, j] - mean) ** 2
            inv = 1.0 / math.sqrt(var / n + eps)
            for j in range(n):
                out[i, j] = g[j] * ((x[i, j] - mean) * inv) + b[j]

    return {"elementwise": elementwise, "gelu": gelu, "softmax": softmax,
            "layernorm": layer_norm}


# workloads that are another's computation in another spelling
SAME_AS = {"gelu_f32": "gelu"}


def numba_loops(workload, args, kwargs):
    kernel = _numba_kernels()[SAME_AS.get(workload, workload)]
    x = args[0]
    # gelu's eager result is float64 even for float32 input (see bench/models/gelu.py)
    out_dtype = np.float64 if workload == "gelu" else x.dtype
    out = np.empty(x.shape, out_dtype)
    if workload == "layernorm":
        eps = kwargs.get("eps", 1e-5)
        return lambda: (kernel(*args, eps, out), out)[1]
    return lambda: (kernel(*args, out), out)[1]


# -- numexpr ----------------------------------------------------------------------------------
NUMEXPR_FORMULAS = {
    "elementwise": "exp(-abs(where(a*b + c - 0.5*a > c, a*b + c - 0.5*a, c)))",
    "gelu": f"0.5*x*(1 + tanh({GELU_C!r}*(x + 0.044715*x**3)))",
}


def numexpr_peer(workload, args, kwargs):
    import numexpr

    workload = SAME_AS.get(workload, workload)
    names = {"elementwise": ("a", "b", "c"), "gelu": ("x",)}[workload]
    local_dict = dict(zip(names, args, strict=True))
    formula = NUMEXPR_FORMULAS[workload]
    return lambda: numexpr.evaluate(formula, local_dict=local_dict)


# -- jax.jit and torch.compile (CPU): the same math in each library's own array API ----------
def _array_api_fns(xp, row, relu):
    """``row(name, x)``: a last-axis keepdims reduction, and ``relu(x)``, spelled per library."""

    def softmax(x):
        e = xp.exp(x - row("max", x))
        return e / row("sum", e)

    def layer_norm(x, g, b, eps=1e-5):
        mean = row("mean", x)
        var = row("mean", (x - mean) ** 2)
        return g * (x - mean) / xp.sqrt(var + eps) + b

    def gelu(x):
        return 0.5 * x * (1 + xp.tanh(GELU_C * (x + 0.044715 * x**3)))

    def elementwise(a, b, c):
        t = a * b + c - 0.5 * a
        return xp.exp(-xp.abs(xp.maximum(t, c)))

    def mlp(x, w1, b1, w2, b2):
        return relu(x @ w1 + b1) @ w2 + b2

    return {"softmax": softmax, "layernorm": layer_norm, "gelu": gelu,
            "elementwise": elementwise, "mlp": mlp}


def jax_peer(workload, args, kwargs):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    row = lambda name, x: getattr(jnp, name)(x, axis=-1, keepdims=True)
    relu = lambda x: jnp.maximum(x, 0)
    fn = jax.jit(_array_api_fns(jnp, row, relu)[SAME_AS.get(workload, workload)])
    jargs = [jnp.asarray(a) for a in args]
    return lambda: np.asarray(fn(*jargs).block_until_ready())


def torch_peer(workload, args, kwargs):
    import torch

    reducers = {"max": torch.amax, "sum": torch.sum, "mean": torch.mean}
    row = lambda name, x: reducers[name](x, dim=-1, keepdim=True)
    fn = torch.compile(_array_api_fns(torch, row, torch.relu)[SAME_AS.get(workload, workload)])
    targs = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]
    return lambda: fn(*targs).numpy()


# -- the same, on a model's own NumPy source ------------------------------------------------
def _static_argnums(args):
    """Positions of Python ints (``n_head``): they select the program, as they do in fusejit."""
    return tuple(i for i, arg in enumerate(args) if isinstance(arg, int))


def jax_source_peer(workload, args, kwargs):
    """``jax.jit`` of the model's own source with ``np`` bound to ``jax.numpy``."""
    import jax
    import jax.numpy as jnp

    from .latency_peers import with_numpy

    jax.config.update("jax_enable_x64", True)
    module, name = MODELS[workload]
    fn = jax.jit(with_numpy(module, jnp)[name], static_argnums=_static_argnums(args))
    to_jax = lambda v: jnp.asarray(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    jargs = jax.tree_util.tree_map(to_jax, args)
    return lambda: jax.tree_util.tree_map(np.asarray, jax.block_until_ready(fn(*jargs)))


def torch_source_peer(workload, args, kwargs):
    """``torch.compile`` of the model function itself: Dynamo traces its NumPy calls."""
    import torch

    module, name = MODELS[workload]
    fn = torch.compile(getattr(module, name))
    return lambda: fn(*args)


# workload -> [(peer name, builder)]
_ELEMENTWISE_PEERS = [("numexpr", numexpr_peer), ("numba-loops", numba_loops)]
_ROW_PEERS = [("numba-loops", numba_loops)]
_ARRAY_PEERS = [("jax.jit", jax_peer), ("torch.compile", torch_peer)]
PEERS = {
    "elementwise": _ELEMENTWISE_PEERS + _ARRAY_PEERS,
    "gelu": _ELEMENTWISE_PEERS + _ARRAY_PEERS,
    "gelu_f32": _ELEMENTWISE_PEERS + _ARRAY_PEERS,
    "softmax": _ROW_PEERS + _ARRAY_PEERS,
    "layernorm": _ROW_PEERS + _ARRAY_PEERS,
    "mlp": list(_ARRAY_PEERS),
    **{name: [("jax.jit", jax_source_peer), ("torch.compile", torch_source_peer)]
       for name in ("attention", "gpt2_block", "gpt2", "lstm", "conv")},
}
