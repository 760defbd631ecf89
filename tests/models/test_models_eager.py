"""The benchmark models run eagerly: expected shapes and dtypes, finite values, determinism.

These pin the models themselves (the oracle of the compiled e2e tests), not fusejit.
"""
import copy

import numpy as np
import pytest

from bench.models import MODELS, load
from bench.models.lstm import lstm_cell

DTYPES = [np.float32, np.float64]

# name -> (shapes of the small-size outputs, output dtype for f32 input or None = same dtype)
EXPECTED = {
    "mlp": ([(8, 16)], None),
    "gelu": ([(8, 32)], np.float64),        # NEP 50: np.sqrt(2 / np.pi) is a strong float64
    "gelu_f32": ([(8, 32)], None),          # math.sqrt(2 / math.pi) is a weak Python float
    "elementwise": ([(8, 32)], None),
    "softmax": ([(8, 32)], None),
    "layernorm": ([(8, 32)], None),
    "attention": ([(8, 32)], None),
    "gpt2_block": ([(8, 32)], None),
    "gpt2": ([(8, 64)], None),
    "gpt2_decode": ([(1, 32)], None),
    "lstm": ([(16, 4, 16), (4, 16)], None),
    "conv": ([(2, 4, 8, 8)], None),
    "mlp_train": ([()], None),
    "adam": ([], None),                     # updates its arguments, returns nothing
}


def run(name, dtype, seed=0):
    fn, make_inputs = load(name)
    args, kwargs = make_inputs(dtype=dtype, size="small", seed=seed)
    out = fn(*args, **kwargs)
    if out is None:
        return ()
    return out if isinstance(out, tuple) else (out,)


def test_every_model_has_expectations():
    assert set(EXPECTED) == set(MODELS)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_runs_eagerly(name, dtype):
    shapes, f32_result_dtype = EXPECTED[name]
    outs = run(name, dtype)
    want_dtype = np.dtype(f32_result_dtype or dtype) if dtype == np.float32 else np.dtype(dtype)
    assert [np.shape(o) for o in outs] == shapes
    for out in outs:
        assert np.asarray(out).dtype == want_dtype
        assert np.all(np.isfinite(out))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_inputs_are_deterministic(name):
    _, make_inputs = load(name)
    first, second = make_inputs(seed=3), make_inputs(seed=3)
    flat = lambda tree: [leaf for leaf in _leaves(tree) if isinstance(leaf, np.ndarray)]
    for a, b in zip(flat(first), flat(second), strict=True):
        np.testing.assert_array_equal(a, b)


def _leaves(tree):
    if isinstance(tree, dict):
        for key in sorted(tree):
            yield from _leaves(tree[key])
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _leaves(item)
    else:
        yield tree


def test_loss_is_a_numpy_scalar():
    (loss,) = run("mlp_train", np.float32)
    assert type(loss) is np.float32


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_training_step_decreases_loss_and_updates_in_place(dtype):
    fn, make_inputs = load("mlp_train")
    (x, y, params, lr), _ = make_inputs(dtype=dtype, size="small")
    arrays_before = dict(params)
    initial = copy.deepcopy(params)
    losses = [fn(x, y, params, lr) for _ in range(5)]
    assert np.all(np.diff(losses) < 0), losses
    for key, value in params.items():
        assert value is arrays_before[key]            # the caller's arrays, updated in place
        assert value.dtype == np.dtype(dtype)
        assert not np.array_equal(value, initial[key])


def test_lstm_unrolls_sixteen_steps():
    fn, make_inputs = load("lstm")
    (xs, h, c, params), _ = make_inputs()
    hs, c_last = fn(xs, h, c, params)
    h_step, c_step = h, c
    for t in range(len(xs)):
        h_step, c_step = lstm_cell(xs[t], h_step, c_step, params["w_ih"], params["w_hh"],
                                   params["b"])
    np.testing.assert_allclose(hs[-1], h_step)
    np.testing.assert_allclose(c_last, c_step)


def test_softmax_rows_sum_to_one():
    (out,) = run("softmax", np.float64)
    np.testing.assert_allclose(out.sum(axis=-1), 1.0, rtol=1e-12)


def test_layernorm_normalizes_rows():
    from bench.models.layernorm import layer_norm
    x = np.random.default_rng(0).standard_normal((4, 64))
    out = layer_norm(x, np.ones(64), np.zeros(64))
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(out.std(axis=-1), 1.0, rtol=1e-4)


def test_attention_is_causal():
    fn, make_inputs = load("attention")
    (x, p, n_head), _ = make_inputs(dtype=np.float64)
    changed = x.copy()
    changed[-1] += 1.0                                # the last token cannot affect earlier ones
    np.testing.assert_allclose(fn(x, p, n_head)[:-1], fn(changed, p, n_head)[:-1])


def test_conv_matches_direct_convolution():
    fn, make_inputs = load("conv")
    (x, w, b), _ = make_inputs(dtype=np.float64)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    direct = np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None]
    np.testing.assert_allclose(fn(x, w, b), np.maximum(direct, 0), rtol=1e-10, atol=1e-12)


def _decode_all(decode, x, p, n_head, max_seq):
    """Each token of ``x`` through ``decode``, in order, from empty caches."""
    n_embd = x.shape[1]
    caches = [np.zeros((n_head, max_seq, n_embd // n_head), x.dtype) for _ in range(2)]
    rows = [decode(x[t:t + 1], *caches, np.array(t), p, n_head) for t in range(len(x))]
    return np.concatenate(rows), caches


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_decoding_token_by_token_gives_the_blocks_causal_rows(dtype):
    from bench.models import gpt2_block
    (x, p, n_head), _ = gpt2_block.make_inputs(dtype=dtype, size="small")
    rows, (k_cache, _) = _decode_all(gpt2_block.decode_step, x, p, n_head, max_seq=16)
    tolerance = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(rows, gpt2_block.block(x, p, n_head), rtol=tolerance * 10,
                               atol=tolerance)
    assert np.any(k_cache[:, len(x) - 1] != 0) and not np.any(k_cache[:, len(x):])


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_adam_steps_follow_the_update_rule(dtype):
    fn, make_inputs = load("adam")
    (params, grads, m, v, _, lr), _ = make_inputs(dtype=dtype, size="small")
    want = {k: [a.astype(np.float64) for a in (params[k], m[k], v[k])] for k in params}
    arrays_before = dict(params)
    for t in (1.0, 2.0, 3.0):
        fn(params, grads, m, v, t, lr)
        for k, (w, m_ref, v_ref) in want.items():
            g = grads[k].astype(np.float64)
            m_ref[:] = 0.9 * m_ref + 0.1 * g
            v_ref[:] = 0.999 * v_ref + 0.001 * g * g
            w -= lr * (m_ref / (1 - 0.9**t)) / (np.sqrt(v_ref / (1 - 0.999**t)) + 1e-8)
    rtol, atol = (1e-5, 1e-6) if dtype == np.float32 else (1e-12, 1e-15)
    for k, (w, m_ref, v_ref) in want.items():
        assert params[k] is arrays_before[k] and params[k].dtype == np.dtype(dtype)
        for got, ref in ((params[k], w), (m[k], m_ref), (v[k], v_ref)):
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
