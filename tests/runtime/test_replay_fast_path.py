"""The replay fast path (generated straight-line entry and kernel calls) returns what eager NumPy
returns: every kind of output leaf, arguments passed through, guards checked on the way, and the
cases it hands back to the general path (writes back to arguments)."""
import numpy as np
import pytest

import fusejit
from fusejit.runtime.fast_entry import fast_entry
from fusejit.runtime.program import _shared_scalars
from tests.oracle import assert_same


def entry_of(compiled):
    (tree,) = compiled._entries.values()
    (path,) = tree.paths
    return path


def replayed(compiled, *args):
    """The second call's result (the first traces), after checking it took the replay."""
    compiled(*args)
    hits = compiled.cache_info()["hits"]
    result = compiled(*args)
    assert compiled.cache_info()["hits"] == hits + 1
    return result


def test_every_output_leaf_kind_comes_back_as_eager_numpy_gives_it():
    def body(x, y):
        total = x.sum()
        return {"passed": x, "table": np.arange(3.0), "total": total, "mean": float(total) / x.size,
                "pair": (np.tanh(x) * y, (x * 2).argmax(axis=1)), "label": "ok", "n": 3}

    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    y = np.float32(0.5)
    compiled = fusejit.compile(body)
    result = replayed(compiled, x, y)
    assert entry_of(compiled).fast_run is not None
    assert_same(body(x, y), result)
    assert result["passed"] is x
    result["table"][0] = 99.0                 # a constant output is a fresh copy per call
    assert compiled(x, y)["table"][0] == 0.0


def test_a_returned_captured_array_is_the_array_itself():
    table = np.arange(3.0)
    compiled = fusejit.compile(lambda x: (x * 2, table))
    x = np.ones(3)
    for _ in range(3):
        doubled, same = compiled(x)
        assert same is table
        assert_same(x * 2, doubled)


def test_a_single_array_and_a_flat_tuple_of_arrays():
    x = np.linspace(-2, 2, 24).reshape(4, 6)
    for body in (lambda a: np.exp(a) + 1, lambda a: (np.exp(a), a - a.max(axis=0)),
                 lambda a: [a * 2]):
        compiled = fusejit.compile(body)
        assert_same(body(x), replayed(compiled, x))
        assert entry_of(compiled).fast_run is not None


def test_list_and_scalar_arguments_are_converted_as_on_the_general_path():
    def body(x, scale):
        return x * scale + 1

    compiled = fusejit.compile(body)
    x = np.ones((3, 4))
    assert_same(body(x, 2.0), replayed(compiled, x, 2.0))
    assert_same(body(x, 3.0), compiled(x, 3.0))  # a Python float is a traced weak scalar


def test_writes_back_to_arguments_replay_on_the_fast_path():
    def body(x):
        x[0] = np.exp(x[0])
        return x.sum()

    compiled = fusejit.compile(body)
    x = np.linspace(0, 1, 12).reshape(3, 4)
    eager, mine = x.copy(), x.copy()
    compiled(mine.copy())
    want, got = body(eager), compiled(mine)
    assert entry_of(compiled).fast_run is not None
    assert_same(want, got)
    np.testing.assert_allclose(mine, eager, rtol=1e-15)


def update(m, g, lr):
    m *= 0.9
    m += lr * g
    return m.sum()


def calls_through(path):
    """Counts the fast entry's calls and the general path's under it."""
    counts = {"fast": 0, "general": 0}
    general = path._run

    def counted(name, fn):
        def call(leaves):
            counts[name] += 1
            return fn(leaves)
        return call

    path.__dict__["fast_run"] = counted("fast", fast_entry(path, counted("general", general)))
    return counts


@pytest.mark.parametrize("case", ["fresh", "view", "read-only", "strided", "same"])
def test_the_fast_entry_hands_writes_it_cannot_vouch_for_to_the_general_path(case):
    # An argument that is a view, a read-only or non-contiguous written array, or one array
    # passed twice: the general path answers (NumPy's error, an eager call), with the same
    # results and the same writes as eager NumPy.
    rng = np.random.default_rng(1)
    m, g = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    compiled = fusejit.compile(update)
    compiled(m.copy(), g, 0.1)
    counts = calls_through(entry_of(compiled))
    base = m.copy()
    if case == "view":
        base = np.vstack([m, m])
    arrays = {"fresh": lambda b: b, "view": lambda b: b[4:], "read-only": lambda b: b,
              "strided": lambda b: np.asfortranarray(b), "same": lambda b: b}[case]
    mine, eager = arrays(base.copy()), arrays(base.copy())
    if case == "read-only":
        mine.flags.writeable = eager.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            update(eager, g, 0.1)
        with pytest.raises(ValueError, match="read-only"):
            compiled(mine, g, 0.1)
        np.testing.assert_array_equal(mine, m)
    elif case == "same":
        assert_same(update(eager, eager, 0.1), compiled(mine, mine, 0.1))
    else:
        assert_same(update(eager, g, 0.1), compiled(mine, g, 0.1))
    np.testing.assert_array_equal(mine, eager)
    if case == "fresh":
        assert counts == {"fast": 1, "general": 0}
    elif case != "same" and case != "strided":   # those two key apart: another entry
        assert counts == {"fast": 1, "general": 1}


def test_a_captured_array_is_read_again_and_checked_on_the_fast_path():
    # The captured array is re-read every call: a new one of the traced shape replays, one of
    # another shape traces again, a number runs eagerly; each call as eager NumPy's.
    scale = np.full(3, 2.0)

    def body(x):
        x += scale
        return x * scale

    compiled = fusejit.compile(body)
    compiled(np.zeros(3))
    assert entry_of(compiled).fast_run is not None
    for scale in (np.full(3, 5.0), np.arange(3.0), np.full(3, 1.0), 4.0):  # noqa: B007
        mine, eager = np.ones(3), np.ones(3)
        assert_same(body(eager), compiled(mine))
        np.testing.assert_array_equal(mine, eager)
    info = compiled.cache_info()
    assert info["traces"] == 1 and info["hits"] == 3 and info["eager_calls"] == 1


def test_a_guarded_branch_still_picks_its_path_on_replay():
    def body(x):
        return np.exp(x) if x.sum() > 0 else -x

    compiled = fusejit.compile(body)
    up, down = np.ones((2, 3)), -np.ones((2, 3))
    for x in (up, down, up, down):
        assert_same(body(x), compiled(x))
    (tree,) = compiled._entries.values()
    assert [path.hits for path in tree.paths] == [1, 1]  # a failed guard is not a hit


def test_guards_are_checked_in_the_generated_replay_where_their_value_is_computed():
    # The guard's value comes from a kernel and a reduction: the straight-line replay checks it
    # right after that step, and a failed check there moves to the other path.
    def body(x):
        y = np.tanh(x) * 2
        if y.sum() > 0:
            return y + 1
        return np.exp(y)

    compiled = fusejit.compile(body)
    up, down = np.linspace(0.1, 1, 6).reshape(2, 3), np.linspace(-1, -0.1, 6).reshape(2, 3)
    for x in (up, down, up, down, up, down):   # each path: traced, run once, replayed
        assert_same(body(x), compiled(x))
    (tree,) = compiled._entries.values()
    assert [path.hits for path in tree.paths] == [2, 2]
    assert all(path.program.__dict__.get("_fast") is not None for path in tree.paths)


def test_a_kernel_without_inputs_replays():
    # np.zeros_like(x) is a kernel with no inputs (its fast call took no leading arguments).
    def gradient_buffer(x, ids):
        g = np.zeros_like(x)
        np.add.at(g, ids, 1.0)
        return g, np.zeros_like(x)

    compiled = fusejit.compile(gradient_buffer)
    x, ids = np.ones((5, 3)), np.array([1, 1, 4])
    for _ in range(3):
        assert_same(gradient_buffer(x, ids), compiled(x, ids))
    info = compiled.cache_info()
    assert info["traces"] == 1 and info["hits"] == 2


def test_a_0d_value_several_kernels_take_is_padded_once_and_replays():
    # lr cast to float32 once (a 0-d kernel), taken by the update of each parameter
    def sgd(params, grads, lr):
        for name in params:
            params[name] -= lr * grads[name]

    rng = np.random.default_rng(2)
    shapes = {"w": (4, 3), "b": (3,)}
    grads = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    mine = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    eager = {k: v.copy() for k, v in mine.items()}
    compiled = fusejit.compile(sgd)
    for lr in (0.1, 0.5, 2.0):
        assert sgd(eager, grads, lr) is compiled(mine, grads, lr) is None
        for name in shapes:
            np.testing.assert_array_equal(mine[name], eager[name])
    program = entry_of(compiled).program
    assert len(set(_shared_scalars(program).values())) == 1
