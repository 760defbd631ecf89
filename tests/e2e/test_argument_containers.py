"""Plain values read through arguments that are no pytree: containers keyed by identity (an
``OrderedDict``, a ``deque``, a ``list`` subclass), ``static_argnames`` values, classes,
modules, what a partial or a function given as an argument binds. Each is changed in place
between calls (a key added, an item appended, an attribute set where ``getattr`` found
none): the replay answers as eager Python does.
"""
import collections
import functools
import types

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

X = np.ones(3)


class Items(list):
    pass


class Obj:
    pass


class Cfg:
    pass


def scaled_or_negated(x, cfg):
    y = x * cfg["scale"]
    return -y if cfg.get("negate") else y


def counted(x, q):
    return x * len(q)


def summed(x, items):
    return x * sum(items)


def counted_in_a_dict(x, d):
    return x * len(d["q"])


def looked_for(x, cfg):
    return -x if "neg" in cfg else x


def looked_up(x, obj):
    return -x if getattr(obj, "neg", False) else x


def looked_up_in_a_tuple(x, pair):
    return -x if getattr(pair[0], "neg", False) else x


def asked(x, cls):
    return -x if hasattr(cls, "NEG") else x


def divided(x, conf):
    return x / conf.TEMP


def _module():
    module = types.ModuleType("conf")
    module.TEMP = 1.0
    return module


CASES = {   # (function, static_argnames, the argument, its change)
    "ordered-dict-key-added": (scaled_or_negated, (), lambda: collections.OrderedDict(scale=2.0),
                               lambda a: a.__setitem__("negate", True)),
    "default-dict-key-added": (scaled_or_negated, (),
                               lambda: collections.defaultdict(float, scale=2.0),
                               lambda a: a.__setitem__("negate", True)),
    "deque-appended": (counted, (), lambda: collections.deque([1.0]),
                       lambda a: a.append(2.0)),
    "list-subclass-item-set": (summed, (), lambda: Items([1.0]), lambda a: a.__setitem__(0, 5.0)),
    "deque-in-a-dict-appended": (counted_in_a_dict, (), lambda: {"q": collections.deque([1.0])},
                                 lambda a: a["q"].append(2.0)),
    "static-dict-get": (scaled_or_negated, ("cfg",), lambda: {"scale": 2.0},
                        lambda a: a.__setitem__("negate", True)),
    "static-dict-in": (looked_for, ("cfg",), dict, lambda a: a.__setitem__("neg", 1)),
    "static-object-getattr": (looked_up, ("obj",), Obj, lambda a: setattr(a, "neg", True)),
    "object-in-a-tuple-getattr": (looked_up_in_a_tuple, (), lambda: (Obj(),),
                                  lambda a: setattr(a[0], "neg", True)),
    "class-hasattr": (asked, (), lambda: type("C", (Cfg,), {}), lambda a: setattr(a, "NEG", 1)),
    "module-attribute": (divided, (), _module, lambda a: setattr(a, "TEMP", 4.0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_argument_changed_in_place_is_read_again(name):
    fn, static, make, change = CASES[name]
    argument = make()
    compiled = fusejit.compile(fn, static_argnames=static)
    for _ in range(2):
        assert_same(fn(X, argument), compiled(X, argument))
    change(argument)
    assert_same(fn(X, argument), compiled(X, argument))


def test_a_dict_a_compiled_partial_binds_is_read_again_for_a_key_it_lacked():
    cfg = {"scale": 2.0}
    compiled = fusejit.compile(functools.partial(scaled_or_negated, cfg=cfg))
    assert_same(scaled_or_negated(X, cfg), compiled(X))
    cfg["negate"] = True
    assert_same(scaled_or_negated(X, cfg), compiled(X))


def test_a_dict_in_the_closure_of_a_function_argument_is_read_again_for_a_key_it_lacked():
    cfg = {}

    def act(v):
        return -v if cfg.get("neg") else v

    def body(x, fn):
        return fn(x) * 1

    compiled = fusejit.compile(body)
    assert_same(body(X, act), compiled(X, act))
    cfg["neg"] = True
    assert_same(body(X, act), compiled(X, act))


def test_a_count_beside_the_keys_read_in_an_ordered_dict_argument_traces_nothing_again():
    cfg = collections.OrderedDict(scale=2.0, steps=0)
    compiled = fusejit.compile(scaled_or_negated)
    for _ in range(4):
        cfg["steps"] += 1
        assert_same(scaled_or_negated(X, cfg), compiled(X, cfg))
    assert compiled.cache_info()["traces"] == 1
