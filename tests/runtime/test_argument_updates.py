"""An argument's update computed by one kernel that reads it is stored by that kernel into the
caller's array (``passes.in_place_updates``), not into a new array copied back afterwards --
with eager NumPy's results and final state, also when the call fails or a guard changes."""
import numpy as np
import pytest

from tests.oracle import assert_same, check_calls


def adam(w, g, m, v, t):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    w -= 0.01 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)


def adam_assigned(w, g, m, v, t):
    m[:] = 0.9 * m + 0.1 * g
    v[...] = 0.999 * v + 0.001 * g * g
    w[:, :] = w - 0.01 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)


def _adam_args(call, layout="C"):
    rng = np.random.default_rng(call)
    w, g, m, v = (rng.standard_normal((6, 40)).astype(np.float32) for _ in range(4))
    arrays = [w, g, m, np.abs(v)]
    if layout == "strided":   # every second column of a wider array
        arrays = [np.repeat(a, 2, axis=1)[:, ::2] for a in arrays]
    return (*arrays, float(call + 1))


def _donated(compiled, *args) -> int:
    return len(compiled.entry_for(*args).paths[0].program.donated)


@pytest.mark.parametrize("layout", ["C", "strided"])
@pytest.mark.parametrize("step", [adam, adam_assigned], ids=["augmented", "assigned"])
def test_optimizer_step_stores_each_state_once(step, layout):
    compiled = check_calls(step, lambda call: _adam_args(call, layout), calls=4)
    args = _adam_args(9, layout)
    assert _donated(compiled, *args) == 3
    text = str(compiled.explain(*args))
    assert "3 argument update(s) stored by their kernel into the caller's array" in text
    assert "setitem" not in text


def _guarded(m, g):
    m *= 2.0
    m += g
    if m @ g > 0:     # a product after the kernel, then its guard: the store could not be undone
        return g * 2.0
    return g * 3.0


def test_no_store_into_an_argument_before_a_guard():
    def args(call):
        g = np.full(5, 1.0 if call % 2 == 0 else -9.0)
        return np.linspace(0.0, 1.0, 5), g

    compiled = check_calls(_guarded, args, calls=5)   # the guard fails on every other call
    assert _donated(compiled, *args(0)) == 0


def _two_updates(a, b):
    a *= 2.0
    b += 1.0


def test_read_only_second_argument_leaves_the_first_as_numpy_does():
    compiled = check_calls(_two_updates, lambda call: (np.arange(4.0), np.zeros(4)))
    assert _donated(compiled, np.arange(4.0), np.zeros(4)) == 2
    want_a, got_a = np.arange(4.0), np.arange(4.0)
    want_b, got_b = np.zeros(4), np.zeros(4)
    want_b.flags.writeable = got_b.flags.writeable = False
    with pytest.raises(ValueError, match="read-only") as want:
        _two_updates(want_a, want_b)
    with pytest.raises(ValueError, match="read-only") as got:
        compiled(got_a, got_b)
    assert str(got.value) == str(want.value)
    assert_same(want_a, got_a)   # doubled once, by the body run again eagerly


def _old_contents_read_later(m, g):
    head = m[:2]
    m *= g
    return head + 1.0, m.sum()


def _index_write_after(m, h, idx):
    m *= 3.0
    h[idx] = 1.0      # deferred to after the run, where its index is checked


def _gather_after(m, h, idx):
    m *= 3.0
    return m[idx] + h[0]


def test_old_contents_read_after_the_kernel_keep_the_copy():
    compiled = check_calls(_old_contents_read_later,
                           lambda call: (np.arange(4.0) + call, np.full(4, 2.0)))
    assert _donated(compiled, np.arange(4.0), np.full(4, 2.0)) == 0


@pytest.mark.parametrize("step", [_index_write_after, _gather_after])
def test_no_store_into_an_argument_before_an_index_error(step):
    def args(call):
        return np.arange(4.0), np.zeros(3), np.array([0, 2 if call < 2 else 7])

    compiled = fusejit_compile(step)
    for call in range(4):
        want, got = args(call), args(call)
        if call < 2:
            assert_same(step(*want), compiled(*got))
        else:   # out of bounds: IndexError after m was updated, once
            with pytest.raises(IndexError):
                step(*want)
            with pytest.raises(IndexError):
                compiled(*got)
        for w, g in zip(want, got, strict=True):
            assert_same(w, g)
    assert _donated(compiled, *args(0)) == 0


def fusejit_compile(fn):
    import fusejit
    return fusejit.compile(fn)


def _assigned_from(a, b, g):
    a[:] = b            # a value that is an argument: copied, never forwarded into a store
    b[:] = g * 2.0
    return a.sum()


def _assigned_part(a, g):
    a[:, :2] = a[:, :2] * g    # part of the array: a write, not the whole update
    a[...] = a + 1.0
    return a


def test_whole_array_assignments_keep_numpys_order_and_aliasing():
    def args(call):
        rng = np.random.default_rng(call)
        return np.zeros(4), rng.standard_normal(4), rng.standard_normal(4)

    check_calls(_assigned_from, args)
    check_calls(_assigned_part, lambda call: (np.arange(12.0).reshape(3, 4) + call,
                                              np.full((3, 2), 2.0)))


def _layer_norm_in_place(x):
    x[:] = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def test_row_kernel_stores_its_normalized_rows_into_the_argument():
    compiled = check_calls(_layer_norm_in_place,
                           lambda call: (np.random.default_rng(call).standard_normal((6, 300)),))
    assert _donated(compiled, np.ones((6, 300))) == 1


def test_arguments_that_overlap_themselves_are_updated_as_numpy_buffers_them():
    def args(call):   # windows of length 3 over one buffer: element k is in up to 3 windows
        base = np.arange(1.0, 7.0) + call
        return np.lib.stride_tricks.sliding_window_view(base, 3, writeable=True), base

    compiled = fusejit_compile(_two_updates)
    for call in range(3):
        (want, want_base), (got, got_base) = args(call), args(call)
        _two_updates(np.zeros(2), want)
        compiled(np.zeros(2), got)
        assert_same(want_base, got_base)
    assert compiled.cache_info()["aliased_calls"] == 2


def test_a_zero_stride_on_an_axis_of_length_one_is_no_overlap():
    def args(call):
        return np.arange(3.0) + call, np.zeros(4)[None, :]   # strides (0, 8)

    compiled = check_calls(_two_updates, args, calls=4)
    assert _donated(compiled, *args(0)) == 2
    assert compiled.cache_info()["paths"] == 1


def test_same_array_twice_runs_eagerly():
    compiled = fusejit_compile(_two_updates)
    compiled(np.arange(4.0), np.zeros(4))
    want, got = np.arange(4.0), np.arange(4.0)
    _two_updates(want, want)
    compiled(got, got)
    assert_same(want, got)
