"""A helper in another module, called as ``float_helpers.total(x)`` (``LOAD_ATTR``)."""


def total(x):
    return float(x.sum())
