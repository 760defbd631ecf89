import numpy as np
import pytest

from fusejit.tracer import trace

from .helpers import check

rng = np.random.default_rng(1)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)
M = rng.standard_normal((3, 4)).astype(np.float32)
I32 = rng.integers(-5, 5, (3, 4)).astype(np.int32)
B = M > 0
H = M.astype(np.float16)

REDUCTIONS = [
    lambda x: x.sum(), lambda x: np.sum(x, axis=-1), lambda x: x.sum(axis=(0, 2), keepdims=True),
    lambda x: x.mean(), lambda x: np.mean(x, axis=(-1, 0)), lambda x: x.mean(1, keepdims=True),
    lambda x: x.max(axis=1), lambda x: np.amin(x), lambda x: x.min(axis=-1, keepdims=True),
    lambda x: x.prod(axis=0), lambda x: x.var(), lambda x: x.var(axis=1, ddof=1),
    lambda x: np.std(x, axis=-1, keepdims=True), lambda x: x.argmax(), lambda x: x.argmin(-1),
    lambda x: np.argmax(x, axis=1, keepdims=True), lambda x: (x > 0).any(axis=0),
    lambda x: np.all(x > -1), lambda x: x.sum(dtype=np.float64), lambda x: x.mean(dtype=np.float64),
    lambda x: np.add.reduce(x), lambda x: np.maximum.reduce(x, axis=-1),
]


@pytest.mark.parametrize("fn", REDUCTIONS)
@pytest.mark.parametrize("x", [X, I32, B, H, np.array(3.5, np.float32)],
                         ids=["f32", "i32", "bool", "f16", "0d"])
def test_reductions(fn, x):
    try:
        fn(x)
    except (ValueError, TypeError, np.exceptions.AxisError) as exc:
        # NumPy rejects this combination (e.g. an axis out of range for a 0-d input): tracing
        # must raise the same exception type, NumPy's own, at the user's call.
        with pytest.raises(type(exc)):
            trace(fn, (x,), {})
        return
    check(fn, x)


def test_reduction_dtypes():
    tr = check(lambda i, b: (i.sum(), i.mean(), b.sum(), i.var()), I32, B)
    dtypes = [v.type.dtype for v in tr.graph.outputs]
    assert dtypes == [np.int64, np.float64, np.int64, np.float64]


MOVEMENT = [
    lambda x: x.reshape(-1), lambda x: x.reshape(4, 6), lambda x: np.reshape(x, (2, 12)),
    lambda x: x.T, lambda x: x.transpose(0, 2, 1), lambda x: np.transpose(x, (2, 0, 1)),
    lambda x: x.swapaxes(0, -1), lambda x: np.moveaxis(x, 0, -1),
    lambda x: np.expand_dims(x, (0, -1)), lambda x: np.squeeze(x[:, :1], axis=1),
    lambda x: x[:1].squeeze(), lambda x: np.broadcast_to(x[0, 0], (5, 4)), lambda x: x.ravel(),
    lambda x: x.flatten(), lambda x: np.concatenate([x, x * 2], axis=-1),
    lambda x: np.concatenate([x, x], axis=None), lambda x: np.stack([x[0], x[1]], axis=1),
    lambda x: np.hstack([x[0], x[1]]), lambda x: np.vstack([x[0, 0], x[1, 0]]),
    lambda x: np.split(x, 2, axis=0), lambda x: np.array_split(x, 3, axis=-1),
    lambda x: np.pad(x, ((0, 0), (1, 2), (0, 1))), lambda x: np.pad(x, 1, constant_values=2.5),
    lambda x: np.tile(x[0], (2, 1)), lambda x: np.repeat(x, 2, axis=1), lambda x: x.repeat(2),
    lambda x: np.outer(x[0, 0], x[1, 1]), lambda x: np.copy(x), lambda x: x.copy(),
    lambda x: x.astype(np.float64), lambda x: x.astype(np.int32),
    lambda x: np.zeros_like(x), lambda x: np.ones_like(x, dtype=np.int32),
    lambda x: np.full_like(x, 7.0), lambda x: np.empty_like(x) * 0,
    lambda x: np.where(x > 0, x, 0.0), lambda x: np.where(x > 0, x, x[0].astype(np.float64)),
    lambda x: np.clip(x, -0.5, 0.5), lambda x: x.clip(0), lambda x: np.clip(x, None, x[0]),
]


@pytest.mark.parametrize("fn", MOVEMENT)
def test_movement_and_copies(fn):
    check(fn, X)


CONTRACTIONS = [
    lambda a, b: np.dot(a[0], b), lambda a, b: np.dot(a, b), lambda a, b: a.dot(b[:, 0]),
    lambda a, b: np.dot(a, b.reshape(2, 4, 3)), lambda a, b: np.dot(a[0, 0], 2.0),
    lambda a, b: np.tensordot(a, b, axes=1), lambda a, b: np.tensordot(a, b, axes=([2], [0])),
    lambda a, b: np.tensordot(a, b, axes=np.int64(1)), lambda a, b: np.tensordot(a[0, 0], b, 0),
    lambda a, b: np.einsum("bij,jk->bik", a, b), lambda a, b: np.einsum("ij,jk->ik", a[0], b),
    lambda a, b: np.einsum("bij,bkj->bik", a, a), lambda a, b: np.einsum("bij->bji", a),
    lambda a, b: np.einsum("bij->j", a), lambda a, b: np.einsum("i,j->ij", a[0, 0], b[0]),
    lambda a, b: np.einsum("bij,bij->bi", a, a), lambda a, b: np.matmul(a, b),
]


@pytest.mark.parametrize("fn", CONTRACTIONS)
def test_contractions(fn):
    check(fn, X, rng.standard_normal((4, 6)).astype(np.float32), exact=False)


def test_einsum_forms_without_a_kernel_are_host_ops():
    from fusejit.tracer import trace
    tr = trace(lambda a: np.einsum("ii->i", a) * 2, (M[:3, :3],), {})
    assert [n.op for n in tr.graph.nodes] == ["host", "mul"]
    assert tr.graph.nodes[0].attr["name"] == "np.einsum"
