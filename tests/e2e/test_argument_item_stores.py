"""New arrays the body stores into its arguments' dicts and lists (``vel[k] = mu * vel[k] -
lr * g[k]``): replayed into the caller's containers after each call, as NumPy leaves them;
what a replay cannot store again runs eagerly."""
import copy
import threading
import time
from collections import namedtuple

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


def sgd_momentum(params, grads, vel, lr=0.1, mu=0.9):
    for k in params:
        vel[k] = mu * vel[k] - lr * grads[k]
        params[k] += vel[k]
    return (vel["w"] ** 2).sum()


def sgd_state(seed):
    rng = np.random.default_rng(seed)
    params = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}
    grads = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}
    return params, grads, {"w": np.zeros((4, 3)), "b": np.zeros(3)}


def counts(compiled) -> tuple:
    info = compiled.cache_info()
    return info["traces"], info["hits"], info["eager_calls"]


def test_momentum_stored_into_a_dict_argument_replays_step_after_step():
    compiled = fusejit.compile(sgd_momentum)
    params, grads, vel = sgd_state(0)
    want = copy.deepcopy((params, grads, vel))
    velocity_dict, first_velocity, first_value = vel, None, None
    for step in range(4):
        assert_same(sgd_momentum(*want), compiled(params, grads, vel))
        assert_same(want, (params, grads, vel))
        if step == 0:
            first_velocity, first_value = vel["w"], vel["w"].copy()
    assert vel is velocity_dict
    # each call stored a new array, which no later call wrote over (NumPy's own behaviour)
    assert vel["w"] is not first_velocity
    np.testing.assert_array_equal(first_velocity, first_value)
    assert counts(compiled) == (1, 3, 0)


def cs231n_sgd_momentum(w, dw, config):
    v = config["momentum"] * config["velocity"] - config["learning_rate"] * dw
    next_w = w + v
    config["velocity"] = v
    return next_w, config


def test_a_returned_config_dict_is_the_callers_with_its_new_velocity():
    compiled = fusejit.compile(cs231n_sgd_momentum)
    config = {"learning_rate": 1e-2, "momentum": 0.9, "velocity": np.zeros(5)}
    want_config, w, want_w = copy.deepcopy(config), np.ones(5), np.ones(5)
    for step in range(3):
        dw = np.linspace(-1, 1, 5) * (step + 1)
        want_w, _ = cs231n_sgd_momentum(want_w, dw, want_config)
        w, returned = compiled(w, dw, config)
        assert returned is config
        assert_same((want_w, want_config), (w, config))
    assert counts(compiled) == (1, 2, 0)


def rnn_layers(xs, states, *, opt):
    for i, x in enumerate(xs):
        states[i] = np.tanh(x + states[i])            # a list argument
    opt["m"]["w"] = 0.9 * opt["m"]["w"] + states[-1]  # a dict in a keyword argument's dict
    return states[0]


def test_lists_and_nested_dicts_of_keyword_arguments_replay():
    compiled = fusejit.compile(rnn_layers)
    xs = [np.linspace(-1, 1, 3), np.linspace(0, 2, 3)]
    states, opt = [np.zeros(3), np.zeros(3)], {"m": {"w": np.zeros(3)}}
    want_states, want_opt = copy.deepcopy((states, opt))
    inner = opt["m"]
    for _ in range(3):
        want = rnn_layers(xs, want_states, opt=want_opt)
        got = compiled(xs, states, opt=opt)
        assert got is states[0]   # the returned array is the one stored, as eagerly
        assert_same((want, want_states, want_opt), (got, states, opt))
    assert opt["m"] is inner
    assert counts(compiled) == (1, 2, 0)


def keep(x, d):
    d["last"] = x               # the argument itself
    d["t"] = x.T                # a view of it
    d["s"] = (x * x).sum()      # a NumPy scalar
    return d["t"] + 1


def test_stored_arguments_views_and_scalars_are_what_numpy_stores():
    compiled = fusejit.compile(keep)
    for step in range(3):
        x = np.arange(6.0).reshape(2, 3) + step
        d = {"last": np.zeros((2, 3)), "t": np.zeros((3, 2)), "s": np.float64(0)}
        want_d = copy.deepcopy(d)
        assert_same(keep(x, want_d), compiled(x, d))
        assert_same(want_d, d)
        assert d["last"] is x and d["t"].base is x
    assert counts(compiled) == (1, 2, 0)


def bias_corrected(g, state):
    state["t"] += 1.0                      # a Python float argument, stored back
    state["m"] = 0.9 * state["m"] + 0.1 * g
    state["last"] = state["m"].max().item()   # .item(): a Python float computed on replay
    return state["m"] / (1 - 0.9 ** state["t"])


def test_python_floats_the_body_computes_are_stored_as_python_floats():
    compiled = fusejit.compile(bias_corrected)
    state, want_state = ({"t": 0.0, "m": np.zeros(3), "last": 0.0} for _ in range(2))
    for step in range(4):
        g = np.linspace(-1, 1, 3) * (step + 1)
        assert_same(bias_corrected(g, want_state), compiled(g, state))
        assert_same(want_state, state)   # t and last: floats, as eagerly
    assert counts(compiled) == (1, 3, 0)


def add_into_first(x, a, b):
    a["s"] = x.sum()
    return b["s"] * 2


def test_one_dict_passed_twice_keys_apart_from_two_and_runs_eagerly():
    # Eagerly the body reads its own store back through the second name: the trace sees one
    # dict under both names, a replay could not store between the two reads.
    compiled = fusejit.compile(add_into_first)
    x = np.arange(3.0)
    assert_same(add_into_first(x, {"s": 1.0}, {"s": 1.0}),
                compiled(x, {"s": 1.0}, {"s": 1.0}))
    # NumPy scalars: the stored sum is one too, so the next call has the same key
    shared, want_shared = {"s": np.float64(1.0)}, {"s": np.float64(1.0)}
    assert_same(add_into_first(x, want_shared, want_shared), compiled(x, shared, shared))
    assert_same(want_shared, shared)
    assert counts(compiled) == (2, 0, 0)          # its own key: traced, then a fallback
    assert_same(add_into_first(x, want_shared, want_shared), compiled(x, shared, shared))
    assert_same(want_shared, shared)
    assert counts(compiled) == (2, 0, 1)
    assert_same(add_into_first(x, {"s": 1.0}, {"s": 1.0}),
                compiled(x, {"s": 1.0}, {"s": 1.0}))
    assert counts(compiled) == (2, 1, 1)          # two dicts still replay


def reads_both(x, a, b):
    return a["s"] + b["s"] * x


@pytest.mark.parametrize("wrap", [dict, list, tuple], ids=["dict", "list", "tuple"])
def test_a_container_passed_twice_is_not_replayed_for_two_and_back(wrap):
    # f(x, d, d) traces with one container under both names (its items read from the first):
    # that program must not answer f(x, d1, d2), nor the other way round.
    def make(value):
        return {"s": value} if wrap is dict else wrap([value])

    def body(x, a, b):
        return reads_both(x, *(({"s": c[0]} if wrap is not dict else c) for c in (a, b)))

    compiled = fusejit.compile(body)
    x = np.arange(3.0)
    for first, second in [(make(1.0),) * 2, (make(1.0), make(5.0)), (make(2.0),) * 2,
                          (make(3.0), make(7.0))]:
        assert_same(body(x, first, second), compiled(x, first, second))
    assert counts(compiled)[:2] == (2, 2)


def adds_a_key(x, d):
    d["new"] = x * 2
    return x


def stores_a_count(x, d):
    d["v"] = d["v"] + x
    d["n"] = d["n"] + 1         # a Python int: the replay cannot make it
    return x


def stores_twice_through_one(x, a, b):
    a["v"] = a["v"] + x
    return b["v"]


@pytest.mark.parametrize("fn, make, why", [
    (adds_a_key, lambda: ({"old": np.zeros(3)},), "(items added or removed)"),
    (stores_a_count, lambda: ({"v": np.zeros(3), "n": 0},), "(not all of them traced values)"),
    (stores_twice_through_one, lambda: (lambda d: (d, d))({"v": np.zeros(3)}),
     "(the container is passed more than once)"),
], ids=["key-added", "python-int", "passed-twice"])
def test_stores_a_replay_cannot_make_run_eagerly_and_reach_the_caller(fn, make, why):
    compiled = fusejit.compile(fn)
    x = np.arange(3.0)
    want_args, got_args = make(), make()
    assert_same(fn(x, *want_args), compiled(x, *got_args))
    assert_same(want_args, got_args)
    reason = str(compiled.explain(x, *make())).splitlines()[1]
    assert reason.endswith(f"the body changed the items of argument 1 {why}")


def step_with_statics(mode, vel, g, lr):
    vel["w"] = 0.9 * vel["w"] - lr * g
    return g.sum() if mode == "sum" else g.max()


def test_stores_find_their_containers_among_the_arguments_left_beside_static_ones():
    compiled = fusejit.compile(step_with_statics, static_argnames=("mode", "lr"))
    vel, want_vel = {"w": np.zeros(3)}, {"w": np.zeros(3)}
    for step in range(3):
        g = np.arange(3.0) + step
        assert_same(step_with_statics("sum", want_vel, g, 0.5),
                    compiled("sum", vel, g, lr=0.5))
        assert_same(want_vel, vel)
    assert counts(compiled) == (1, 2, 0)


STATE = {"v": np.zeros(3)}


def store_then_read_the_global(x, d):
    d["v"] = x * 2.0
    return STATE["v"] + 1.0     # the same dict where the caller passes STATE as d


def call_checked(compiled, fn, x, d):
    """Both on fresh zeros in ``STATE``, NumPy first; the result and ``d`` must agree."""
    STATE["v"] = np.zeros(3)
    want = fn(x, d)
    stored = d["v"]
    STATE["v"] = np.zeros(3)
    if d is not STATE:
        d["v"] = np.zeros(3)
    assert_same(want, compiled(x, d))
    assert_same(stored, d["v"])


@pytest.mark.parametrize("order", ["STATE first", "own dict first"])
def test_a_dict_argument_that_is_also_the_global_the_body_reads_keys_apart(order):
    # Called with STATE, the body reads its own store back through the global; called with
    # a dict of its own, the global's item. Each kind of call traces once and replays.
    compiled = fusejit.compile(store_then_read_the_global)
    x, mine = np.arange(3.0), {"v": np.zeros(3)}
    calls = [STATE, mine] * 3 if order == "STATE first" else [mine, STATE] * 3
    for step, d in enumerate(calls):
        call_checked(compiled, store_then_read_the_global, x + step, d)
    assert counts(compiled) == (2, 4, 0)


def closure_reading(held):
    def body(x, d):
        d["v"] = x * 2.0
        return held["v"] + 1.0
    return body


class Holder:
    pass


HOLDER = Holder()


def store_then_read_an_attribute(x, d):
    d["v"] = x * 2.0
    return HOLDER.d["v"] + 1.0


@pytest.mark.parametrize("how", ["closure", "attribute"])
def test_the_traced_call_reads_its_own_store_through_a_closure_or_an_attribute(how):
    state = {"v": np.zeros(3)}
    if how == "closure":
        fn = closure_reading(state)
    else:
        fn, HOLDER.d = store_then_read_an_attribute, state
    compiled = fusejit.compile(fn)
    x = np.arange(3.0)
    for step in range(3):
        state["v"] = np.zeros(3)
        want = fn(x + step, state)
        state["v"] = np.zeros(3)
        got = compiled(x + step, state)
        assert_same(want, got)   # x * 2 + 1: the store, read back
        assert_same(x + step + x + step + 1.0, got)
    assert counts(compiled) == (1, 2, 0)


def scale_one_read_the_other(x, a, b):
    a.m["w"] = a.m["w"] * 2.0
    return b.m["w"] * x


def test_two_objects_whose_dicts_become_one_after_tracing_trace_again():
    compiled = fusejit.compile(scale_one_read_the_other)
    x = np.arange(3.0)
    mine, eager = [Holder(), Holder()], [Holder(), Holder()]
    for objects in (mine, eager):
        objects[0].m, objects[1].m = {"w": np.ones(3)}, {"w": np.ones(3)}
    for step in range(4):
        if step == 2:   # one dict, reached through both objects
            mine[1].m, eager[1].m = mine[0].m, eager[0].m
        assert_same(scale_one_read_the_other(x, *eager), compiled(x, *mine))
        assert_same(eager[0].m, mine[0].m)
    assert counts(compiled) == (2, 2, 0)


def test_a_dict_that_holds_itself_runs_eagerly():
    def body(x, d):
        return d["s"] * x
    d = {"s": 2.0}
    d["self"] = d
    compiled = fusejit.compile(body)
    assert_same(body(np.arange(3.0), d), compiled(np.arange(3.0), d))
    assert counts(compiled) == (0, 0, 1)


def store_into_static(x, cfg):
    cfg["v"] = cfg["v"] + x
    return x + 1


def test_items_stored_into_a_static_dict_run_eagerly_and_stay_concrete():
    # The key holds the static dict by id and the body gets it itself: a replay would not
    # store again, and the traced call once left a proxy in it.
    compiled = fusejit.compile(store_into_static, static_argnames=("cfg",))
    x, mine, eager = np.arange(3.0), {"v": np.ones(3)}, {"v": np.ones(3)}
    for _ in range(3):
        assert_same(store_into_static(x, cfg=eager), compiled(x, cfg=mine))
        assert type(mine["v"]) is np.ndarray
        assert_same(eager, mine)
    assert counts(compiled) == (1, 0, 2)
    reason = str(compiled.explain(x, cfg=mine)).splitlines()[1]
    assert reason.endswith("the body changed the items of static argument cfg")


Held = namedtuple("Held", "d w")


def store_through_namedtuple(x, held):
    held.d["s"] = held.d["s"] * 0.5 + x
    return held.w * held.d["s"]


def test_items_stored_into_a_dict_a_namedtuple_holds_replay():
    compiled = fusejit.compile(store_through_namedtuple)
    x = np.arange(3.0)
    want = Held({"s": np.ones(3)}, np.full(3, 2.0))
    got = copy.deepcopy(want)
    for _ in range(4):
        assert_same(store_through_namedtuple(x, want), compiled(x, got))
        assert_same(want.d, got.d)
    assert counts(compiled) == (1, 3, 0)


def store_read_through_another(x, a, b):
    a.d["s"] = a.d["s"] * 2.0
    return b.d["s"] * x


@pytest.mark.parametrize("value", [1.0, np.ones(3)], ids=["float", "array"])
def test_one_dict_in_two_namedtuples_is_one_dict_in_the_body(value):
    compiled = fusejit.compile(store_read_through_another)
    x = np.arange(3.0)
    want_d, got_d = {"s": copy.deepcopy(value)}, {"s": copy.deepcopy(value)}
    want = store_read_through_another(x, Held(want_d, None), Held(want_d, None))
    assert_same(want, compiled(x, Held(got_d, None), Held(got_d, None)))
    assert_same(want_d, got_d)


def stores_beside_a_shared_dict(x, a, b, out):
    out["v"] = a["s"] * x + b["s"]
    return x


def test_a_dict_passed_twice_beside_the_one_stored_into_replays():
    # the key records the sharing, so the trace saw it: only the stores into ``out`` replay
    compiled = fusejit.compile(stores_beside_a_shared_dict)
    x = np.arange(3.0)
    for scale in (1.0, 2.0, 3.0):
        shared, want, got = {"s": scale}, {"v": None}, {"v": None}
        assert_same(stores_beside_a_shared_dict(x, shared, shared, want),
                    compiled(x, shared, shared, got))
        assert_same(want, got)
    assert counts(compiled) == (1, 2, 0)


def store_then_read_two_ways(x, d):
    d["v"] = x * 2.0
    return HOLDER.d["v"] + HOLDER.twin.d["v"] * 10.0


def twin_state(moved: bool) -> dict:
    """``HOLDER.d``, reached a second way through ``HOLDER.twin`` unless ``moved``."""
    d = HOLDER.d = {"v": np.zeros(3)}
    HOLDER.twin = HOLDER
    if moved:   # another object, whose dict is not the argument
        HOLDER.twin = Holder()
        HOLDER.twin.d = {"v": np.full(3, 100.0)}
    return d


def test_every_path_to_the_argument_dict_is_checked_on_replay():
    compiled = fusejit.compile(store_then_read_two_ways)
    x = np.arange(3.0)
    for moved in (False, True, True):
        want = store_then_read_two_ways(x, twin_state(moved))
        assert_same(want, compiled(x, twin_state(moved)))
    assert counts(compiled) == (2, 1, 0)


LOG = []


def bind_the_global_elsewhere(x, d):
    d["v"] = x * 2.0
    HOLDER.ref = STATE
    LOG.append(STATE)
    return x + 1.0


def test_the_argument_dict_bound_elsewhere_in_the_body_is_the_callers_own():
    compiled = fusejit.compile(bind_the_global_elsewhere)
    for _ in range(3):
        LOG.clear()
        HOLDER.ref = None
        compiled(np.arange(3.0), STATE)
        assert HOLDER.ref is STATE and LOG == [STATE] and LOG[0] is STATE
        assert type(STATE["v"]) is np.ndarray


def slow_to_trace(x, d):
    time.sleep(0.3)   # while tracing only: a replay runs no Python
    d["v"] = x * 2.0
    return STATE["v"] + 1.0


def test_a_call_waiting_on_another_threads_trace_checks_the_relation():
    # Thread A traces f(x, STATE); B calls f(y, mine) meanwhile and waits for A's trace to
    # finish, then must not replay A's program (which reads its store through STATE).
    compiled, results = fusejit.compile(slow_to_trace), {}
    STATE["v"] = np.zeros(3)
    mine = {"v": np.zeros(3)}
    a = threading.Thread(target=lambda: results.setdefault("a", compiled(np.arange(3.0), STATE)))
    a.start()
    time.sleep(0.1)   # B reaches the trace lock while A traces
    results["b"] = compiled(np.full(3, 100.0), mine)
    a.join()
    assert_same(np.arange(3.0) * 2.0 + 1.0, results["a"])
    assert_same(np.arange(3.0) * 2.0 + 1.0, results["b"])   # STATE's item, stored by A
    assert_same(np.full(3, 200.0), mine["v"])
