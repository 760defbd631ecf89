"""Plain and named values that a method reads through ``self`` where ``self`` is a compiled
callable object, or an object bound to a global or closure (``MODEL.forward(x)`` reading
``self.scale``), are read again before each replay, as an argument object's are."""
import sys

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

here = sys.modules[__name__]


class Scaled:
    def __init__(self, scale):
        self.scale, self.w, self.cfg, self.calls = scale, np.ones(4), {"eps": 0.0}, 0

    def __call__(self, x):
        return x * self.scale * self.w + self.cfg["eps"]


class Net:
    def __init__(self):
        self.layers, self.act, self.on = [Scaled(1.0 + k) for k in range(3)], np.tanh, True

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x)) if self.on else layer(x)
        return x


MODEL = Net()
SCALER = Scaled(2.0)


def test_a_compiled_callable_objects_own_attributes():
    obj = Scaled(2.0)
    compiled, x = fusejit.compile(obj), np.arange(4.0)
    for scale, eps in ((2.0, 0.0), (5.0, 0.0), (5.0, 0.5), (2.0, 0.0)):
        obj.scale, obj.cfg["eps"] = scale, eps
        assert_same(obj(x), compiled(x))
    assert compiled.cache_info()["traces"] == 3   # the first path taken again at the end


@pytest.mark.parametrize("change", [
    lambda m: setattr(m.layers[1], "scale", 9.0),
    lambda m: setattr(m, "on", False),
    lambda m: setattr(m, "act", np.sin),
    lambda m: m.layers.__setitem__(0, Scaled(-1.0)),
])
def test_what_a_global_objects_method_reads_through_self(monkeypatch, change):
    monkeypatch.setattr(here, "MODEL", Net())
    compiled, x = fusejit.compile(lambda x: MODEL.forward(x) + 1), np.linspace(-1, 1, 4)
    assert_same(MODEL.forward(x) + 1, compiled(x))
    change(MODEL)
    assert_same(MODEL.forward(x) + 1, compiled(x))
    assert compiled.cache_info()["traces"] == 2


def test_a_global_callable_object_changed_in_place_or_rebound(monkeypatch):
    monkeypatch.setattr(here, "SCALER", Scaled(2.0))
    compiled, x = fusejit.compile(lambda x: SCALER(x) - 1), np.arange(4.0)
    assert_same(SCALER(x) - 1, compiled(x))
    SCALER.cfg["eps"] = 0.25
    assert_same(SCALER(x) - 1, compiled(x))
    monkeypatch.setattr(here, "SCALER", Scaled(7.0))
    assert_same(SCALER(x) - 1, compiled(x))
    assert compiled.cache_info()["traces"] == 3


def test_an_object_held_by_a_closure():
    model = Scaled(3.0)
    compiled, x = fusejit.compile(lambda x: model(x) * 2), np.arange(4.0)
    assert_same(model(x) * 2, compiled(x))
    model.scale = 4.0
    assert_same(model(x) * 2, compiled(x))


def test_a_count_the_caller_keeps_that_no_code_reads_keeps_the_path(monkeypatch):
    monkeypatch.setattr(here, "SCALER", Scaled(2.0))
    compiled, x = fusejit.compile(lambda x: SCALER(x)), np.arange(4.0)
    for _ in range(3):
        SCALER.calls += 1
        assert_same(SCALER(x), compiled(x))
    assert compiled.cache_info()["traces"] == 1
    assert "global SCALER.scale == 2.0" in str(compiled.explain(x))


class Relu:
    def __call__(self, x):
        return np.maximum(x, 0)


def _through(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def test_a_called_layer_swapped_for_one_of_another_class(monkeypatch):
    layers = [Scaled(1.0), Relu(), Scaled(2.0)]
    compiled, x = fusejit.compile(_through), np.linspace(-1, 1, 4)
    assert_same(_through(layers, x), compiled(layers, x))
    layers[1] = Scaled(-1.0)
    assert_same(_through(layers, x), compiled(layers, x))
    monkeypatch.setattr(here, "SCALER", Relu())
    global_layers = fusejit.compile(lambda x: SCALER(x) + 1)
    assert_same(SCALER(x) + 1, global_layers(x))
    monkeypatch.setattr(here, "SCALER", Scaled(3.0))
    assert_same(SCALER(x) + 1, global_layers(x))


def _step(w, grad, lr):
    return w - lr * grad(w)


def _closure_grad(b, scale):
    return lambda w: scale[0] * w - b


def test_what_a_function_given_as_an_argument_reaches():
    b, scale, obj = np.ones(4), [2.0], Scaled(2.0)
    by_closure, w = _closure_grad(b, scale), np.arange(4.0)
    bound, partial = obj.__call__, __import__("functools").partial(np.multiply, b)
    compiled = fusejit.compile(_step)
    for grad in (by_closure, bound, partial):
        assert_same(_step(w, grad, 0.1), compiled(w, grad, 0.1))
        b[:] = -1.0                               # an array read by reference
        assert_same(_step(w, grad, 0.1), compiled(w, grad, 0.1))
        scale[0], obj.scale = 5.0, 4.0            # a closure list item, the object's number
        assert_same(_step(w, grad, 0.1), compiled(w, grad, 0.1))
        b[:], scale[0], obj.scale = 1.0, 2.0, 2.0


class Table:
    SCALE = 2.0
    cfg = {"k": 1.0}

    @classmethod
    @fusejit.compile
    def scaled(cls, x):
        return x * cls.SCALE

    @fusejit.compile
    def shifted(self, x):
        return x + self.cfg["k"]


def test_class_attributes_read_through_cls_and_a_dict_the_class_holds(monkeypatch):
    x, table = np.arange(4.0), Table()
    assert_same(x * 2.0, Table.scaled(x))
    assert_same(x + 1.0, table.shifted(x))
    monkeypatch.setattr(Table, "SCALE", 7.0)
    monkeypatch.setitem(Table.cfg, "k", 3.0)
    assert_same(x * 7.0, Table.scaled(x))
    assert_same(x + 3.0, table.shifted(x))


def test_a_class_or_a_dict_subclass_given_as_an_argument():
    import collections
    import types

    x = np.arange(4.0)
    by_class = fusejit.compile(lambda x, k: x * k.SCALE)
    by_items = fusejit.compile(lambda x, d: x * d["k"])
    items, source = collections.OrderedDict(k=2.0), {"k": 2.0}
    proxy = types.MappingProxyType(source)
    for d in (items, proxy):
        assert_same(x * 2.0, by_items(x, d))
    assert_same(x * 2.0, by_class(x, Table))
    items["k"], source["k"], Table.SCALE = 3.0, 4.0, 5.0
    try:
        assert_same(x * 3.0, by_items(x, items))
        assert_same(x * 4.0, by_items(x, proxy))
        assert_same(x * 5.0, by_class(x, Table))
    finally:
        Table.SCALE = 2.0


def test_static_argnames_objects_held_by_identity_changed_in_place():
    @fusejit.compile(static_argnames=("cfg",))
    def scaled(x, cfg):
        return x * cfg["k"]

    cfg, x = {"k": 2.0}, np.arange(4.0)
    assert_same(x * 2.0, scaled(x, cfg))
    cfg["k"] = 3.0
    assert_same(x * 3.0, scaled(x, cfg))


def test_an_attribute_set_on_the_compiled_function_itself():
    @fusejit.compile
    def scaled(x):
        return x * scaled.factor

    x = np.arange(4.0)
    scaled.factor = 2.0
    assert_same(x * 2.0, scaled(x))
    scaled.factor = 5.0
    assert_same(x * 5.0, scaled(x))


def test_class_attributes_of_code_run_without_a_module(tmp_path):
    import runpy
    path = tmp_path / "model_cfg.py"
    path.write_text("class Cfg:\n    K = 2.0\n\ndef f(x):\n    return x * Cfg.K\n")
    namespace = runpy.run_path(str(path))   # its module is not in sys.modules
    body, x = namespace["f"], np.ones(3)
    compiled = fusejit.compile(body)
    assert_same(body(x), compiled(x))
    namespace["Cfg"].K = 5.0
    assert_same(body(x), compiled(x))


class Optimizer:
    def __init__(self):
        self.t = 0


class Stepped:
    K = 2.0

    def __init__(self):
        self.t, self.opt, self.cfg = 1.0, Optimizer(), Table

    def forward(self, x):
        return x * self.t * self.K + self.cfg.SCALE


def test_paths_below_self_a_class_attribute_and_a_class_held_by_an_attribute(monkeypatch):
    model = Stepped()
    monkeypatch.setattr(here, "MODEL", model)
    compiled, x = fusejit.compile(lambda x: MODEL.forward(x)), np.arange(4.0)
    assert_same(model.forward(x), compiled(x))
    for change in (lambda: setattr(Stepped, "K", 3.0), lambda: setattr(Table, "SCALE", 4.0),
                   lambda: setattr(model, "K", 5.0)):
        change()
        assert_same(model.forward(x), compiled(x))
    monkeypatch.setattr(Stepped, "K", 2.0)
    monkeypatch.setattr(Table, "SCALE", 2.0)


def test_a_count_on_another_object_under_a_name_self_reads_keeps_the_path(monkeypatch):
    monkeypatch.setattr(here, "MODEL", Stepped())
    compiled, x = fusejit.compile(lambda x: MODEL.forward(x)), np.arange(4.0)
    for _ in range(4):
        MODEL.opt.t += 1   # the optimizer's step, which no traced code reads
        assert_same(MODEL.forward(x), compiled(x))
    assert compiled.cache_info()["traces"] == 1


def test_an_object_a_function_argument_reaches_and_a_compiled_classmethod():
    class Host:
        def __init__(self):
            self.sub = Optimizer()

        def grad(self, w):
            return w * self.sub.t

    host, w = Host(), np.arange(4.0)
    compiled = fusejit.compile(_step)
    assert_same(_step(w, host.grad, 0.1), compiled(w, host.grad, 0.1))
    host.sub.t = 3
    assert_same(_step(w, host.grad, 0.1), compiled(w, host.grad, 0.1))

    class Scaled2:
        SCALE = 2.0

        @classmethod
        def go(cls, x):
            return x * cls.SCALE

    go = fusejit.compile(Scaled2.go)
    assert_same(w * 2.0, go(w))
    Scaled2.SCALE = 3.0
    assert_same(w * 3.0, go(w))


class _Gone:
    pass


class _Mode(__import__("enum").Enum):
    """A value ``explain`` lists, whose ``__repr__`` raises."""

    A = 1

    def __repr__(self):
        raise RuntimeError("no repr")


class _Moded:
    def __init__(self):
        self.mode, self.w = _Mode.A, np.ones(4)

    def forward(self, x):
        return x * self.w if self.mode is _Mode.A else x


def test_a_dead_weak_proxy_beside_and_a_value_without_repr(monkeypatch):
    import gc
    import weakref

    gone, model = _Gone(), Scaled(2.0)
    model.peer = weakref.proxy(gone)
    monkeypatch.setattr(here, "SCALER", model)
    compiled, x = fusejit.compile(lambda x: SCALER(x)), np.arange(4.0)
    assert_same(model(x), compiled(x))
    del gone
    gc.collect()
    model.scale = 5.0
    assert_same(model(x), compiled(x))
    assert "global SCALER.scale" in str(compiled.explain(x))
    monkeypatch.setattr(here, "MODEL", _Moded())
    moded = fusejit.compile(lambda x: MODEL.forward(x))
    assert_same(MODEL.forward(x), moded(x))
    assert "global MODEL.mode == <_Mode object>" in str(moded.explain(x))


PARAMS = __import__("collections").namedtuple("Params", "w k")(np.ones(4), 2.0)


def test_the_numbers_of_a_named_tuple_holding_an_array(monkeypatch):
    compiled, x = fusejit.compile(lambda x: x * PARAMS.w * PARAMS.k), np.arange(4.0)
    assert_same(x * 2.0, compiled(x))
    monkeypatch.setattr(here, "PARAMS", PARAMS._replace(k=4.0))   # the same array
    assert_same(x * 4.0, compiled(x))
    PARAMS.w[:] = 3.0
    assert_same(x * 12.0, compiled(x))


class _Other:
    def __init__(self):
        self.k = 3.0

    def __call__(self, x):
        return x - self.k


BOUND = Scaled(2.0).__call__


def test_a_bound_method_bound_to_a_global(monkeypatch):
    """``G = model.g``: the object's arrays were baked in as constants and its numbers
    frozen; they are now read through the method as ``MODEL``'s are."""
    monkeypatch.setattr(here, "BOUND", Scaled(2.0).__call__)
    compiled, x = fusejit.compile(lambda x: BOUND(x) + 1), np.arange(4.0)
    assert_same(BOUND(x) + 1, compiled(x))
    BOUND.__self__.w[:] = 3.0                         # in place
    assert_same(BOUND(x) + 1, compiled(x))
    BOUND.__self__.w = np.full(4, 5.0)                # rebound
    assert_same(BOUND(x) + 1, compiled(x))
    BOUND.__self__.scale = 7.0
    assert_same(BOUND(x) + 1, compiled(x))
    monkeypatch.setattr(here, "BOUND", _Other().__call__)   # another class's method
    assert_same(BOUND(x) + 1, compiled(x))
    BOUND.__self__.k = 9.0
    assert_same(BOUND(x) + 1, compiled(x))
    assert "global BOUND.__self__.k == 9.0" in str(compiled.explain(x))


def test_bound_methods_in_a_list_a_closure_and_a_default():
    layers = [Scaled(1.0), Scaled(2.0)]
    hooks, first = [layer.__call__ for layer in layers], layers[0].__call__

    def eager(x, g=first):
        for hook in hooks:
            x = hook(x)
        return g(x)

    compiled, x = fusejit.compile(eager), np.arange(4.0)
    for change in (lambda: setattr(layers[1], "scale", 7.0),
                   lambda: layers[0].w.__setitem__(slice(None), 2.0),
                   lambda: setattr(layers[0], "scale", -1.0)):
        assert_same(eager(x), compiled(x))
        change()
    assert_same(eager(x), compiled(x))


class _Classy:
    K = 2.0

    @classmethod
    def scale(cls, x):
        return x * cls.K


CLASSY = _Classy.scale


def test_a_classmethod_bound_to_a_global(monkeypatch):
    monkeypatch.setattr(_Classy, "K", 2.0)
    compiled, x = fusejit.compile(lambda x: CLASSY(x)), np.arange(4.0)
    assert_same(x * 2.0, compiled(x))
    _Classy.K = 5.0
    assert_same(x * 5.0, compiled(x))


class _Compiled:
    def __init__(self):
        self.k = 2.0

    @fusejit.compile
    def forward(self, x):
        return x * self.k


LAYER = _Compiled()


def _compiled_with_a_closure(k):
    box = [k]

    @fusejit.compile
    def inner(x):
        return x * box[0]
    return inner, box


def test_what_a_compiled_function_called_from_the_body_reads(monkeypatch):
    """Its ops join the caller's trace, and what it reads is read again by the caller's
    replays too: its closure cells, and ``self`` of a compiled method."""
    monkeypatch.setattr(here, "LAYER", _Compiled())
    inner, box = _compiled_with_a_closure(2.0)
    compiled, x = fusejit.compile(lambda x: inner(x) + LAYER.forward(x)), np.arange(4.0)
    assert_same(x * 4.0, compiled(x))
    box[0] = 5.0
    assert_same(x * 7.0, compiled(x))
    LAYER.k = 6.0
    assert_same(x * 11.0, compiled(x))
    assert compiled.cache_info()["traces"] == 3


CYCLIC = [np.ones(4)]
CYCLIC.append(CYCLIC)


def test_a_list_that_holds_itself():
    """Tracing recursed until Python's limit (RecursionError) in a global; as an argument the
    call runs eagerly."""
    compiled, x = fusejit.compile(lambda x: x * CYCLIC[1][0]), np.arange(4.0)
    assert_same(x, compiled(x))
    CYCLIC[0][:] = 3.0
    assert_same(x * 3.0, compiled(x))
    given = fusejit.compile(lambda x, items: x * items[0])
    assert_same(x * 3.0, given(x, CYCLIC))
    assert "eager" in str(given.explain(x, CYCLIC))


class _Duck:
    """An array-like that overrides NumPy's functions."""

    def __init__(self, a):
        self.a = a

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [i.a if isinstance(i, _Duck) else i for i in inputs]
        return _Duck(getattr(ufunc, method)(*inputs, **kwargs))


DUCK = _Duck(np.ones(4))


def test_an_operand_that_overrides_numpys_functions_runs_eagerly():
    x = np.arange(4.0)
    for compiled, args in ((fusejit.compile(lambda x, d: np.add(x, d)), (x, DUCK)),
                           (fusejit.compile(lambda x: np.add(x, DUCK)), (x,))):
        result = compiled(*args)
        assert type(result) is _Duck
        assert_same(x + 1.0, result.a)
        assert "overrides NumPy's functions" in str(compiled.explain(*args))


class _Module:
    """A torch-like module: its arrays and settings live in dicts of its own, served by
    ``__getattr__``."""

    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_settings", {})
        self.w, self.scale, self.training = np.ones(4), 2.0, True

    def __setattr__(self, name, value):
        (self._params if isinstance(value, np.ndarray) else self._settings)[name] = value

    def __getattr__(self, name):
        for held in (self._params, self._settings):
            if name in held:
                return held[name]
        raise AttributeError(name)

    def forward(self, x):
        y = x * self.w * self.scale
        return y * 0.5 if self.training else y


MODULE = _Module()


@pytest.mark.parametrize("given", [False, True])
def test_values_a_class_serves_through_getattr(monkeypatch, given):
    monkeypatch.setattr(here, "MODULE", _Module())
    compiled = fusejit.compile((lambda m, x: m.forward(x)) if given else
                               (lambda m, x: MODULE.forward(x)))
    x = np.arange(4.0)
    for change in (lambda: setattr(MODULE, "scale", 5.0),
                   lambda: setattr(MODULE, "training", False),
                   lambda: setattr(MODULE, "w", np.full(4, 3.0)),
                   lambda: None):
        assert_same(MODULE.forward(x), compiled(MODULE, x))
        change()
    assert_same(MODULE.forward(x), compiled(MODULE, x))
    assert compiled.cache_info()["traces"] == 3
    assert ".training == False" in str(compiled.explain(MODULE, x))


class _Delegate:
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):   # a bound method of ``inner``, made anew on each lookup
        return getattr(self.inner, name)


def test_a_method_getattr_makes_anew_on_each_lookup_keeps_the_path():
    wrapper, x = _Delegate(Net()), np.linspace(-1, 1, 4)
    compiled = fusejit.compile(lambda w, x: w.forward(x) * w.on)
    for _ in range(3):
        assert_same(wrapper.inner.forward(x) * True, compiled(wrapper, x))
    assert compiled.cache_info()["traces"] == 1
    wrapper.inner.on = False
    assert_same(wrapper.inner.forward(x) * False, compiled(wrapper, x))


TABLE = {(1, "a"): 2.0}


class _Keyed:
    def __init__(self):
        self.t = {(0, 1): 1.5}

    def f(self, x):
        return x * self.t[0, 1]


KEYED = _Keyed()


def test_items_under_a_tuple_key(monkeypatch):
    monkeypatch.setitem(TABLE, (1, "a"), 2.0)
    monkeypatch.setattr(here, "KEYED", _Keyed())
    compiled, x = fusejit.compile(lambda x: x * TABLE[1, "a"] + KEYED.f(x)), np.arange(4.0)
    for change in (lambda: TABLE.__setitem__((1, "a"), 5.0),
                   lambda: KEYED.t.__setitem__((0, 1), 9.0)):
        assert_same(x * TABLE[1, "a"] + KEYED.f(x), compiled(x))
        change()
    assert_same(x * 5.0 + x * 9.0, compiled(x))


CONFIG = {"lr": 0.1}


class _Optional:
    def __init__(self):
        self.cfg = {"a": 1.0}

    def f(self, x):
        return x * self.cfg.get("a") * self.cfg.get("b", 2.0) * getattr(self, "k", 1.0)


OPTIONAL = _Optional()


@pytest.mark.parametrize("given", [False, True])
def test_items_read_by_get_and_attributes_read_by_getattr(monkeypatch, given):
    """``.get`` and ``getattr`` by a constant read as a subscript and an attribute load do,
    and where nothing is there (the default taken), a value added later takes another
    path."""
    monkeypatch.setattr(here, "OPTIONAL", _Optional())
    monkeypatch.setattr(here, "CONFIG", {"lr": 0.1})
    compiled = fusejit.compile(
        (lambda o, x: o.f(x) * CONFIG.get("wd", 3.0)) if given else
        (lambda o, x: OPTIONAL.f(x) * CONFIG.get("wd", 3.0)))
    eager, x = (lambda: OPTIONAL.f(x) * CONFIG.get("wd", 3.0)), np.arange(4.0)
    for change in (lambda: None, lambda: OPTIONAL.cfg.__setitem__("a", 4.0),
                   lambda: OPTIONAL.cfg.__setitem__("b", 5.0),
                   lambda: setattr(OPTIONAL, "k", 6.0), lambda: setattr(_Optional, "k", 7.0),
                   lambda: CONFIG.__setitem__("wd", 0.5)):
        change()
        assert_same(eager(), compiled(OPTIONAL, x))
    monkeypatch.delattr(_Optional, "k")
    del OPTIONAL.k
    assert_same(eager(), compiled(OPTIONAL, x))
    assert compiled.cache_info()["traces"] == 6   # the one with no k, then 5 changed
    text = str(compiled.explain(OPTIONAL, x))
    assert "CONFIG['wd'] == 0.5" in text
    assert ".k == (nothing)" in text and "['b'] == (nothing)" in text


class _Filling:
    """A config that fills in the names it is asked for (as addict's ``Dict`` does)."""

    def __init__(self):
        self.__dict__["_d"] = {"k": 2.0}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._d.setdefault(name, 0.0)

    def scaled(self, x):
        return x * self.k


FILLING = _Filling()


def test_getattr_is_asked_only_for_what_the_class_reads_below_self(monkeypatch):
    """Tracing asked it for every name any code of the trace loads (``co_consts``,
    ``getcwd``, ...), which this one stored."""
    monkeypatch.setattr(here, "FILLING", _Filling())
    for compiled, args in ((fusejit.compile(lambda x: FILLING.scaled(x)), ()),
                           (fusejit.compile(lambda f, x: f.scaled(x)), (FILLING,))):
        x = np.arange(4.0)
        FILLING._d["k"] = 2.0
        assert_same(x * 2.0, compiled(*args, x))
        FILLING._d["k"] = 5.0
        assert_same(x * 5.0, compiled(*args, x))
        assert sorted(FILLING._d) == ["k"]


class _AttrDict(dict):
    """A config whose items are its attributes."""

    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


ATTRS = _AttrDict(w=np.ones(4), s=2.0)


@pytest.mark.parametrize("given", [False, True])
def test_items_an_attrdict_serves_as_attributes(monkeypatch, given):
    """``CFG.s`` of ``__getattr__ = dict.__getitem__`` was frozen (its arrays were read)."""
    monkeypatch.setattr(here, "ATTRS", _AttrDict(w=np.ones(4), s=2.0))
    compiled = fusejit.compile((lambda c, x: x * c.w * c.s) if given else
                               (lambda c, x: x * ATTRS.w * ATTRS.s))
    x = np.arange(4.0)
    for change in (lambda: None, lambda: ATTRS.w.__setitem__(slice(None), 3.0),
                   lambda: setattr(ATTRS, "s", 5.0)):
        change()
        assert_same(x * ATTRS.w * ATTRS.s, compiled(ATTRS, x))


class _Buffered(_Module):
    """A batch norm that registers its running mean on the first call of training code."""

    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_settings", {})

    def forward(self, x):
        mean = getattr(self, "running_mean", None)
        centred = x if mean is None else x - mean
        return centred + 1.0 if hasattr(self, "bias") else centred


BUFFERED = _Buffered()


@pytest.mark.parametrize("given", [False, True])
def test_what_getattr_and_hasattr_found_missing_then_added(monkeypatch, given):
    """``getattr(self, "running_mean", None)`` where ``__getattr__`` raised, and
    ``hasattr(self, "bias")``: an attribute added later takes another path."""
    monkeypatch.setattr(here, "BUFFERED", _Buffered())
    compiled = fusejit.compile((lambda m, x: m.forward(x)) if given else
                               (lambda m, x: BUFFERED.forward(x)))
    x = np.arange(4.0)
    for change in (lambda: None, lambda: None,
                   lambda: setattr(BUFFERED, "running_mean", np.full(4, 0.5)),
                   lambda: setattr(BUFFERED, "bias", 1.0)):
        change()
        assert_same(BUFFERED.forward(x), compiled(BUFFERED, x))
    assert compiled.cache_info()["traces"] == 3
