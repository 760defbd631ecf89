"""Programs the CUDA suites run: every elementwise op per dtype, reductions, views, matmuls
and the bench models. Shared by ``sim_cases.py`` (run under the simulator) and ``ptx_cases.py``
(which builds the same kernels for PTX); kept tiny because the simulator is slow."""
from __future__ import annotations

import numpy as np

from bench.models import MODELS, STATIC_ARGNAMES, load
from fusejit.ir import ops

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "bool": np.bool_}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan, 1e30, -7.0]
SKIP_OPS = {"where", "cast", "full"}


def sample(dtype, shape=(3, 4), seed=0) -> np.ndarray:
    """Data with the edge cases each dtype has: NaN/inf/signed zeros, zeros for division."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-6, 7, shape).astype(dtype)
    flat = (3 * rng.standard_normal(int(np.prod(shape)))).astype(dtype)
    flat[: len(SPECIAL)] = np.array(SPECIAL[: flat.size], dtype)
    return rng.permutation(flat).reshape(shape)


def elementwise_cases():
    """(id, fn, args) for every fusable elementwise op and dtype with a template."""
    for name, opdef in sorted(ops.REGISTRY.items()):
        if opdef.kind != ops.ELEMENTWISE or name in SKIP_OPS:
            continue
        for short, dtype in DTYPES.items():
            if opdef.template(dtype) is None:
                continue
            args = tuple(sample(dtype, seed=k) for k in range(opdef.arity))
            if not _numpy_accepts(opdef.impl, args):
                continue
            yield f"{name}-{short}", _ufunc_call(opdef.impl), args


def _numpy_accepts(impl, args) -> bool:
    try:
        with np.errstate(all="ignore"):
            impl(*args)
    except TypeError:
        return False
    return True


def _ufunc_call(impl):
    def call(*xs):
        return impl(*xs)
    return call


def reduction_cases():
    def make(fn_name, axis, keepdims):
        def reduce(x):
            return getattr(np, fn_name)(x * 1 if x.dtype != np.bool_ else ~x, axis=axis,
                                        keepdims=keepdims)
        return reduce
    for fn_name, dtypes in (("sum", "f32 f64 i32"), ("prod", "f32 i32"),
                            ("max", "f32 i32 bool"), ("min", "f64 i32"),
                            ("argmax", "f32 i32"), ("argmin", "f64"), ("any", "bool"),
                            ("all", "bool")):
        for short in dtypes.split():
            for axis, keepdims in ((None, False), (0, False), (-1, True), (1, False)):
                if fn_name.startswith("arg") and keepdims:
                    continue
                args = (sample(DTYPES[short], (4, 6), seed=3),)
                yield f"{fn_name}-{short}-{axis}-{keepdims}", make(fn_name, axis, keepdims), args


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(x, w, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w + b


def _sibling_reductions(x):
    # merged side by side into one kernel (fuse's horizontal reductions), one combining both
    return x.sum(axis=0) * np.abs(x).max(axis=0), x.min(axis=-1) + x.mean(axis=-1)


def _matmul_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


def _batched(a, b):
    return np.tanh(a @ b) * 2


def _transposed(a, b):
    return a @ b.T + 1, a.T @ a


def _broadcast_batch(a, b):
    return a @ b


def _vector(v, m):
    return v @ m


def _views(x):
    return x.T.reshape(-1) * 2, x[::2, 1:] + 1, x[::-1] - 1, np.broadcast_to(x[:, :1], x.shape) * 3


def _injective(x, y):
    return np.concatenate([x, y], axis=0) * 2, np.pad(x, 1)


def _concatenate_mixed(x, y):
    # a cast into the output's dtype, a literal operand and the last axis
    return np.concatenate([x, y.astype(np.float64), np.ones((3, 1))], axis=-1)


def _set_region(x, v):
    y = x * 1
    y[1:3, ::2] = v          # a value broadcast into a strided region
    y[0] = 7
    return y


def _set_at(cache, t, v):
    cache[:, t] = v * 2      # a 0-d integer array index (decode_step's key/value cache)
    return cache.sum()


def _set_at_several(x, ids, v):
    x[ids] = v               # several indices may repeat: on the host, in NumPy's order
    return x


def _gather(w, ids, cols):
    return w[ids] + 1, w[:, cols] * 2, w[[2, 0, -1]]


def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def _thirty_row_sums(x):
    return sum((x + k).sum(-1) for k in range(30))


def structure_cases():
    f32 = np.float32
    rng = np.random.default_rng(7)

    def rand(*shape):
        return rng.standard_normal(shape).astype(f32)
    yield "softmax-rows", _softmax, (rand(5, 33),)
    yield "layernorm-rows", _layernorm, (rand(4, 40), rand(40), rand(40))
    yield "sibling-reductions", _sibling_reductions, (rand(6, 9),)
    # 30 reductions in one row kernel: a shared array each passed the 48 KiB a block may have
    yield "thirty-row-sums", _thirty_row_sums, (rand(4, 9),)
    yield "matmul-epilogue", _matmul_relu, (rand(5, 18), rand(18, 20), rand(20))
    yield "matmul-batched", _batched, (rand(2, 5, 17), rand(2, 17, 6))
    yield "matmul-transposed", _transposed, (rand(6, 9), rand(7, 9))
    yield "matmul-broadcast-batch", _broadcast_batch, (rand(3, 4, 5), rand(5, 2))
    yield "matmul-int", _broadcast_batch, (sample(np.int32, (3, 4)), sample(np.int32, (4, 5)))
    yield "matmul-vector-host", _vector, (rand(5), rand(5, 3))
    # few rows: the split-K kernel (cuda_skinny.py), epilogue fused, batch broadcast
    yield "matmul-skinny", _matmul_relu, (rand(1, 70), rand(70, 45), rand(45))
    yield "matmul-skinny-batched", _batched, (rand(3, 4, 37), rand(37, 9))
    yield "matmul-skinny-f64", _matmul_relu, tuple(x.astype(np.float64) for x in
                                                   (rand(3, 19), rand(19, 40), rand(40)))
    yield "views", _views, (rand(4, 6),)
    yield "injective", _injective, (rand(3, 4), rand(2, 4))
    yield "concatenate-mixed", _concatenate_mixed, (rand(3, 4), rand(3, 2))
    yield "setitem-region", _set_region, (rand(4, 6), rand(3))
    yield "setitem-index", _set_at, (rand(2, 5, 3), np.array(3), rand(2, 3))
    yield "setitem-several-host", _set_at_several, (rand(5, 3), np.array([1, 3, 1]), rand(3))
    yield "gather", _gather, (rand(5, 4), np.array([[4, -1], [0, 2]]),
                              np.array([3, 0, -4], np.int32))
    yield "guard-positive", _branchy, (np.abs(rand(3, 4)),)
    yield "guard-negative", _branchy, (-np.abs(rand(3, 4)),)
    yield "compare-int64-uint64", _compare_mixed_sign, (
        np.array([2**53 + 1, 2**63 - 1, 5, -1], np.int64),
        np.array([2**53, 2**63, 5, 2**64 - 1], np.uint64))


def _compare_mixed_sign(a, b):
    # exact in NumPy 2, not through float64; the simulator compares Python ints exactly either
    # way, so only a real GPU (FUSEJIT_CUDA_REAL=1) tells the kernel's comparison apart
    return a == b, a < b, b <= a, np.where(a > b, a, 0)


def _bind(fn, keyword, value, name):
    """``fn`` with a static keyword bound (a named function: fusejit names kernels after it)."""
    def bound(*args, **kwargs):
        return fn(*args, **{keyword: value}, **kwargs)
    bound.__name__ = bound.__qualname__ = name
    return bound


def model_cases(size="small"):
    """(name, fn, args, kwargs) per bench model, statics bound into the function."""
    for name in sorted(MODELS):
        fn, make_inputs = load(name)
        args, kwargs = make_inputs(size=size)
        for static in STATIC_ARGNAMES.get(name, ()):
            fn = _bind(fn, static, args[-1], name)
            args = args[:-1]
        yield name, fn, args, kwargs


def all_cases():
    """Every case as (id, fn, args, kwargs)."""
    for source in (elementwise_cases, reduction_cases, structure_cases):
        for case_id, fn, args in source():
            yield case_id, fn, args, {}
    yield from model_cases()
