"""A module of its own for ``test_code_reads``: its globals are not the body's."""
import types

import numpy as np

FACTOR = 2.0
CALLS = 0
MODE = "scale"
SETTINGS = types.SimpleNamespace(eps=1e-5)
PARAMS = {"lr": 0.1, "steps": 0}


class Base:
    K = 2.0


class Derived(Base):
    pass


class Holder:
    def __init__(self):
        self.scale = 2.0


HOLDER = Holder()


def scaled(x):
    return x * FACTOR


def counted(x):
    global CALLS
    CALLS += 1
    return x + CALLS


def normalized(x):
    return x / np.sqrt((x * x).mean() + SETTINGS.eps)


def stepped(x):
    PARAMS["steps"] = PARAMS["steps"] + 1
    return x * PARAMS["lr"]
