"""Arguments laid out otherwise than C-ordered (``x.T``, Fortran arrays) key apart and compile
in their memory order (``runtime/input_layouts.py``): kernels read them in order, and results
come out laid out as NumPy's."""
import numpy as np
import pytest

import fusejit
from fusejit.runtime.input_layouts import stride_order
from tests.oracle import assert_same

rng = np.random.default_rng(7)


def fortran(*shape):
    return np.asfortranarray(rng.standard_normal(shape).astype(np.float32))


def c_ordered(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def replays_as_numpy(fn, *args):
    """``fn`` compiled and called three times (the trace, then replays): each result has
    NumPy's values and strides. Returns the compiled function."""
    compiled = fusejit.compile(fn)
    for _ in range(3):
        want, got = fn(*args), compiled(*args)
        assert_same(want, got)
        assert np.asarray(got).strides == np.asarray(want).strides
    return compiled


@pytest.mark.parametrize(("make", "order"), [
    (lambda: c_ordered(3, 4), None),
    (lambda: fortran(3, 4), (1, 0)),
    (lambda: c_ordered(3, 4)[:, ::2], None),               # a C-ordered view
    (lambda: c_ordered(4, 3)[::-1].T, (1, 0)),              # negative strides go by size
    (lambda: c_ordered(2, 3, 4).transpose(2, 0, 1), (1, 2, 0)),
    (lambda: fortran(1, 3, 4), (0, 2, 1)),                  # a length-1 axis stays put
    (lambda: np.broadcast_to(c_ordered(3, 1), (3, 4)), None),  # so does a broadcast axis
    (lambda: c_ordered(5), None),
])
def test_stride_order_lays_the_array_out_in_c_order(make, order):
    array = make()
    assert stride_order(array) == order
    if order is not None:
        raw = array.transpose(order)
        moving = [s for n, s in zip(raw.shape, raw.strides, strict=True) if n > 1]
        assert [abs(s) for s in moving] == sorted(map(abs, moving), reverse=True)


FUNCTIONS = {
    "elementwise": lambda a, b: np.tanh(a) * b + 1.0,
    "column_mean": lambda a, b: a - a.mean(axis=0),
    "softmax": lambda a, b: np.exp(a - a.max(-1, keepdims=True)) / np.exp(
        a - a.max(-1, keepdims=True)).sum(-1, keepdims=True),
    "slice": lambda a, b: a[1:, ::2] * b[1:, ::2],
    "matmul": lambda a, b: np.maximum(a @ b.T, 0.0),
    "sum": lambda a, b: (a * b).sum(),
    "ones_like": lambda a, b: np.ones_like(a) - b,
    "concatenate": lambda a, b: np.concatenate([a, b], axis=1) * 2,
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_fortran_arguments_give_numpys_values_and_layout(name):
    compiled = replays_as_numpy(FUNCTIONS[name], fortran(6, 10), fortran(6, 10))
    assert (compiled.cache_info()["traces"], compiled.cache_info()["eager_calls"]) == (1, 0)


@pytest.mark.parametrize("fn", [lambda a, b: np.full_like(a, b[0]) * a,
                                lambda a, b: np.full_like(a, b[:, :1]),
                                lambda a, b: np.full_like(a.T, a[:, 0]),
                                lambda a, b: np.full_like(a, [[1.0]] * 6),
                                lambda a, b: np.full_like(a, np.arange(10), dtype=np.int64),
                                lambda a, b: np.full_like(a, (2.5,) * 10) - b],
                         ids=["row", "column", "transposed", "list", "array", "tuple"])
def test_full_like_of_a_fortran_argument_broadcasts_an_array_fill_over_its_own_axes(fn):
    # Found by review: the fill was broadcast over the memory-order axes, then transposed;
    # a fill that is a list or array failed to compile (the signature ran eagerly), and a
    # traced fill came back C-ordered where NumPy's is laid out as ``a``
    compiled = replays_as_numpy(fn, fortran(6, 10), fortran(6, 10))
    assert compiled.cache_info()["eager_calls"] == 0


def test_ir_of_a_pass_shows_the_arguments_in_memory_order():
    # Found by review: ir(stage=<pass>) ran the passes on the traced graph
    compiled = fusejit.compile(lambda w, g: np.tanh(w - 0.1 * g).sum(0))
    a, b = fortran(4, 6), fortran(4, 6)
    compiled(a, b)
    last = compiled.ir(a, b, stage="plan_memory")
    assert last == compiled.ir(a, b, stage="optimized")
    assert "w: f32[6,4]" in last


@pytest.mark.parametrize("fn", [lambda a, b: a * b + 1.0, lambda a, b: np.exp(b) - a.sum(0)])
def test_fortran_and_c_arguments_mixed(fn):
    replays_as_numpy(fn, fortran(6, 10), c_ordered(6, 10))   # NumPy's ufuncs: C order there


def test_kernels_read_a_fortran_argument_in_memory_order():
    def f(a, b):
        return np.tanh(a) * b + 1.0

    compiled = fusejit.compile(f)
    a, b = fortran(6, 10), fortran(6, 10)
    compiled(a, b)
    text = compiled.ir(a, b)
    # the inputs are the arrays as memory holds them, the one kernel reads them as such, and
    # the result is its transpose (a view): no strided kernel, no copy
    assert text.startswith("def f(a: f32[10,6], b: f32[10,6]) -> f32[6,10]:")
    assert [line.split("=")[1].split()[0] for line in text.splitlines()
            if line.startswith("  %")] == ["fused", "permute"]
    explained = str(compiled.explain(a, b))
    assert "a taken in memory order, as a.transpose(1, 0)" in explained


def test_c_and_fortran_calls_trace_paths_of_their_own():
    def f(a):
        return a * 2.0 + 1.0

    compiled = fusejit.compile(f)
    calls = [c_ordered(6, 10), fortran(6, 10), c_ordered(12, 10)[::2], fortran(6, 10),
             c_ordered(6, 10)]
    for a in calls:
        want, got = f(a), compiled(a)
        assert_same(want, got)
        assert got.strides == want.strides
    info = compiled.cache_info()
    assert (info["signatures"], info["traces"], info["hits"]) == (2, 2, 3)  # a C view: C's


def test_arrays_in_a_dict_key_by_their_layout_too():
    # the key makes a C-contiguous item's signature itself; any other goes by its order
    def f(params):
        return params["w"] * 2.0 + params["b"]

    compiled = fusejit.compile(f)
    calls = [{"w": c_ordered(6, 10), "b": c_ordered(10)}, {"w": fortran(6, 10), "b": c_ordered(10)},
             {"w": c_ordered(6, 20)[:, ::2], "b": c_ordered(10)},
             {"w": fortran(6, 10), "b": c_ordered(10)}]
    for params in calls:
        want, got = f(params), compiled(params)
        assert_same(want, got)
        assert got.strides == want.strides
    info = compiled.cache_info()
    assert (info["signatures"], info["traces"], info["hits"]) == (2, 2, 2)


def _decay(w, g):
    w *= 0.99
    w += g              # the final value, stored by its kernel into w's memory


def _scatter(w, g):
    w[[1, 3]] -= g[:2]
    return w.sum()


def _slice_then_use(w, g):
    w[:, 1:] = 0
    return w * g


def _returned_too(w, g):
    w += 1
    return w.reshape(-1)     # a copy of the final value (w is F-ordered)


@pytest.mark.parametrize("fn", [_decay, _scatter, _slice_then_use, _returned_too],
                         ids=lambda fn: fn.__name__.strip("_"))
def test_an_argument_written_in_place_gets_the_writes_in_its_layout(fn):
    compiled = fusejit.compile(fn)
    for _ in range(3):
        w, g = fortran(6, 10), fortran(6, 10)
        want_w = w.copy(order="K")
        want, got = fn(want_w, g), compiled(w, g)
        assert_same(want, got)
        assert_same(want_w, w)
        assert w.flags.f_contiguous
    (entry,) = compiled.entry_for(w, g).paths
    assert entry.orders == ((0, (1, 0)), (1, (1, 0)))
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_written_argument_s_kernel_stores_into_it_in_its_memory_order():
    compiled = fusejit.compile(_decay)
    w, g = fortran(6, 10), fortran(6, 10)
    compiled(w, g)
    (entry,) = compiled.entry_for(w, g).paths
    assert entry.target_orders == ((1, 0),)
    # one kernel whose result is the final w in its memory order, stored over w itself
    assert compiled.ir(w, g).splitlines()[-1] == "  return %0"
    assert "1 argument update(s) stored by their kernel" in str(compiled.explain(w, g))


def test_returning_the_transposed_argument_is_a_view_of_it():
    def f(a):
        return a.T

    compiled = fusejit.compile(f)
    a = fortran(6, 10)
    for _ in range(2):
        got = compiled(a)
        assert_same(a.T, got)
        assert np.shares_memory(got, a) and got.flags.c_contiguous


GLOBAL_W = fortran(6, 10)
RUNNING = fortran(6, 10)


def _reads_the_global(x):
    return np.tanh(GLOBAL_W * x[0]).sum(1), np.exp(GLOBAL_W - x[1]) * 0.5


def _writes_the_global(x):
    RUNNING[...] *= 0.9
    RUNNING[...] += x[0] * GLOBAL_W
    return RUNNING.sum(0)


def test_a_fortran_global_is_taken_in_memory_order_and_may_change_layout():
    # Found: a captured F-ordered array was read in C order (the kernels stride through it:
    # 4096x1024 float32, tanh(W * a).sum(1) and exp(W - b) * 0.5, 40 ms against eager's 7.4;
    # 1.8 ms taken in memory order), and the result came back C-ordered
    global GLOBAL_W
    compiled = fusejit.compile(_reads_the_global)
    x = np.array([0.5, 2.0], np.float32)
    for _ in range(3):
        want, got = _reads_the_global(x), compiled(x)
        assert_same(want, got)
        assert [g.strides for g in got] == [w.strides for w in want]
    (entry,) = compiled.entry_for(x).paths
    assert entry.orders == ((1, (1, 0)),)
    assert "global GLOBAL_W taken in memory order" in str(compiled.explain(x))
    saved = GLOBAL_W
    try:
        for other in (np.ascontiguousarray(saved), saved[:, ::-1], fortran(6, 10)):
            GLOBAL_W = other                    # rebound: another layout, still right
            assert_same(_reads_the_global(x), compiled(x))
    finally:
        GLOBAL_W = saved


def test_a_fortran_global_written_in_place_keeps_its_own_order():
    compiled = fusejit.compile(_writes_the_global)
    x = np.array([0.5, 2.0], np.float32)
    want_running = RUNNING.copy(order="K")
    for _ in range(3):
        got = compiled(x)
        want_running *= 0.9
        want_running += x[0] * GLOBAL_W
        assert_same(want_running.sum(0), got)
        assert_same(want_running, RUNNING)
    (entry,) = compiled.entry_for(x).paths
    assert entry.orders == ((2, (1, 0)),)        # GLOBAL_W; RUNNING is written
