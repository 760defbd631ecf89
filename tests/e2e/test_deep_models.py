"""Models written as nested classes: ``model.blocks[i].attn.c_proj.w`` is five steps below
the model, ``net._modules["0"]._params["w"]`` four. Their arrays and numbers are read again on
every call however the compiled function reaches the model: as the method's ``self``, as a
global, or as an argument. A weight updated in place or rebound, a scale changed, a random
generator drawn from: each call answers as NumPy does on the model as it is then.
"""
import importlib
import sys
import types

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


class Linear:
    def __init__(self, rng, n):
        self.w = rng.standard_normal((n, n)).astype(np.float32) / n
        self.b = np.zeros(n, np.float32)
        self.scale = 1.0
        self.cfg = {"eps": 0.0}

    def __call__(self, x):
        return (x @ self.w + self.b) * self.scale + self.cfg["eps"]


class Attention:
    def __init__(self, rng, n):
        self.c_attn, self.c_proj = Linear(rng, n), Linear(rng, n)

    def __call__(self, x):
        return self.c_proj(np.tanh(self.c_attn(x)))


class Block:
    def __init__(self, rng, n):
        self.attn = Attention(rng, n)
        self.model = None          # a back reference, set by the model: a cycle

    def __call__(self, x):
        return x + self.attn(x)


class Model:
    def __init__(self, blocks: int = 3, n: int = 4):
        rng = np.random.default_rng(0)
        self.blocks = [Block(rng, n) for _ in range(blocks)]
        for block in self.blocks:
            block.model = self

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


MODEL = Model()


def _deepest(model) -> Linear:
    return model.blocks[-1].attn.c_proj


def _update_in_place(model):
    _deepest(model).b[:] = 1.0


def _rebind_weight(model):
    _deepest(model).w = _deepest(model).w * 2


def _change_scale(model):
    _deepest(model).scale = 3.0


def _change_item(model):
    _deepest(model).cfg["eps"] = 0.5


def _share_weight(model):   # two layers holding one array, then one of them rebound
    model.blocks[0].attn.c_attn.w = model.blocks[1].attn.c_attn.w
    _update_in_place(model)


def _compiled(root: str, model):
    """The model's forward, compiled as a method, through a global, or given as an argument;
    each returns a function of ``x``."""
    if root == "self":
        return fusejit.compile(model.forward)
    if root == "global":
        globals()["MODEL"] = model
        compiled = fusejit.compile(lambda x: MODEL.forward(x))
        return compiled
    compiled = fusejit.compile(lambda m, x: m.forward(x))
    return lambda x: compiled(model, x)


@pytest.mark.parametrize("root", ["self", "global", "argument"])
@pytest.mark.parametrize("change", [_update_in_place, _rebind_weight, _change_scale,
                                    _change_item, _share_weight],
                         ids=lambda change: change.__name__.strip("_"))
def test_a_nested_model_changed_between_calls_is_read_as_it_is(root, change):
    model = Model()
    compiled = _compiled(root, model)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    assert_same(model.forward(x), compiled(x))
    change(model)
    assert_same(model.forward(x), compiled(x))
    assert_same(model.forward(x + 1), compiled(x + 1))


class _Net:
    """Modules in dicts, as a port of a PyTorch model would hold them."""

    def __init__(self, n: int = 3):
        self._modules = {str(i): _Layer(np.full((n, n), i + 1.0)) for i in range(2)}

    def __call__(self, x):
        for module in self._modules.values():
            x = module(x)
        return x


class _Layer:
    def __init__(self, w):
        self._params = {"weight": w}

    def __call__(self, x):
        return np.tanh(x @ self._params["weight"])


def test_modules_and_parameters_held_in_dicts_are_read_again():
    net = _Net()
    compiled = fusejit.compile(lambda net, x: net(x))
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    assert_same(net(x), compiled(net, x))
    net._modules["1"]._params["weight"] *= -0.5
    assert_same(net(x), compiled(net, x))
    net._modules["0"]._params["weight"] = np.eye(3)
    assert_same(net(x), compiled(net, x))
    assert compiled.cache_info()["traces"] == 1


class _Dropout:
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __call__(self, x):
        return x * (self.rng.random(x.shape) > 0.5)


class _Sampler:
    def __init__(self):
        self.parts = {"drop": [_Dropout()]}

    def __call__(self, x):
        return self.parts["drop"][0](x) + 1


class _Noisy:
    def __init__(self):
        self.blocks = [_Sampler()]

    def forward(self, x):
        return self.blocks[0](x)


def test_a_generator_deep_in_a_model_draws_anew_on_every_call():
    eager, got = _Noisy(), _Noisy()   # ``self.blocks[0].parts["drop"][0].rng``
    compiled = fusejit.compile(got.forward)
    x = np.ones(16)
    for _ in range(3):
        assert_same(eager.forward(x), compiled(x))
    assert "drew random numbers from self.blocks[0].parts['drop'][0].rng" in str(
        compiled.explain(x))


@pytest.mark.parametrize("change", [_change_scale, _change_item],
                         ids=lambda change: change.__name__.strip("_"))
def test_every_number_a_model_of_many_layers_reads_is_read_again(change):
    model = Model(blocks=40)
    compiled = fusejit.compile(model.forward)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    assert_same(model.forward(x), compiled(x))
    change(model)
    assert_same(model.forward(x), compiled(x))


class _Checked(dict):
    """Its own ``__getitem__``: its arrays stay plain ones, found by their path."""

    def __getitem__(self, key):
        return dict.__getitem__(self, key)


def test_an_array_deep_in_a_dict_subclass_of_its_own_is_read_by_its_path():
    model = {"a": [{"b": [_Checked(w=np.ones(3))]}]}
    compiled = fusejit.compile(lambda x: x * model["a"][0]["b"][0]["w"] + 1)
    x = np.arange(3.0)
    assert_same(x + 1, compiled(x))
    model["a"][0]["b"][0]["w"][:] = 5.0
    assert_same(x * 5 + 1, compiled(x))
    model["a"][0]["b"][0]["w"] = np.full(3, 7.0)
    assert_same(x * 7 + 1, compiled(x))


class _Cached(Linear):
    def __call__(self, x):
        self.last = x * 2
        return self.last + 1


def test_a_store_deep_in_a_global_model_leaves_no_tracer_and_runs_as_numpy():
    eager, got = Model(), Model()
    for model in (eager, got):
        _deepest(model).__class__ = _Cached
    compiled = _compiled("global", got)
    x = np.ones((2, 4), np.float32)
    for step in range(3):
        assert_same(eager.forward(x + step), compiled(x + step))
        assert type(_deepest(got).last) is np.ndarray
        assert_same(_deepest(eager).last, _deepest(got).last)


def test_a_number_read_through_a_local_name_deep_below_a_global_is_read_again():
    def scaled(x):
        inner = MODEL.blocks[0].attn.c_proj   # four steps below the global, then ``.scale``
        return x * inner.scale

    globals()["MODEL"] = Model()
    compiled = fusejit.compile(scaled)
    x = np.arange(3.0)
    assert_same(scaled(x), compiled(x))
    MODEL.blocks[0].attn.c_proj.scale = 5.0
    assert_same(scaled(x), compiled(x))


def test_a_dict_deep_in_a_model_returned_is_the_models_own():
    def forward_and_config(model, x):
        return model.forward(x), model.blocks[-1].attn.c_proj.cfg

    model = Model()
    compiled = fusejit.compile(forward_and_config)
    x = np.ones((2, 4), np.float32)
    for _ in range(3):
        y, cfg = compiled(model, x)
        assert_same(model.forward(x), y)
        assert cfg is _deepest(model).cfg


class _Head:
    def __init__(self, parent):
        self.parent = parent            # a back reference, four steps below the model

    def __call__(self, x):
        return x * self.parent.w


class _Owner:
    def __init__(self, w):
        self.w, self.head = w, _Head(self)


def test_an_array_read_through_a_back_reference_rebound_is_read_from_the_new_object():
    class Tree:
        def __init__(self):
            self.blocks = [_Owner(np.ones(3)), _Owner(np.full(3, 2.0))]

        def forward(self, x):
            return self.blocks[0].head(x) + self.blocks[1].w

    model = Tree()
    compiled = fusejit.compile(model.forward)
    x = np.arange(3.0)
    assert_same(model.forward(x), compiled(x))
    model.blocks[0].head.parent = model.blocks[1]
    assert_same(model.forward(x), compiled(x))


_LAYERS = '''
import numpy as np

class Linear:
    def __init__(self):
        self.w, self.scale = np.ones(3), 1.0

    def __call__(self, x):
        return x * self.w * self.scale

class Block:
    def __init__(self):
        self.attn = {"proj": Linear()}

class Model:
    def __init__(self):
        self.blocks = [Block()]

    def forward(self, x):
        return self.blocks[0].attn["proj"](x)
'''


def _module_without_a_file(name: str):
    """The classes of ``_LAYERS`` as a notebook cell or ``python -c`` defines them."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(_LAYERS, f"<{name}>", "exec"), module.__dict__)
    return module


def _installed_module(tmp_path, name: str):
    """The classes of ``_LAYERS`` from a package installed under ``site-packages``."""
    site = tmp_path / "site-packages"
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text(_LAYERS)
    sys.path.insert(0, str(site))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(site))


@pytest.mark.parametrize("where", ["notebook", "installed"])
def test_a_model_whose_classes_live_outside_a_user_file_is_read_again(where, tmp_path):
    name = f"fusejit_test_layers_{where}"
    module = _module_without_a_file(name) if where == "notebook" else \
        _installed_module(tmp_path, name)
    try:
        model = module.Model()
        compiled = fusejit.compile(model.forward)
        x = np.arange(3.0)
        assert_same(model.forward(x), compiled(x))
        model.blocks[0].attn["proj"].w *= 3        # five steps down
        assert_same(model.forward(x), compiled(x))
        model.blocks[0].attn["proj"].scale = 10.0
        assert_same(model.forward(x), compiled(x))
    finally:
        del sys.modules[name]


class _Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


class _Shift:
    def __init__(self, b):
        self.b = b

    def __call__(self, x):
        return x + self.b


class _Stages:
    def __init__(self):
        self.stages = {"enc": [_Scale(3.0)]}   # two item steps, then the layer

    def forward(self, x):
        for layer in self.stages["enc"]:
            x = layer(x)
        return x


@pytest.mark.parametrize("root", ["self", "argument"])
def test_a_layer_in_a_list_in_a_dict_is_read_again(root):
    model = _Stages()
    if root == "self":
        compiled = fusejit.compile(model.forward)
    else:
        by_argument = fusejit.compile(lambda m, x: m.forward(x))
        compiled = lambda x: by_argument(model, x)   # noqa: E731
    x = np.arange(3.0)
    assert_same(model.forward(x), compiled(x))
    model.stages["enc"][0].k = 5.0
    assert_same(model.forward(x), compiled(x))
    model.stages["enc"][0] = _Shift(np.ones(3))          # a layer of another class
    assert_same(model.forward(x), compiled(x))
