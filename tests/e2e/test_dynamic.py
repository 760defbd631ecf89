"""Dynamic Python never gives a wrong answer: guards, trace trees, host ops, fallbacks."""
import copy
import dataclasses
import functools
import gc
import weakref

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

rng = np.random.default_rng(1)


def test_data_dependent_if_compiles_both_branches_and_no_third():
    @fusejit.compile
    def step(x):
        if x.sum() > 0:
            return np.tanh(x) * 2
        return np.exp(x) - 1

    for sign in (1, -1, 1, -1, -1, 1):
        x = sign * (np.abs(rng.standard_normal(6)) + 0.1)
        assert_same(step.fn(x), step(x))
    info = step.cache_info()
    assert (info["traces"], info["paths"], info["eager_calls"]) == (2, 2, 0)


def test_while_loop_on_data_is_bounded_by_max_traces_then_eager():
    @fusejit.compile(max_traces=3)
    def halve_until_small(x):
        while np.abs(x).max() > 1:
            x = x / 2
        return x

    for scale in (1, 3, 7, 15, 31, 63, 3, 31):
        x = scale * np.linspace(0.5, 1, 4)
        assert_same(halve_until_small.fn(x), halve_until_small(x))
    info = halve_until_small.cache_info()
    assert info["paths"] == 3 and info["eager_signatures"] == 1
    assert info["eager_calls"] >= 3


def test_policy_gradient_loop_falls_back_instead_of_building_1000_guards():
    @fusejit.compile
    def discounted(r, gamma):
        out, running = np.zeros_like(r), 0.0
        for t in reversed(range(r.shape[0])):
            if r[t] != 0:
                running = 0.0
            running = running * gamma + r[t]
            out[t] = running
        return out

    r = np.where(rng.random(1000) < 0.05, 1.0, 0.0)
    for _ in range(2):
        assert_same(discounted.fn(r, 0.99), discounted(r, 0.99))
    assert discounted.cache_info()["eager_signatures"] == 1
    assert "too many data-dependent branches" in str(discounted.explain(r, 0.99))


def test_linalg_solve_and_sort_in_the_middle_are_host_ops_with_kernels_around():
    @fusejit.compile
    def model(a, b):
        x = np.linalg.solve(a @ a.T + np.eye(a.shape[0]), np.tanh(b) * 2)
        return np.sort(x * x + 1)[::-1] - x.mean()

    a, b = rng.standard_normal((5, 5)), rng.standard_normal(5)
    for _ in range(3):
        assert_same(model.fn(a, b), model(a, b))
        a, b = rng.standard_normal((5, 5)), rng.standard_normal(5)
    explanation = model.explain(a, b)
    names = sorted(op for op in model.ir(a, b).split() if op.startswith("np."))
    assert names == ["np.linalg.solve", "np.sort"]
    assert len(explanation.kernels) >= 2 and model.cache_info()["traces"] == 1


@pytest.mark.parametrize("name", ["qr", "eigh", "svd", "slogdet"])
def test_linalg_named_tuple_results_keep_their_type_and_fields(name):
    @fusejit.compile
    def factor(a):
        result = getattr(np.linalg, name)(a @ a.T + 1)
        return result, result[0] * 2

    for _ in range(3):
        a = rng.standard_normal((4, 4))
        (got, doubled), (want, want_doubled) = factor(a), factor.fn(a)
        assert type(got) is type(want) and got._fields == want._fields
        for field in want._fields:
            assert_same(getattr(want, field), getattr(got, field))
        assert_same(want_doubled, doubled)
    info = factor.cache_info()
    assert (info["traces"], info["eager_calls"]) == (1, 0)


def test_boolean_mask_read_and_write():
    @fusejit.compile
    def masks(x, h):
        h = h.copy()
        h[h < 0] = 0
        return x[x > 0] * 2, h

    x, h = rng.standard_normal(8), rng.standard_normal((3, 4))
    assert_same(masks.fn(x, h), masks(x, h))
    assert_same(masks.fn(x, h), masks(x, h))          # same mask shape: replayed
    x2 = np.abs(x) + 1                                # every element kept: NumPy's shape,
    assert_same(masks.fn(x2, h), masks(x2, h))        # on the same path
    assert masks.cache_info()["traces"] == 1


def _reflect(x):
    x[x < -1] *= -1
    return x


def _local_copy(x):
    y = x.copy()
    y[y < 0] *= 2
    return y


def _increment_negative(x):
    x[x < 0] += 1
    return x


def _scale_rows(x):
    x[x[:, 0] > 0] *= 3.0
    return x


def _negate_masked(x):
    m = x < 0
    x[m] = -x[m]
    return x


def _sqrt_positive(x):
    x[x > 0] = np.sqrt(x[x > 0])     # two masks computed alike
    return x


def _take_masked(x):
    y = np.zeros_like(x)
    y[x > 1] = x[x > 1] * 2.0
    return y


def _masked_inputs():
    yield from (rng.standard_normal((3, 4)) * 2 for _ in range(4))
    yield np.full((3, 4), 5.0)      # mask all False (reflect), all True (scale_rows)
    yield np.full((3, 4), -5.0)     # mask all True (reflect)


@pytest.mark.parametrize("fn, traces", [(_reflect, 1), (_local_copy, 1),
                                        (_increment_negative, 1), (_scale_rows, 1),
                                        (_negate_masked, 1), (_sqrt_positive, 1),
                                        (_take_masked, 1)])
def test_masked_update_compiles_and_mutates_like_numpy(fn, traces):
    """``x[m] op= v`` and ``x[m] = f(x[m])`` are a ``where`` over x with no shape guard (one
    path for every count of selected elements)."""
    compiled = fusejit.compile(fn)
    for x in _masked_inputs():
        eager, mine = x.copy(), x.copy()
        assert_same(fn(eager), compiled(mine))
        assert_same(eager, mine)
    info = compiled.cache_info()
    assert info["eager_calls"] == 0
    if traces is not None:
        assert info["traces"] == traces


def test_masked_update_keeps_the_guard_while_the_read_is_still_used():
    @fusejit.compile
    def keep(x):
        v = x[x < 0]
        v *= 2
        x[x < 0] = v
        return x, v.sum()

    for x in _masked_inputs():
        eager, mine = x.copy(), x.copy()
        assert_same(keep.fn(eager), keep(mine))
        assert_same(eager, mine)
    assert keep.cache_info()["eager_calls"] == 0


def _named_read(x):
    t = x[x < 0]
    x[x < 0] = -t
    return x, len(t)


def _named_value(x):
    m = x < 0
    v = x[m] * 3.0
    x[m] = v
    return x, v.shape[0]


def _read_again(x):
    m = x < 0
    x[m] = -x[m]
    return x, x[m].sum()


def _scaled_by_count(a):
    return a * a.shape[0]


def _count_in_a_helper(x):
    x[x < 0] = _scaled_by_count(x[x < 0])
    return x


def _count_in_an_earlier_statement(x):
    m = x < 0
    selected = [x[m]]
    scale = 2.0 if selected[0].size > 1 else 10.0
    x[m] = selected.pop() * scale
    return x


def _branch_on_empty(x):
    x[x < 0] = (lambda a: a if len(a) == 0 else a * 2)(x[x < 0])
    return x


def _zeros_like_the_selection(x):
    made = []
    x[x < 0] = (lambda a: (made.append(np.zeros_like(a)), -a)[1])(x[x < 0])
    return x, made[0]


def _bytes_of_the_selection(x):
    x[x < 0] = (lambda a: a * a.nbytes)(x[x < 0])
    return x


def _text_of_the_selection(x):
    x[x < 0] = (lambda a: a + len(str(a)))(x[x < 0])
    return x


def _deep_copy_of_the_selection(x):
    x[x < 0] = (lambda a: a + len(copy.deepcopy(a)))(x[x < 0])
    return x


@pytest.mark.parametrize("fn", [_named_read, _named_value, _count_in_a_helper,
                                _count_in_an_earlier_statement, _branch_on_empty,
                                _bytes_of_the_selection, _text_of_the_selection,
                                _deep_copy_of_the_selection])
def test_a_masked_store_whose_count_python_may_still_see_keeps_its_guard(fn):
    compiled = fusejit.compile(fn)
    for x in _masked_inputs():
        eager, mine = x.copy(), x.copy()
        assert_same(fn(eager), compiled(mine))
        assert_same(eager, mine)
    assert compiled.cache_info()["traces"] > 1


@pytest.mark.parametrize("fn", [_read_again, _zeros_like_the_selection])
def test_a_selection_numpy_alone_reads_again_takes_one_path(fn):
    compiled = fusejit.compile(fn)     # x[m].sum(), np.zeros_like(x[m]): NumPy's at replay
    for x in _masked_inputs():
        eager, mine = x.copy(), x.copy()
        assert_same(fn(eager), compiled(mine))
        assert_same(eager, mine)
    assert compiled.cache_info()["traces"] == 1


def test_a_masked_store_of_another_arrays_selection_keeps_numpys_broadcasting():
    def rows_from(x, y):      # y[m] has shape (k,), broadcast into each selected row of x
        m = y > 0
        x[m] = y[m] * 2
        return x

    compiled = fusejit.compile(rows_from)
    for y in ([1.0, 2.0, 3.0], [1.0, -1.0, -1.0], [1.0, 2.0, -1.0], [-1.0, -2.0, -3.0]):
        outcomes = []
        for run in (rows_from, compiled):
            try:
                outcomes.append(run(np.zeros((3, 3)), np.array(y)))
            except ValueError as exc:     # k = 2 rows of 3 from 2 values: NumPy's error
                outcomes.append(type(exc))
        if isinstance(outcomes[0], type):
            assert outcomes[1] is outcomes[0]
        else:
            assert_same(*outcomes)


def test_a_body_that_raises_for_some_inputs_raises_like_numpy_and_keeps_working():
    @fusejit.compile
    def checked_inverse(a):
        return np.linalg.inv(a) * 2

    good = np.eye(3) * 2
    assert_same(checked_inverse.fn(good), checked_inverse(good))
    with pytest.raises(np.linalg.LinAlgError):
        checked_inverse(np.zeros((3, 3)))
    assert_same(checked_inverse.fn(good * 3), checked_inverse(good * 3))
    assert checked_inverse.cache_info()["eager_signatures"] == 0


def test_training_step_returning_float_loss_compiles_to_one_trace_without_guards():
    @fusejit.compile
    def step(w, x, y, lr):
        pred = x @ w
        grad = x.T @ (pred - y) / len(y)
        w -= lr * grad
        return float(((pred - y) ** 2).mean())

    w, x, y = np.zeros(3), rng.standard_normal((16, 3)), rng.standard_normal(16)
    w_eager = w.copy()
    for _ in range(4):
        expected = step.fn(w_eager, x, y, 0.1)
        got = step(w, x, y, 0.1)
        assert type(got) is float and got == pytest.approx(expected, rel=1e-12)
        assert_same(w_eager, w)
    assert step.cache_info()["traces"] == 1 and step.cache_info()["paths"] == 1
    assert "0 guards" in str(step.explain(w, x, y, 0.1))


def test_attribute_rebinding_on_self_is_replayed():
    class Model:
        def __init__(self):
            self.w = np.ones(3)

        @fusejit.compile
        def sgd(self, g, lr):
            self.w = self.w - lr * g
            return self.w.sum()

    eager, compiled = Model(), Model()
    g = np.arange(3.0)
    for _ in range(3):
        expected = Model.sgd.fn(eager, g, 0.5)
        assert_same(expected, compiled.sgd(g, 0.5))
        assert_same(eager.w, compiled.w)


class Model:
    def __init__(self):
        self.w, self.b = np.ones(3), np.zeros(3)


class Freezable(Model):
    """A model whose ``w`` refuses assignment once frozen (its class's own ``__setattr__``)."""

    frozen = False

    def __setattr__(self, name, value):
        if name == "w" and self.frozen:
            raise AttributeError("w is frozen")
        object.__setattr__(self, name, value)


def momentum_step(model, m, g):
    m *= 0.5                   # the caller's array, updated in place before the rebinding
    m += g
    model.b = model.b + 1
    model.w = model.w - m      # raises once the model is frozen


def test_an_attribute_refused_on_replay_leaves_the_state_eager_numpy_leaves():
    # The replay updates m and rebinds b before w's __setattr__ raises: it is undone, and the
    # call traces again, which raises where the body does. Before, m took the update twice
    # and b held a Tracer.
    states = []
    for fn in (momentum_step, fusejit.compile(momentum_step)):
        model, m, g, seen = Freezable(), np.ones(3), np.arange(3.0), []
        for call in range(4):
            model.frozen = call >= 2
            try:
                seen.append(fn(model, m, g))
            except AttributeError as exc:
                seen.append(str(exc))
            seen.append((m.copy(), model.w, model.b))
        states.append(seen)
    for expected, got in zip(*states, strict=True):
        if isinstance(expected, tuple):
            for e, g in zip(expected, got, strict=True):
                assert_same(e, g)
        else:
            assert expected == got
    assert states[0][4] == "w is frozen"


def test_an_attribute_set_through_the_class_s_own_code_runs_eagerly():
    # Replay would not run Freezable.__setattr__ (nor a property setter): it could neither
    # refuse the rebinding nor apply a non-idempotent one (``v * 2``) exactly once.
    compiled = fusejit.compile(momentum_step)
    args = Freezable(), np.ones(3), np.arange(3.0)
    compiled(*args)
    assert compiled.cache_info()["eager_signatures"] == 1
    assert "set through Freezable's own code" in str(compiled.explain(*args))


class Layer:
    def __init__(self, value):
        self.w = np.full(3, value)


class Net:
    def __init__(self):
        self.layers = [Layer(0.0), Layer(1.0)]
        self.head = {"out": Layer(2.0)}
        self.inner = Model()


def sgd_nested(net, g):
    for layer in net.layers:
        layer.w = layer.w - g
    net.head["out"].w = net.head["out"].w * 0.5
    net.inner.b = net.inner.b + g
    return g.sum()


def _net_state(net):
    return [layer.w for layer in net.layers] + [net.head["out"].w, net.inner.b]


def test_attributes_rebound_on_objects_held_by_an_argument_are_replayed():
    # Before, the objects below the argument kept a Tracer and replays lost every update.
    eager, got = Net(), Net()
    compiled = fusejit.compile(sgd_nested)
    for call in range(4):
        g = np.full(3, call + 1.0)
        assert_same(sgd_nested(eager, g), compiled(got, g))
        for e, c in zip(_net_state(eager), _net_state(got), strict=True):
            assert_same(e, c)
    assert compiled.cache_info()["hits"] == 3


class Slotted:
    __slots__ = ("w",)

    def __init__(self):
        self.w = np.ones(3)


class Base:
    scale = np.ones(3)


def _rebind_slot(s, g):
    s.w = s.w + g
    return s.w * 2


def _rebind_class_attribute(m, g):
    type(m).scale = type(m).scale + g
    return type(m).scale * 1


def _swap_buffers(b, g):
    b.w, b.b = b.b, b.w        # rebound to arrays the body did not compute
    b.w += g
    return b.w.sum()


def _grow_history(m, g):
    m.history = m.history + [g.sum()]
    return g * 1


def _delete(m, g):
    scratch = m.b
    del m.b                    # the caller sets it again before each call
    return scratch * g


def _too_deep(net, g):
    net.inner.w = net.inner.w - g       # fine: two steps
    deepest = net.layers[0]
    while hasattr(deepest, "inner"):
        deepest = deepest.inner
    deepest.w = deepest.w - g           # 14 steps: read as a plain array
    return g * 1


def _new_object(m, g):
    m.inner = Model()
    m.inner.w = m.inner.w * g           # a traced value in an object the body created
    return m.inner.w.sum()


def _with_history(model):
    model.history = []
    return model


@pytest.mark.parametrize("body, make, reason", [
    (_rebind_slot, Slotted, "(a slot) rebound"),
    (_rebind_class_attribute, lambda: type("Scaled", (Base,), {})(), "(a class attribute)"),
    (_swap_buffers, Model, "rebound to a value the replay cannot rebuild"),
    (_grow_history, lambda: _with_history(Model()), None),
    (_delete, Model, "deleted"),
    (_too_deep, lambda: _with_net_layers_inner(), "more than 12 steps"),
    (_new_object, Model, "rebound to an object holding traced values"),
], ids=["slot", "class-attribute", "swap", "growing-list", "del", "too-deep", "new-object"])
def test_object_changes_a_replay_cannot_make_run_eagerly(body, make, reason):
    eager, got = make(), make()
    compiled = fusejit.compile(body)
    for call in range(4):
        g = np.full(3, call + 1.0)
        if body is _delete:
            eager.b, got.b = np.arange(3.0), np.arange(3.0)
        assert_same(body(eager, g), compiled(got, g))
        for name in ("w", "b", "history"):
            if hasattr(eager, name):
                assert_same(getattr(eager, name), getattr(got, name))
        assert not hasattr(got, "b") or type(got.b) is np.ndarray
    if type(eager).__name__ == "Scaled":
        assert_same(type(eager).scale, type(got).scale)
    if reason is not None:
        assert compiled.cache_info()["eager_signatures"] == 1
        assert reason in str(compiled.explain(got, g))


def _with_net_layers_inner(depth: int = 11):
    """``net.layers[0]``, then ``depth`` objects down its ``inner``."""
    net = Model()
    net.inner, net.layers = Model(), [Model()]
    node = net.layers[0]
    for _ in range(depth):
        node.inner = Model()
        node = node.inner
    return net


def test_a_body_that_raises_leaves_no_tracer_on_the_objects_it_changed():
    def failing(model, x):
        model.b = x + 1
        model.history = [x * 2]
        raise ValueError("diverged")

    model = Model()
    with pytest.raises(ValueError, match="diverged"):
        fusejit.compile(failing)(model, np.ones(3))
    assert_same(np.full(3, 2.0), model.b)
    assert_same(np.full(3, 2.0), model.history[0])


def test_guards_on_nan_values_hold_for_the_same_nan():
    # A diverged loss: a guard that observed NaN holds when NaN comes again, as a float and
    # inside a tolist() (NaN != NaN would trace again on every call).
    def scaled(x):
        if float(x.min()) > 0:
            return x * 2
        return x * len(x.tolist()) + x.tolist()[0][0]

    compiled = fusejit.compile(scaled)
    x = np.array([[np.nan, 1.0]])
    for _ in range(3):
        assert_same(scaled(x), compiled(x))
    info = compiled.cache_info()
    assert info["traces"] == 1 and info["hits"] == 2


class Params:
    """Attributes kept in a dict, with a ``__getattr__`` that raises KeyError for others."""

    def __init__(self):
        object.__setattr__(self, "_p", {"w": np.ones(3)})

    def __getattr__(self, name):
        return self._p[name]


def test_an_argument_whose_getattr_raises_key_error_is_not_taken_for_a_device_array():
    # Before, looking for __cuda_array_interface__ raised the KeyError out of the call.
    def shifted(p, x):
        return p.w + x

    compiled = fusejit.compile(shifted)
    for _ in range(2):
        assert_same(shifted(Params(), np.arange(3.0)), compiled(Params(), np.arange(3.0)))


def test_a_buffer_made_once_on_an_object_does_not_make_the_trace_eager():
    # The branch that makes it is not taken again: the next call traces again, with the
    # buffer there, and compiles (tracer/pystate.py).
    class Lazy:
        def __init__(self):
            self.buf, self.w = None, np.ones(3)

        @fusejit.compile
        def __call__(self, x):
            if self.buf is None:
                self.buf = np.zeros(3)
            return x * self.w + self.buf

    model, x = Lazy(), np.arange(3.0)
    for _ in range(3):
        assert_same(x * 1.0, model(x))
    assert type(model.buf) is np.ndarray
    info = Lazy.__call__.cache_info()
    assert (info["traces"], info["hits"], info["eager_signatures"]) == (2, 1, 0)


# -- plain Python state the body changes -------------------------------------------------------
STEP = 0
STATE = {"step": 0}


class Counted:
    total = 0

    def __init__(self):
        self.t, self.cfg, self.seen = 0, {"t": 0}, [0]


def _counter_bodies():
    count = 0

    def on_self(x, o):
        o.t += 1
        return x * 0.9 ** o.t

    def in_dict_attribute(x, o):
        o.cfg["t"] += 1
        return x * 0.9 ** o.cfg["t"]

    def in_list_attribute(x, o):
        o.seen[0] += 1
        return x * 0.9 ** o.seen[0]

    def global_name(x, o):
        global STEP
        STEP += 1
        return x * 0.9 ** STEP

    def global_dict(x, o):
        STATE["step"] += 1
        return x * 0.9 ** STATE["step"]

    def closure(x, o):
        nonlocal count
        count += 1
        return x * 0.9 ** count

    def class_attribute(x, o):
        type(o).total += 1
        return x * 0.9 ** type(o).total

    return [on_self, in_dict_attribute, in_list_attribute, global_name, global_dict, closure,
            class_attribute]


def _state_of(o, body):
    cell = body.__closure__[0].cell_contents if body.__closure__ else None
    return (o.t, o.cfg["t"], o.seen[0], STEP, STATE["step"], Counted.total, cell)


@pytest.mark.parametrize("body", _counter_bodies(), ids=lambda body: body.__name__)
def test_a_python_counter_the_body_changes_is_never_frozen(body):
    # ``self.t += 1`` with ``1 - 0.9 ** self.t``: replays kept the trace's t, so from the second
    # call on Adam's bias correction was the first step's, silently.
    global STEP
    compiled = fusejit.compile(body)
    o, wants = Counted(), []
    for _ in range(4):
        before = _state_of(o, body)
        wants.append(body(np.arange(3.0), o))
        after = _state_of(o, body)
        STEP, STATE["step"], Counted.total = before[3], before[4], before[5]
        o.t, o.cfg["t"], o.seen[0] = before[:3]
        if body.__closure__:
            body.__closure__[0].cell_contents = before[6]
        assert_same(wants[-1], compiled(np.arange(3.0), o))
        assert _state_of(o, body) == after
    info = compiled.cache_info()
    assert (info["traces"], info["eager_signatures"]) == (2, 1)
    assert "changed from 1 to 2 in the body" in str(compiled.explain(np.arange(3.0), o))


def test_a_flag_the_body_sets_once_compiles_at_the_second_call():
    class Lazy:
        def __init__(self):
            self.built, self.mode, self.w = False, "train", np.ones(3)

        def __call__(self, x):
            if not self.built:
                self.w *= 2          # runs once, eagerly; a replay of this path would again
                self.built, self.mode = True, "eval"
            return x * self.w

    eager, model = Lazy(), Lazy()
    compiled = fusejit.compile(model.__call__)
    for _ in range(4):
        assert_same(eager(np.arange(3.0)), compiled(np.arange(3.0)))
        assert_same(eager.w, model.w)
    assert (model.built, model.mode) == (True, "eval")
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_signatures"]) == (2, 2, 0)


def test_a_counter_in_a_0d_array_compiles():
    class Adam:
        def __init__(self):
            self.t, self.m = np.zeros((), np.int64), np.zeros(3, np.float32)

        def step(self, w, g):
            self.t += 1
            self.m *= 0.9
            self.m += 0.1 * g
            w -= 0.01 * self.m / (1 - 0.9 ** self.t)

    eager, opt = Adam(), Adam()
    w_eager, w = np.ones(3, np.float32), np.ones(3, np.float32)
    step = fusejit.compile(opt.step)
    for i in range(4):
        g = np.array([1, -2, 0.5], np.float32) * (i + 1)
        eager.step(w_eager, g)
        step(w, g)
        assert_same(w_eager, w)
        assert_same(eager.t, opt.t)
    info = step.cache_info()
    assert (info["traces"], info["hits"], info["eager_signatures"]) == (1, 3, 0)


class Tracked:
    def __init__(self):
        self.buf, self.last_batch, self.sign, self.log = None, None, None, []
        self.cfg = {"inner": {"t": 0}, "queue": [4.0, 3.0, 2.0, 1.0]}
        self.pos = (0, 0)


def _helper_counted(x):
    _helper_counted.calls += 1
    return x * 0.9 ** _helper_counted.calls


_helper_counted.calls = 0


def _nested_counter(x, o):
    o.cfg["inner"]["t"] += 1
    return x * 0.9 ** o.cfg["inner"]["t"]


def _moved_tuple(x, o):
    o.pos = (o.pos[0] + 1, 0)
    return x * 0.9 ** o.pos[0]


def _accumulated_buffer(x, o):
    if o.buf is None:        # taken once eagerly; a replay of that path made it every call
        o.buf = np.zeros(3)
    o.buf += x
    return o.buf * 2


@pytest.mark.parametrize("body", [
    _nested_counter, lambda x, o: x * o.cfg["queue"].pop(), _moved_tuple, _accumulated_buffer,
    lambda x, o: _helper_counted(x),
], ids=["nested-dict-item", "list-pop", "tuple", "buffer-made-once", "function-attribute"])
def test_other_python_state_the_body_changes(body):
    compiled, eager_state, state = fusejit.compile(body), Tracked(), Tracked()
    for step in range(4):
        before = _helper_counted.calls
        want = body(np.full(3, step + 1.0), eager_state)
        want_calls, _helper_counted.calls = _helper_counted.calls, before
        assert_same(want, compiled(np.full(3, step + 1.0), state))
        assert repr(vars(state)) == repr(vars(eager_state))
        assert _helper_counted.calls == want_calls


def test_state_set_under_another_signature_makes_that_call_eager():
    # The compiled trace of the batch of 4 left last_batch == 4; a call of another signature
    # set it to 2, and a replay would not set it back.
    def remember(x, o):
        o.last_batch = x.shape[0]
        o.sign = "pos" if x.sum() > 0 else "neg"
        return x * 2

    compiled, eager_state, state = fusejit.compile(remember), Tracked(), Tracked()
    for n, sign in ((4, 1), (4, 1), (2, 1), (4, 1), (4, -1), (4, 1), (4, 1)):
        x = sign * np.ones(n)
        assert_same(remember(x, eager_state), compiled(x, state))
        assert (state.last_batch, state.sign) == (eager_state.last_batch, eager_state.sign)


def test_explain_before_the_first_call_leaves_a_flag_set_once_compiled():
    class Lazy:
        def __init__(self):
            self.built = False

        def __call__(self, x):
            self.built = True
            return x * 2

    compiled, model = fusejit.compile(Lazy.__call__), Lazy()
    assert "the next call traces again" in str(compiled.explain(model, np.ones(3)))
    for _ in range(4):
        assert_same(np.full(3, 2.0), compiled(model, np.ones(3)))
    info = compiled.cache_info()
    assert (info["hits"], info["eager_calls"]) == (2, 0)


def test_a_structured_scalar_rebound_is_not_compared_as_a_number():
    # changed_plain compared NumPy structured scalars of two dtypes: TypeError inside fusejit.
    class Holder:
        rec = np.zeros(1, dtype=[("a", "i4")])[0]

    def rebind(x, h):
        h.rec = np.zeros(1, dtype=[("b", "f8")])[0]
        return x * 2

    compiled = fusejit.compile(rebind)
    for _ in range(3):
        assert_same(np.full(3, 2.0), compiled(np.ones(3), Holder()))


READY = False


class Built:
    def __init__(self):
        self.built = False


class Warm:
    ready = False

    def __init__(self):
        self.warm, self.opt = False, Built()


def test_a_path_traced_before_the_state_changed_is_not_replayed():
    # The negative path compiled while warm was False; after the positive path set it, a
    # replay of the negative path added 0 where NumPy adds 1.
    def body(m, x):
        if x.sum() > 0:
            if not m.warm:
                m.warm = True
            return x * 2
        return x + (1.0 if m.warm else 0.0)

    compiled, eager_state, state = fusejit.compile(body), Warm(), Warm()
    for sign in (-1, 1, 1, -1, -1, 1):
        x = sign * np.ones(4)
        assert_same(body(eager_state, x), compiled(state, x))


def test_state_is_read_from_the_call_s_own_objects():
    # The watch read the object of the call that compiled: a new optimizer on the same model
    # replayed the path of a built one.
    def build_once(model, x):
        if not model.opt.built:
            model.opt.built = True
            return x * 0
        return x * 2

    compiled, model = fusejit.compile(build_once), Warm()
    for _ in range(3):
        compiled(model, np.ones(2))
    old = weakref.ref(model.opt)
    model.opt = Built()
    assert_same(np.zeros(2), compiled(model, np.ones(2)))
    assert model.opt.built
    gc.collect()
    assert old() is None


def test_global_and_class_state_is_watched_by_every_signature():
    def body(x):
        global READY
        if not READY or not Warm.ready:
            READY, Warm.ready = True, True
            return x * 0
        return x * 2

    global READY
    compiled = fusejit.compile(body)
    assert "traces again" in str(compiled.explain(np.ones(5)))   # explain's trace sets them
    for n in (2, 2, 3, 3, 2):
        for reset in (False, True):
            if reset:
                READY = False
            want_ready, want = READY, body(np.ones(n))
            READY, Warm.ready = want_ready, True
            assert_same(want, compiled(np.ones(n)))
        Warm.ready = False
        assert_same(np.zeros(n), compiled(np.ones(n)))


def test_state_on_a_static_argument_is_not_frozen():
    class Opt:
        def __init__(self):
            self.t = 0

    def step(x, opt):
        opt.t += 1
        return x * 0.5 ** opt.t

    compiled, eager, opt = fusejit.compile(step, static_argnames=("opt",)), Opt(), Opt()
    for _ in range(4):
        assert_same(step(np.ones(2), eager), compiled(np.ones(2), opt))
        assert opt.t == eager.t


def test_a_counter_on_arguments_dropped_keeps_nothing_alive():
    @dataclasses.dataclass
    class Opt:           # unhashable: keyed by identity, pinned by a weak reference
        t: int = 0

    compiled, refs = fusejit.compile(lambda opt, x: x * 0.9 ** _bumped(opt)), []
    for _ in range(3):
        opt = Opt()
        for _ in range(3):
            compiled(opt, np.ones(3))
        refs.append(weakref.ref(opt))
        del opt
    gc.collect()
    assert not any(ref() for ref in refs)
    assert compiled.cache_info()["signatures"] == 0


def _bumped(opt):
    opt.t += 1
    return opt.t


class IdentityKeyed:
    def __init__(self):
        self.w = np.arange(3.0)

    @fusejit.compile
    def forward(self, x):
        return x * self.w


def test_objects_equal_only_to_themselves_are_not_kept_alive_by_the_cache():
    scale = fusejit.compile(lambda layer, x: x * layer.w)
    refs = []
    for _ in range(3):
        layer = IdentityKeyed()   # hashable by identity: keyed by it, as long as it lives
        assert_same(np.ones(3) * layer.w, layer.forward(np.ones(3)))
        assert_same(np.ones(3) * layer.w, scale(layer, np.ones(3)))
        refs.append(weakref.ref(layer))
        del layer
    gc.collect()
    assert not any(ref() for ref in refs)
    assert scale.cache_info()["signatures"] == 0


class Ready:
    def __init__(self):
        self.ready, self.t = False, 0


def test_state_one_signature_set_is_checked_by_signatures_compiled_before():
    # The shape-(3,) path compiled while ready was False; a call of shape (2,) set it.
    def body(m, x):
        if x.sum() > 0 and not m.ready:
            m.ready = True
        return x + (1.0 if m.ready else 0.0)

    compiled, eager_state, state = fusejit.compile(body), Ready(), Ready()
    for x in (-np.ones(3), -np.ones(3), np.ones(2), np.ones(2), -np.ones(3), -np.ones(3)):
        assert_same(body(eager_state, x), compiled(state, x))


class Momentum:
    def __init__(self):
        self.m, self.t = np.zeros(3), 0

    def step(self, g, scale):
        self.m *= 0.9
        self.m += g * scale
        return self.m.sum()

    def counted(self, g, scale):
        self.t += 1
        return g * scale * 0.5 ** self.t


def test_a_bound_method_with_static_arguments_compiles():
    # The partial binding the static arguments hid the method's object: its arrays were
    # read as plain ones (eager), and its Python state was not watched (frozen t).
    eager, model = Momentum(), Momentum()
    compiled = fusejit.compile(model.step, static_argnames=("scale",))
    counted = fusejit.compile(model.counted, static_argnames=("scale",))
    for _ in range(4):
        assert_same(eager.step(np.ones(3), 2), compiled(np.ones(3), 2))
        assert_same(eager.m, model.m)
        assert_same(eager.counted(np.ones(3), 2), counted(np.ones(3), 2))
        assert model.t == eager.t
    assert compiled.cache_info()["hits"] == 3


def test_a_static_argument_equal_to_another_is_not_read_for_it():
    class Opt:
        def __init__(self):
            self.built = False

        def __eq__(self, other):
            return isinstance(other, Opt)

        def __hash__(self):
            return 0

    def build_once(x, opt):
        if not opt.built:
            opt.built = True
            return x * 0
        return x * 2

    compiled, first = fusejit.compile(build_once, static_argnames=("opt",)), Opt()
    for _ in range(3):
        compiled(np.ones(3), opt=first)
    second = Opt()
    assert_same(np.zeros(3), compiled(np.ones(3), opt=second))
    assert second.built


STATE_OF_GLOBAL = {"built": False}


def test_state_in_a_global_container_is_read_through_the_global():
    def build_once(x):
        if not STATE_OF_GLOBAL["built"]:
            STATE_OF_GLOBAL["built"] = True
            return x * 0
        return x * 2

    global STATE_OF_GLOBAL
    compiled = fusejit.compile(build_once)
    for _ in range(3):
        compiled(np.ones(2))
    STATE_OF_GLOBAL = {"built": False}       # a new dict, not the one traced
    assert_same(np.zeros(2), compiled(np.ones(2)))
    assert STATE_OF_GLOBAL["built"]


def test_two_classes_of_one_name_are_two_places():
    def make():
        class Layer:
            ready = False
        return Layer

    def body(m, x):
        if x.sum() > 0 and not type(m).ready:
            type(m).ready = True
        return x + (1.0 if type(m).ready else 0.0)

    compiled, first, second = fusejit.compile(body), make(), make()
    compiled(first(), np.ones(2))
    later = second()
    compiled(later, -np.ones(2))
    compiled(later, -np.ones(2))
    compiled(second(), np.ones(2))
    assert_same(np.zeros(2), compiled(later, -np.ones(2)))


def test_state_below_an_argument_is_found_in_every_pytree_layout():
    # The watch read leaf 2 in every signature: with three arrays before the model that is
    # an array, so the 3-array signature never saw scale move (and a 1-array call crashed).
    def body(xs, m):
        out = sum(xs) * m.scale
        if len(xs) == 2:
            m.scale = m.scale + 1
        return out

    compiled, eager_state, state, a = fusejit.compile(body), Ready(), Ready(), np.ones(2)
    eager_state.scale = state.scale = 1
    for xs in ([a, a], [a, a], [a, a, a], [a, a, a], [a, a], [a, a, a], [a], [a, a, a]):
        assert_same(body(xs, eager_state), compiled(xs, state))
        assert state.scale == eager_state.scale


def test_state_of_a_partial_of_a_bound_method_is_watched():
    class Model:
        def __init__(self):
            self.scale = 1

        def forward(self, x, k):
            out = x * self.scale * k
            if x.shape[0] == 2:
                self.scale = self.scale + 1
            return out

    eager, model = Model(), Model()
    compiled = fusejit.compile(functools.partial(model.forward, k=1.0))
    for n in (2, 2, 3, 3, 2, 3, 3):
        assert_same(eager.forward(np.ones(n), 1.0), compiled(np.ones(n)))
        assert model.scale == eager.scale


def test_an_array_set_back_to_none_is_state():
    class Pending:
        def __init__(self):
            self.pending = None

    def body(m, x):
        if m.pending is not None:
            x = x + m.pending
            m.pending = None
        return x * 2

    compiled, eager_state, state = fusejit.compile(body), Pending(), Pending()
    for i in range(9):
        if i % 3 == 0:
            eager_state.pending, state.pending = np.full(2, float(i)), np.full(2, float(i))
        assert_same(body(eager_state, np.ones(2)), compiled(state, np.ones(2)))
        assert (state.pending is None) == (eager_state.pending is None)


class LazyDense:
    def __init__(self, n):
        self.n, self.w, self.built = n, None, False

    def __call__(self, x):
        if not self.built:
            self.w, self.built = np.full((x.shape[1], self.n), 0.1), True
        return np.tanh(x @ self.w)


class LazyAdam:
    def __init__(self):
        self.m, self.t = None, np.zeros((), np.int64)

    def step(self, w, g):
        if self.m is None:
            self.m = np.zeros_like(w)
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * g
        w -= 0.01 * self.m / (1 - 0.9 ** self.t)


def _train(layers, opt, x):
    for layer in layers:
        x = layer(x)
    loss = (x ** 2).mean()
    opt.step(layers[0].w, np.ones_like(layers[0].w) * loss)
    return loss


def test_a_model_built_on_its_first_call_compiles_from_the_second():
    # The build path also made a fallback of its own (NumPy code after a traced write into
    # the weights it had just made): that outranked the state change, and the first shape
    # ran eagerly for good.
    compiled = fusejit.compile(_train)
    runs = []
    for train in (_train, compiled):
        layers, opt, losses = [LazyDense(4), LazyDense(3)], LazyAdam(), []
        for n in (2, 2, 3, 3, 2, 3):
            losses.append(train(layers, opt, np.linspace(0, 1, n * 5).reshape(n, 5)))
        runs.append((losses, layers[0].w, opt.t))
    for want, got in zip(*runs, strict=True):
        assert_same(np.asarray(want), np.asarray(got))
    assert compiled.cache_info()["eager_calls"] == 0
