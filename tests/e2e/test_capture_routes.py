"""Arrays the body reaches by routes other than its globals, cells and arguments (a partial's
bound arguments, a callable object's attributes, a class, keyword defaults, another module)
are captures read by reference on every call: writes replay, outside updates are seen.

Each test runs the same steps eagerly on state of its own and compiled, comparing results and
state after every call."""
import functools

import numpy as np

import fusejit
from tests.e2e import capture_state
from tests.oracle import assert_same


def _accumulate(x, acc):
    acc *= 0.5                          # no traced value in it
    acc += x
    return acc.sum()


def _steps(call, state):
    """Three calls, with an outside update of ``state`` before the last."""
    seen = []
    for step in range(3):
        if step == 2:
            state[...] += 10
        seen += [call(np.ones(2)), state.copy()]
    return seen


def _assert_same_steps(eager, compiled, eager_state, compiled_state):
    for want, got in zip(_steps(eager, eager_state), _steps(compiled, compiled_state),
                         strict=True):
        assert_same(want, got)


def test_arrays_bound_by_a_partial_are_captures():
    for bind in (lambda acc: functools.partial(_accumulate, acc=acc),
                 lambda acc: functools.partial(lambda acc, x: _accumulate(x, acc), acc)):
        eager_acc, compiled_acc = np.zeros(2), np.zeros(2)
        compiled = fusejit.compile(bind(compiled_acc))
        _assert_same_steps(bind(eager_acc), compiled, eager_acc, compiled_acc)
        info = compiled.cache_info()
        assert (info["traces"], info["eager_calls"]) == (1, 0)


class Accumulator:
    def __init__(self):
        self.w = np.zeros(2)

    def __call__(self, x):
        self.w *= 0.5
        self.w += x
        return self.w.sum()


def test_a_compiled_callable_object_reads_its_attributes_every_call():
    eager, model = Accumulator(), Accumulator()
    compiled = fusejit.compile(model)
    _assert_same_steps(eager, compiled, eager.w, model.w)
    info = compiled.cache_info()
    assert (info["traces"], info["eager_calls"]) == (1, 0)


class Table:
    C = np.zeros(2)

    @classmethod
    def step(cls, x):
        cls.C *= 0.5
        cls.C += x
        return x * cls.C


def test_class_attributes_reached_through_cls_are_captures():
    compiled = fusejit.compile(Table.step)
    eager_seen = _steps(Table.step, Table.C)
    Table.C[...] = 0
    for want, got in zip(eager_seen, _steps(compiled, Table.C), strict=True):
        assert_same(want, got)
    assert type(Table.C) is np.ndarray and compiled.cache_info()["eager_calls"] == 0


def _keyword_default(x, *, acc=np.zeros(2)):  # noqa: B008 - the state under test
    acc *= 0.5
    acc += x
    return acc.sum()


def test_keyword_only_default_arrays_are_captures():
    acc = _keyword_default.__kwdefaults__["acc"]
    eager_seen = _steps(_keyword_default, acc)
    acc[...] = 0
    compiled = fusejit.compile(_keyword_default)
    for want, got in zip(eager_seen, _steps(compiled, acc), strict=True):
        assert_same(want, got)


DEFAULTS = {"acc": np.zeros(2)}


def _dict_default(x, d, cfg=DEFAULTS):
    d["y"] = x * 2.0
    return cfg["acc"] + d["y"]


def test_arrays_in_a_default_dict_are_read_as_they_are_on_every_call():
    # They were constants of the program, taken while tracing.
    compiled = fusejit.compile(_dict_default)
    for step, aliased in enumerate([False, True, False, True]):
        seen = []
        for fn in (_dict_default, compiled):
            DEFAULTS["acc"] = np.full(2, 10.0 * step)
            d = DEFAULTS if aliased else {"y": np.zeros(2)}
            seen.append(fn(np.ones(2) * step, d))
        assert_same(*seen)
        assert type(DEFAULTS["acc"]) is np.ndarray
    assert compiled.cache_info()["eager_calls"] == 0


def _other_module(x):
    capture_state.W *= 0.5
    capture_state.W += x
    return x * capture_state.W


def test_arrays_of_another_module_are_captures():
    capture_state.W[...] = 0
    eager_seen = _steps(_other_module, capture_state.W)
    capture_state.W[...] = 0
    compiled = fusejit.compile(_other_module)
    for want, got in zip(eager_seen, _steps(compiled, capture_state.W), strict=True):
        assert_same(want, got)
    assert type(capture_state.W) is np.ndarray


EVALUATED = np.zeros(2)


def _evaluated(x):
    return x * eval("EVALUATED")  # noqa: S307 - a name the code does not mention


def test_a_global_array_read_by_eval_is_a_capture():
    compiled = fusejit.compile(_evaluated)
    for fill in (1.0, 2.0, 3.0):
        EVALUATED[...] = fill
        assert_same(_evaluated(np.ones(2)), compiled(np.ones(2)))


def _scaled_by_bound(x, w, *, n):
    w *= 2
    return x * w[:n].sum()


def test_a_partial_with_a_bound_array_and_static_arguments():
    eager_w, compiled_w = np.arange(4.0), np.arange(4.0)
    eager = functools.partial(_scaled_by_bound, w=eager_w)
    compiled = fusejit.compile(functools.partial(_scaled_by_bound, w=compiled_w),
                               static_argnames=("n",))
    for _ in range(3):
        assert_same(eager(np.ones(1), n=2), compiled(np.ones(1), n=2))
        assert_same(eager_w, compiled_w)
    assert compiled.cache_info()["hits"] == 2


class StaticCall:
    @staticmethod
    def __call__(x):
        return x * 2


class Frozen(type):
    def __setattr__(cls, name, value):
        raise AttributeError("frozen class")


class Constants(metaclass=Frozen):
    C = np.ones(3)


def _reads_constants(x):
    return x * Constants.C


def test_objects_and_classes_the_tracer_cannot_change_still_compile():
    assert_same(np.full(2, 2.0), fusejit.compile(StaticCall())(np.ones(2)))
    compiled = fusejit.compile(_reads_constants)
    for fill in (1.0, 2.0, 3.0):
        Constants.C[...] = fill
        assert_same(np.full(3, fill), compiled(np.ones(3)))
    assert compiled.cache_info()["hits"] == 2


STEPPED = {"w": np.arange(3.0)}


def _steps_a_default(x, cfg=STEPPED):
    cfg["w"] = cfg["w"] + 1.0   # a traced value stored into the default dict
    return x + cfg["w"]


def test_a_traced_value_stored_into_a_default_dict_runs_eagerly_and_stays_concrete():
    STEPPED["w"] = np.arange(3.0)
    want = [_steps_a_default(np.arange(3.0)) for _ in range(3)]
    want_w = STEPPED["w"]
    STEPPED["w"] = np.arange(3.0)
    compiled = fusejit.compile(_steps_a_default)
    for expected in want:
        assert_same(expected, compiled(np.arange(3.0)))
        assert type(STEPPED["w"]) is np.ndarray
    assert_same(want_w, STEPPED["w"])
    assert compiled.cache_info()["eager_calls"] == 2


SETTINGS = {"scale": np.full(3, 2.0)}
HISTORY = [np.ones(3)]


def _returns_its_defaults(x, cfg=SETTINGS, *, log=HISTORY):
    return x * cfg["scale"] + log[0], cfg, log


def test_a_default_dict_or_list_returned_is_the_object_itself():
    # Positional defaults came back as a copy rebuilt on every call (keyword-only ones did not).
    compiled = fusejit.compile(_returns_its_defaults)
    for step in range(3):
        SETTINGS["scale"] = np.full(3, float(step))
        want = _returns_its_defaults(np.arange(3.0))
        got = compiled(np.arange(3.0))
        assert_same(want[0], got[0])
        assert got[1] is SETTINGS and got[2] is HISTORY
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_returned_default_follows_defaults_rebound_after_compiling():
    # The container was found through the defaults tuple seen while tracing: rebinding
    # ``__defaults__`` (or ``__kwdefaults__``) left replays returning the old one.
    def f(x, cfg=SETTINGS, *, log=HISTORY):
        return x * cfg["scale"], cfg, log

    compiled, other, other_log = fusejit.compile(f), {"scale": np.full(3, 5.0)}, [np.ones(3)]
    SETTINGS["scale"] = np.full(3, 2.0)
    compiled(np.arange(3.0))
    f.__defaults__, f.__kwdefaults__ = (other,), {"log": other_log}
    want, got = f(np.arange(3.0)), compiled(np.arange(3.0))
    assert_same(want[0], got[0])
    assert got[1] is other and got[2] is other_log
