"""Plain values read by code outside the body's module -- another module's helper, a method,
a module's, class's or object's attribute -- are read again before each replay, and such a
value that the traced call changed runs the signature eagerly (``tracer/code_reads.py``)."""
import sys

import numpy as np
import pytest

import fusejit
from fusejit.runtime.program import GuardFailed
from fusejit.tracer import flatten
from tests.oracle import assert_same
from tests.runtime import code_reads_helpers as helpers
from tests.runtime import code_reads_twin
from tests.runtime.code_reads_helpers import Derived

OFFSET = 1.0
CONFIG = {"eps": 1e-5}
here = sys.modules[__name__]


class Shift:
    def __call__(self, x):
        return x + OFFSET


SHIFT = Shift()


def check_changes(monkeypatch, body, holder, name, values, traces):
    """``body`` compiled answers as eagerly while ``holder.name`` takes ``values`` (twice each)."""
    compiled = fusejit.compile(body)
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    for value in values:
        if type(holder) is dict:
            monkeypatch.setitem(holder, name, value)
        else:
            monkeypatch.setattr(holder, name, value)
        for _ in range(2):
            assert_same(body(x), compiled(x))
    assert compiled.cache_info()["traces"] == traces
    return compiled


def test_a_global_read_by_a_helper_of_another_module(monkeypatch):
    check_changes(monkeypatch, lambda x: helpers.scaled(x) - 1, helpers, "FACTOR",
                  (2.0, 3.0, 3.0, 2.0), traces=2)


def test_a_module_attribute_read_by_the_body(monkeypatch):
    compiled = check_changes(monkeypatch, lambda x: x * helpers.FACTOR, helpers, "FACTOR",
                             (2.0, 0.5, 2.0), traces=2)
    assert "helpers.FACTOR == 2.0, as traced" in str(compiled.explain(np.ones(6, np.float32)))


def test_a_class_attribute_inherited_from_a_base(monkeypatch):
    check_changes(monkeypatch, lambda x: x * Derived.K, helpers.Base, "K", (2.0, 4.0),
                  traces=2)


def test_attributes_of_objects_bound_to_globals(monkeypatch):
    check_changes(monkeypatch, lambda x: x * helpers.HOLDER.scale, helpers.HOLDER, "scale",
                  (2.0, -1.0), traces=2)
    check_changes(monkeypatch, helpers.normalized, helpers.SETTINGS, "eps", (1e-5, 1.0),
                  traces=2)


def test_items_of_dicts_by_a_constant_key(monkeypatch):
    check_changes(monkeypatch, lambda x: x * helpers.PARAMS["lr"], helpers.PARAMS, "lr",
                  (0.1, 0.2), traces=2)
    monkeypatch.setitem(CONFIG, "eps", 1e-5)
    compiled = fusejit.compile(lambda x: x / (x.std() + CONFIG["eps"]))
    x = np.linspace(0, 1, 5)
    for eps in (1e-5, 1.0, 1.0):
        CONFIG["eps"] = eps
        assert_same(x / (x.std() + eps), compiled(x))
    assert compiled.cache_info()["traces"] == 2
    assert "CONFIG['eps'] == 1e-05, as traced" in str(compiled.explain(x))


def test_an_item_a_helper_stores_runs_the_signature_eagerly(monkeypatch):
    monkeypatch.setitem(helpers.PARAMS, "steps", 0)
    compiled = fusejit.compile(lambda x: helpers.stepped(x) + 1)
    for _ in range(3):
        assert_same(np.ones(2) * 0.1 + 1, compiled(np.ones(2)))
    assert helpers.PARAMS["steps"] == 3
    assert "PARAMS['steps'] changed from" in str(compiled.explain(np.ones(2)))


def test_an_object_rebound_under_its_global_name_is_read_anew(monkeypatch):
    fresh = helpers.Holder()
    fresh.scale = 3.0
    check_changes(monkeypatch, lambda x: x * helpers.HOLDER.scale, helpers, "HOLDER",
                  (helpers.HOLDER, fresh, fresh), traces=2)
    options = [helpers.Holder() for _ in range(3)]   # rebuilt before each call, equal
    check_changes(monkeypatch, lambda x: x * helpers.HOLDER.scale, helpers, "HOLDER",
                  options, traces=1)


def test_an_inherited_class_attribute_shadowed_later(monkeypatch):
    compiled = check_changes(monkeypatch, lambda x: x * Derived.K, helpers.Base, "K", (2.0,),
                             traces=1)
    monkeypatch.setattr(Derived, "K", 5.0, raising=False)
    x = np.ones(2, np.float32)
    assert_same(x * 5.0, compiled(x))


def test_equal_code_of_two_modules_reads_each_modules_globals(monkeypatch):
    check_changes(monkeypatch, lambda x: helpers.twin(x) + code_reads_twin.twin(x),
                  code_reads_twin, "FACTOR", (2.0, 10.0), traces=2)


def test_augmented_assignments_in_a_helper_run_the_signature_eagerly(monkeypatch):
    monkeypatch.setitem(helpers.PARAMS, "steps", 0)
    monkeypatch.setattr(helpers.COUNTS, "n", 0)
    compiled = fusejit.compile(lambda x: helpers.bumped(x) + 1)
    for _ in range(3):
        assert_same(np.ones(2) * 3, compiled(np.ones(2)))
    assert (helpers.PARAMS["steps"], helpers.COUNTS.n) == (3, 3)
    assert "runs eagerly" in str(compiled.explain(np.ones(2)))


def test_an_object_that_raises_when_looked_at_is_left_alone():
    compiled = fusejit.compile(lambda x: helpers.quiet(x) + 1)
    for _ in range(2):
        assert_same(np.ones(2) * 3, compiled(np.ones(2)))
    assert compiled.cache_info()["hits"] == 1


def test_a_global_read_by_a_method(monkeypatch):
    check_changes(monkeypatch, lambda x: SHIFT(x) * 2, here, "OFFSET", (1.0, 5.0, 1.0),
                  traces=2)


def test_a_counter_a_helper_advances_runs_the_signature_eagerly():
    compiled = fusejit.compile(lambda x: helpers.counted(x) * 2)
    x = np.zeros(3)
    start = helpers.CALLS
    for k in range(1, 5):
        assert_same((x + start + k) * 2, compiled(x))
    calls = helpers.CALLS
    assert calls == start + 4
    text = str(compiled.explain(x))
    assert "runs eagerly" in text
    assert "global tests.runtime.code_reads_helpers.CALLS changed" in text


def test_a_module_attribute_the_body_stores_runs_the_signature_eagerly(monkeypatch):
    monkeypatch.setattr(helpers, "MODE", "scale")

    def body(x):
        helpers.MODE = "shift" if helpers.MODE == "scale" else "scale"
        return x * 2 if helpers.MODE == "scale" else x + 2

    compiled = fusejit.compile(body)
    x = np.ones(3)
    for expected in (x + 2, x * 2, x + 2, x * 2):
        assert_same(expected, compiled(x))
    assert "runs eagerly" in str(compiled.explain(x))
    assert "helpers.MODE changed from" in str(compiled.explain(x))


class Scaled:
    """``scale`` read through a property: not a place of its own."""

    @property
    def scale(self):
        return 7.0


@pytest.mark.parametrize("body", [helpers.scaled, lambda x: x * helpers.FACTOR],
                         ids=["helper", "module-attribute"])
def test_the_fast_and_the_general_entry_both_check_another_modules_global(monkeypatch, body):
    compiled = fusejit.compile(body)
    x = np.ones(3)
    compiled(x)
    compiled(x)
    (tree,) = compiled._entries.values()
    entry = tree.paths[0]
    assert entry.fast_run is not None
    monkeypatch.setattr(helpers, "FACTOR", 5.0)
    leaves = flatten(((x,), {}))[0]
    moved = "FACTOR was 2.0 when traced, now 5.0"
    for run in (entry.fast_run, entry._run):
        with pytest.raises(GuardFailed, match=moved):
            run(leaves)


def test_an_object_of_another_class_under_the_global_is_walked_in_full(monkeypatch):
    compiled = fusejit.compile(lambda x: x * helpers.HOLDER.scale)
    x = np.ones(3)
    for _ in range(2):
        assert_same(x * 2.0, compiled(x))
    monkeypatch.setattr(helpers, "HOLDER", Scaled())   # a property of that name now
    for _ in range(2):
        assert_same(x * 7.0, compiled(x))


def test_numpys_and_pythons_own_constants_are_not_read_again():
    compiled = fusejit.compile(lambda x: x * np.pi + np.e * helpers.FACTOR)
    x = np.ones(2)
    assert_same(x * np.pi + np.e * helpers.FACTOR, compiled(x))
    reads = [line.strip() for line in str(compiled.explain(x)).splitlines()
             if "read again" in line]
    assert reads == ["global helpers.FACTOR == 2.0, as traced (read again before each replay)"]
