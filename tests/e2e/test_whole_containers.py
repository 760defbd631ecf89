"""Lists, sets and dicts of plain values that a model uses whole: ``for d in self.dims``,
``len(self.names)``, ``name in self.skip``, ``self.scales[i]``, ``self.opts.items()``. A
replay would answer for what they held while tracing; each is read again before every call,
whether the compiled function reaches the model as ``self``, a global, an argument or
through a partial, while a count kept beside the numbers the body reads by a constant key
traces nothing again.
"""
import collections
import functools

import numpy as np
import pytest

import fusejit
from tests.e2e.model_helpers import compiled_as
from tests.oracle import assert_same

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


class Looped:
    def __init__(self):
        self.dims = [2.0, 3.0]

    def forward(self, x):
        for d in self.dims:
            x = x * d
        return x


class Skipping:
    def __init__(self):
        self.skip = {"b"}

    def forward(self, x):
        for name, k in (("a", 2.0), ("b", 3.0)):
            if name not in self.skip:
                x = x * k
        return x


class Counted:
    def __init__(self):
        self.names = ["a", "b"]

    def forward(self, x):
        return x * len(self.names)


class Nested:
    def __init__(self):
        self.cfg = {"inner": {"q": 1}, "sizes": [2.0, 3.0]}

    def forward(self, x):
        if "q" in self.cfg["inner"]:
            x = x + 1
        for s in self.cfg["sizes"]:
            x = x * s
        return x


class Indexed:
    def __init__(self):
        self.scales = [2.0, 3.0]
        self.opts = collections.OrderedDict(a=2.0, b=0.5)

    def forward(self, x):
        for i in range(2):
            x = x * self.scales[i]
        for _, v in self.opts.items():
            x = x + v
        return x if "a" in self.opts.keys() else -x   # noqa: SIM118 -- as users write it


CHANGES = [
    (Looped, lambda m: m.dims.append(4.0)),
    (Looped, lambda m: m.dims.__setitem__(1, 5.0)),
    (Skipping, lambda m: m.skip.discard("b")),
    (Skipping, lambda m: m.skip.add("a")),
    (Counted, lambda m: m.names.append("c")),
    (Nested, lambda m: m.cfg["inner"].pop("q")),
    (Nested, lambda m: m.cfg["sizes"].pop()),
    (Indexed, lambda m: m.scales.__setitem__(1, 5.0)),
    (Indexed, lambda m: m.opts.__setitem__("b", 4.0)),
    (Indexed, lambda m: m.opts.pop("a")),
]
IDS = ["list-appended", "list-item-set", "set-item-dropped", "set-item-added",
       "len-of-a-list", "in-on-a-subscript", "list-in-a-dict", "computed-index",
       "items-loop", "in-on-keys"]


def _answers_after(model, change):
    """``model.forward`` compiled answers as NumPy before and after ``change(model)``."""
    compiled = fusejit.compile(model.forward)
    assert_same(model.forward(X), compiled(X))
    change(model)
    assert_same(model.forward(X), compiled(X))


@pytest.mark.parametrize("root", ["self", "global", "argument", "partial"])
@pytest.mark.parametrize(("make", "change"), CHANGES, ids=IDS)
def test_a_container_used_whole_is_read_as_it_is(root, make, change):
    model = make()
    compiled = compiled_as(root, model)
    assert_same(model.forward(X), compiled(X))
    assert_same(model.forward(X), compiled(X))
    change(model)
    assert_same(model.forward(X), compiled(X))
    assert_same(model.forward(X + 1), compiled(X + 1))


@pytest.mark.parametrize("make", [Looped, Skipping, Counted, Nested, Indexed])
def test_a_container_left_as_it_is_replays(make):
    model = make()
    compiled = fusejit.compile(model.forward)
    for _ in range(3):
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1
    assert compiled.cache_info()["hits"] == 2


class Kept:
    def __init__(self):
        self.state = {"lr": 0.5, "steps": 0}
        self.flags = {"bias": 0}

    def forward(self, x):
        y = x * self.state["lr"]
        return y + 1 if "bias" in self.flags else y


def test_a_count_kept_beside_the_numbers_read_by_key_traces_nothing_again():
    model = Kept()
    compiled = fusejit.compile(model.forward)
    for _ in range(4):
        model.state["steps"] += 1
        model.flags["bias"] += 1
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1


DIMS = [2.0, 3.0]
SKIP = {"b"}
NAMES = ["a", "b"]


def _globals_body(x):
    for d in DIMS:
        x = x * d
    key = "b"
    if key in SKIP:
        x = x + 1
    return x * len(NAMES)


@pytest.mark.parametrize("change", [lambda: DIMS.append(4.0), lambda: SKIP.clear(),
                                    lambda: NAMES.pop()],
                         ids=["list-loop", "set-in-by-a-name", "len"])
def test_a_global_container_used_whole_is_read_as_it_is(change):
    saved = (list(DIMS), set(SKIP), list(NAMES))
    compiled = fusejit.compile(_globals_body)
    try:
        assert_same(_globals_body(X), compiled(X))
        change()
        assert_same(_globals_body(X), compiled(X))
    finally:
        DIMS[:], NAMES[:] = saved[0], saved[2]
        SKIP.clear()
        SKIP.update(saved[1])


def test_a_closure_list_used_whole_is_read_as_it_is():
    sizes = [2.0, 3.0]

    def body(x):
        for s in sizes:
            x = x * s
        return x

    compiled = fusejit.compile(body)
    assert_same(body(X), compiled(X))
    sizes.append(0.5)
    assert_same(body(X), compiled(X))


def test_explain_shows_the_container_read_again():
    model = Skipping()
    model.skip = {"b", "c"}
    compiled = fusejit.compile(model.forward)
    text = str(compiled.explain(X))
    assert "self.skip == {'b', 'c'}, as traced (read again before each replay)" in text


class Remembers:
    def __init__(self):
        self.seen, self.log = set(), []

    def forward(self, x):
        self.seen.add(len(self.seen))
        self.log.append(len(self.seen))   # a log it only appends to: no state
        return x * len(self.seen)


SEEN: list = []


def _appends(x):
    SEEN.append(1)
    return x * len(SEEN)


@pytest.mark.parametrize("root", ["self", "global", "argument"])
def test_a_container_the_body_changes_and_uses_whole_is_state(root):
    model, twin = Remembers(), Remembers()
    compiled = compiled_as(root, model)
    for _ in range(4):
        assert_same(twin.forward(X), compiled(X))
    assert model.seen == twin.seen


def test_a_global_list_the_body_appends_to_and_counts_is_state():
    SEEN.clear()
    compiled = fusejit.compile(_appends)
    results = [compiled(X) for _ in range(4)]
    SEEN.clear()
    for result in results:
        assert_same(_appends(X), result)


class Logs:
    def __init__(self):
        self.log = []

    def forward(self, x):
        self.log.append(1.0)
        return x * 2.0


def test_a_log_the_body_only_appends_to_still_compiles():
    model = Logs()
    compiled = fusejit.compile(model.forward)
    for _ in range(3):
        assert_same(X * 2.0, compiled(X))
    assert compiled.cache_info()["traces"] == 1


def _scaled(x, cfg):
    return x * cfg["lr"]


class Handed:
    """A dict handed to a helper, or bound to a local, that reads it by key."""

    def __init__(self):
        self.state = {"lr": 0.5, "steps": 0}

    def forward(self, x):
        st = self.state
        return _scaled(x, self.state) + x * st["lr"]


class KeysOnly:
    """A dict whose keys alone the code reads."""

    def __init__(self):
        self.params = {"bias": 1.0, "steps": 0}

    def forward(self, x, key="bias"):
        if key in self.params and "bias" in self.params.keys():   # noqa: SIM118
            x = x + 1.0
        return x * len(self.params)


@pytest.mark.parametrize(("make", "counts"), [(Handed, lambda m: m.state),
                                              (KeysOnly, lambda m: m.params)],
                         ids=["handed-on", "keys-read"])
def test_a_count_beside_a_dict_handed_on_or_read_by_its_keys_traces_nothing_again(make, counts):
    model = make()
    compiled = fusejit.compile(model.forward)
    for _ in range(4):
        counts(model)["steps"] += 1
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1


@pytest.mark.parametrize("change", [lambda m: m.params.pop("bias"),
                                    lambda m: m.params.__setitem__("w", 2.0)],
                         ids=["key-removed", "key-added"])
def test_a_dict_read_by_its_keys_is_read_again_for_them(change):
    _answers_after(KeysOnly(), change)


class Lazy:
    def __init__(self):
        self.names = set()

    def forward(self, x):
        if not self.names:   # filled once: compiles on the next call
            self.names.update({"a", "b"})
        return x * len(self.names)


def test_a_set_the_body_fills_once_compiles_on_the_next_call():
    model, twin = Lazy(), Lazy()
    compiled = fusejit.compile(model.forward)
    for _ in range(4):
        assert_same(twin.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 2
    assert compiled.cache_info()["hits"] == 2


class Ordered:
    def __init__(self):
        self.s, self.d = {1, 9}, {1: "a"}

    def forward(self, x):
        for v in self.s:
            x = (x - v) * 0.5
        for k in self.d:
            x = x * k
        return x


@pytest.mark.parametrize("change", [lambda m: setattr(m, "s", {9, 1}),
                                    lambda m: setattr(m, "d", {1.0: "a"})],
                         ids=["set-iterated-in-another-order", "key-of-another-type"])
def test_an_equal_container_read_otherwise_is_read_again(change):
    _answers_after(Ordered(), change)


def _total(cfg):
    return sum(cfg.values())


class Summed:
    def __init__(self):
        self.cfg = {"a": 1.0, "b": 2.0}

    def forward(self, x):
        return x * _total(self.cfg)


def test_a_dict_handed_to_a_helper_that_reads_all_its_values_is_read_again():
    _answers_after(Summed(), lambda m: m.cfg.__setitem__("b", 5.0))


class FromTheEnd:
    DIMS = [2.0, 3.0]   # the class's own list

    def __init__(self):
        self.w, self.t = [2.0, 3.0], ([2.0, 3.0], [1.0])

    def forward(self, x):
        for d in self.DIMS:
            x = x * d
        for d in self.t[0]:
            x = x + d
        return x * self.w[-1]


@pytest.mark.parametrize("change", [lambda m: m.w.append(4.0),
                                    lambda m: type(m).DIMS.append(4.0),
                                    lambda m: m.t[0].append(4.0)],
                         ids=["last-item-of-a-grown-list", "class-list", "list-in-a-tuple"])
def test_a_list_read_from_its_end_by_its_class_or_in_a_tuple_is_read_again(change):
    try:
        _answers_after(FromTheEnd(), change)
    finally:
        FromTheEnd.DIMS[:] = [2.0, 3.0]


def _looped(dims, x, cfg=None):
    for d in dims:
        x = x * d
    return x * len(cfg["sizes"])


def test_containers_a_partial_binds_are_read_again():
    dims, cfg = [2.0, 3.0], {"sizes": [1, 2]}
    body = functools.partial(_looped, dims, cfg=cfg)
    compiled = fusejit.compile(body)
    assert_same(body(X), compiled(X))
    dims.append(4.0)
    assert_same(body(X), compiled(X))
    cfg["sizes"].append(3)
    assert_same(body(X), compiled(X))


class KeysAndItems:
    def __init__(self):
        self.params, self.cfg = {"bias": 1.0, "steps": 0}, {"inner": {"q": 2.0}}

    def forward(self, x):
        if "bias" in self.params.keys():   # noqa: SIM118 -- as users write it
            x = x + self.params["bias"]
        for _ in self.cfg["inner"]:
            x = x * self.cfg["inner"]["q"]
        return x


def test_a_dict_read_by_its_keys_has_its_items_read_by_key_too():
    model = KeysAndItems()
    compiled = fusejit.compile(model.forward)
    assert_same(model.forward(X), compiled(X))
    model.params["bias"] = 3.0
    assert_same(model.forward(X), compiled(X))
    model.cfg["inner"]["q"] = 5.0
    assert_same(model.forward(X), compiled(X))
    model.params["steps"] += 1
    assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 3


SCALES = {"a": 2.0, "b": 3.0}


def _through_a_helper(x):
    return x * _total(SCALES)


def _looped_total(cfg):
    total = 0.0
    for k in cfg:
        total += cfg[k]
    return total


class Handing:
    def __init__(self):
        self.cfg, self.scales, self.hooks = {"a": 2.0, "b": 3.0}, {"a": 2.0, "b": 1.0}, {}

    def forward(self, x):
        scales = self.scales
        for n in ("a", "b"):
            x = x * scales[n]
        y = x * _looped_total(self.cfg)
        return y * 2 if self.hooks else y


def test_a_global_dict_handed_to_a_helper_that_sums_it_is_read_again():
    compiled = fusejit.compile(_through_a_helper)
    try:
        assert_same(_through_a_helper(X), compiled(X))
        SCALES["b"] = 4.0
        assert_same(_through_a_helper(X), compiled(X))
    finally:
        SCALES["b"] = 3.0


@pytest.mark.parametrize("change", [lambda m: m.cfg.__setitem__("a", 5.0),
                                    lambda m: m.scales.__setitem__("a", 5.0),
                                    lambda m: m.hooks.__setitem__("h", 1)],
                         ids=["helper-subscripting-by-its-keys", "local-subscripted-by-a-name",
                              "tested-for-emptiness"])
def test_a_dict_read_by_computed_keys_or_tested_is_read_again(change):
    _answers_after(Handing(), change)


class Optimizer:
    def __init__(self):
        self.params = {"w": np.ones(3, np.float32), "b": np.zeros(3, np.float32)}
        self.hp = {"lr": 0.5, "step": 0}

    def forward(self, x):
        params = self.params
        for _, p in params.items():
            x = x + p
        hp = self.hp
        return x * hp["lr"]


def test_a_count_beside_a_dict_bound_to_a_local_read_by_key_traces_nothing_again():
    model = Optimizer()
    compiled = fusejit.compile(model.forward)
    for _ in range(4):
        model.hp["step"] += 1
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1
    model.hp["lr"] = 2.0
    assert_same(model.forward(X), compiled(X))


class Bound:
    def __init__(self):
        self.hp, self.flag = {"a": 1.0, "b": 2.0}, True


BOUND = Bound()
WEIGHTS = {"a": 1.0, "b": 2.0}
ORDERED = collections.OrderedDict(a=1.0, b=2.0)


def _rebinding(cfg):
    c = cfg
    return sum(c.values())


def _each(*dicts):
    total = 0.0
    for d in dicts:
        total += sum(d.values())
    return total


def _or_empty(x):
    hp = BOUND.hp or {}
    return x * sum(hp.values())


def _conditional(x):
    hp = BOUND.hp if BOUND.flag else {}
    return x * sum(hp.values())


def _doubled(cfg):
    return sum({k: cfg[k] * 2 for k in cfg}.values())


def _in_a_comprehension(x):
    hp = BOUND.hp
    return x * sum([hp[k] for k in ("a", "b")])


def _walrus(x):
    if hp := BOUND.hp:
        return x * sum(hp.values())
    return x


def _unpacked(x):
    hp, n = BOUND.hp, 2.0
    return x * sum(hp.values()) * n


def _chained(x):
    a = hp = BOUND.hp
    return x * sum(hp.values()) + a["a"]


def _copied(x):
    hp = dict(BOUND.hp)
    return x * sum(hp.values())


def _enumerated(*dicts):
    total = 0.0
    for i, d in enumerate(dicts):
        total += sum(d.values()) * (i + 1)
    return total


BODIES = {
    "tuple-assignment": (_unpacked, lambda: BOUND.hp),
    "copied-by-dict": (_copied, lambda: BOUND.hp),
    "copied-by-dict-and-summed": (lambda x: x * sum(dict(WEIGHTS).values()), lambda: WEIGHTS),
    "chained-assignment": (_chained, lambda: BOUND.hp),
    "enumerated-star-args": (lambda x: x * _enumerated(BOUND.hp), lambda: BOUND.hp),
    "comprehension-over-a-parameter": (lambda x: x * _doubled(BOUND.hp), lambda: BOUND.hp),
    "comprehension-over-a-local": (_in_a_comprehension, lambda: BOUND.hp),
    "walrus": (_walrus, lambda: BOUND.hp),
    "bound-through-or": (_or_empty, lambda: BOUND.hp),
    "bound-through-a-conditional": (_conditional, lambda: BOUND.hp),
    "rebound-in-the-helper": (lambda x: x * _rebinding(BOUND.hp), lambda: BOUND.hp),
    "star-args-of-the-helper": (lambda x: x * _each(BOUND.hp), lambda: BOUND.hp),
    "counted-and-handed-on": (lambda x: x * len(WEIGHTS) * _total(WEIGHTS), lambda: WEIGHTS),
    "ordered-dict-handed-on": (lambda x: x * _total(ORDERED), lambda: ORDERED),
}


@pytest.mark.parametrize("name", list(BODIES))
def test_a_dict_reaching_code_that_reads_it_whole_by_other_ways_is_read_again(name):
    body, held = BODIES[name]
    saved = dict(held())
    compiled = fusejit.compile(body)
    try:
        assert_same(body(X), compiled(X))
        held()["a"] = 5.0
        assert_same(body(X), compiled(X))
    finally:
        held().update(saved)


class Reused:
    """Local names bound to a dict read by key, then to other values."""

    def __init__(self):
        self.hp = {"lr": 0.5, "steps": 0}

    def forward(self, x):
        c = self.hp
        x = x * c["lr"]
        for c in (1.0, 2.0):
            x = x + c
        lr = self.hp and self.hp["lr"]
        copied = self.hp.copy()
        hp, k = self.hp, 2.0
        a = b = self.hp
        k = k * dict(self.hp)["lr"]
        for i, c in enumerate((1.0, 2.0)):
            x = x + c * i
        return sum([x * lr + c for c in (1.0, 2.0)]) * copied["lr"] * hp["lr"] * k * a["lr"] \
            * b["lr"]


def test_local_names_bound_to_a_dict_read_by_key_and_reused_trace_nothing_again():
    model = Reused()
    compiled = fusejit.compile(model.forward)
    for _ in range(4):
        model.hp["steps"] += 1
        assert_same(model.forward(X), compiled(X))
    assert compiled.cache_info()["traces"] == 1


class Aliased:
    def __init__(self):
        self.cfg = {"a": 1.0, "b": 2.0}

    def forward(self, x):
        a = self.cfg
        b = a
        c = b
        d = c.copy()
        for v in d.values():
            x = x * v
        return x


def test_a_dict_read_whole_through_a_chain_of_local_names_is_read_again():
    _answers_after(Aliased(), lambda m: m.cfg.__setitem__("a", 5.0))


class Layer:
    def __init__(self, k):
        self.k, self.w = k, np.ones(3, np.float32)


class Counts:
    """Lists of objects and of arrays whose length the code reads."""

    def __init__(self):
        self.layers, self.ws = [Layer(2.0), Layer(3.0)], [np.ones(3, np.float32)]

    def forward(self, x):
        return x * len(self.layers) + len(self.ws)


@pytest.mark.parametrize("change", [lambda m: m.layers.append(Layer(4.0)),
                                    lambda m: m.ws.pop()],
                         ids=["layer-appended", "array-removed"])
def test_the_length_of_a_list_of_objects_or_arrays_is_read_again(change):
    _answers_after(Counts(), change)
