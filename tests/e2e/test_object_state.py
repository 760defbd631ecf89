"""State the body keeps in objects other than numbers and arrays: an attribute rebound to
another object (two layers swapped, a helper made once), a deque it changes. A replay runs
no Python, so it would not rebind or change them again: such a call runs as traced, and the
trace that leaves them as they are compiles.
"""
import collections

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

X = np.linspace(-1, 1, 4)


class Scale:
    def __init__(self, k):
        self.k = k


class Alternating:
    def __init__(self):
        self.cur, self.nxt = Scale(2.0), Scale(3.0)

    def forward(self, x):
        y = x * self.cur.k
        self.cur, self.nxt = self.nxt, self.cur
        return y


SWAPPED = Alternating()


@pytest.mark.parametrize("root", ["self", "global"])
def test_objects_the_body_swaps_on_every_call(root):
    eager, got = Alternating(), Alternating() if root == "self" else SWAPPED
    compiled = fusejit.compile(got.forward if root == "self" else
                               lambda x: SWAPPED.forward(x))
    for _ in range(5):
        assert_same(eager.forward(X), compiled(X))
        assert got.cur.k == eager.cur.k


class Gates:
    def __init__(self):
        self.on = None

    def forward(self, x):
        if self.on is None:
            self.on = {"relu"}
        return np.maximum(x, 0) if "relu" in self.on else x


GATES = Gates()


def test_a_set_the_body_makes_and_is_changed_later_is_read_as_it_is():
    compiled, eager = fusejit.compile(lambda x: GATES.forward(x)), Gates()
    for _ in range(3):
        assert_same(eager.forward(X), compiled(X))
    GATES.on.discard("relu")
    eager.on.discard("relu")
    assert_same(eager.forward(X), compiled(X))


class Lazy:
    def __init__(self):
        self.helper = None

    def forward(self, x):
        if self.helper is None:
            self.helper = Scale(4.0)
        return x * self.helper.k


def test_a_helper_object_made_once_then_compiles():
    eager, got = Lazy(), Lazy()
    compiled = fusejit.compile(got.forward)
    for _ in range(4):
        assert_same(eager.forward(X), compiled(X))
    assert compiled.cache_info()["hits"] >= 2
    got.helper = Scale(-1.0)
    eager.helper = Scale(-1.0)
    assert_same(eager.forward(X), compiled(X))


class Queue:
    def __init__(self):
        self.d = collections.deque([np.arange(4.0), 1.0])

    def forward(self, x):
        self.d[0] = self.d[0] * 0.5 + x
        self.d[1] = self.d[1] + 1.0
        return self.d[0] * self.d[1]


def test_a_deque_the_body_stores_into_holds_arrays_and_numbers_as_eagerly():
    eager, got = Queue(), Queue()
    compiled = fusejit.compile(got.forward)
    for _ in range(4):
        assert_same(eager.forward(X), compiled(X))
        assert type(got.d[0]) is np.ndarray
        assert_same(eager.d[0], got.d[0])
        assert got.d[1] == eager.d[1]


class Buffers:
    def __init__(self):
        self.bufs = {"a": collections.deque(maxlen=3)}

    def forward(self, x):
        self.bufs["a"].append(x * 2)
        return sum(self.bufs["a"])


def test_arrays_appended_to_a_deque_inside_a_dict_are_arrays_after_the_call():
    eager, got = Buffers(), Buffers()
    compiled = fusejit.compile(got.forward)
    for _ in range(4):
        assert_same(eager.forward(X), compiled(X))
        assert len(got.bufs["a"]) == len(eager.bufs["a"])
        assert all(type(item) is np.ndarray for item in got.bufs["a"])


class Table:
    """A table of more than ``captures.MAX_ITEMS`` numbers, and one of objects."""

    def __init__(self):
        self.counts = [1.0] * 20_000
        self.cells = [Scale(float(i)) for i in range(20_000)]

    def forward(self, x):
        self.counts[3] += 1.0
        return x * self.counts[3] + self.cells[3].k


def test_a_number_the_body_changes_in_a_long_list_is_state():
    eager, got = Table(), Table()
    compiled = fusejit.compile(got.forward)
    for _ in range(3):
        assert_same(eager.forward(X), compiled(X))
        assert got.counts[3] == eager.counts[3]
    got.cells[3].k = eager.cells[3].k = -2.0
    assert_same(eager.forward(X), compiled(X))
