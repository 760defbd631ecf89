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


COUNTS = types.SimpleNamespace(n=0)


def bumped(x):
    PARAMS["steps"] += 1
    COUNTS.n += 1
    return x * 2


class Lazy:
    """A settings object that raises until configured, as Django's does."""

    def __getattribute__(self, name):
        raise RuntimeError("settings are not configured")


SETTINGS_LAZY = Lazy()
DEBUG = False


def quiet(x):
    if DEBUG:
        print(SETTINGS_LAZY.LEVEL)
    return x * 2


def twin(x):
    return x * FACTOR
