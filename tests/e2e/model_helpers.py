"""A module other than the tests' own that reads the numbers of the models it is given, and
compiles a model's ``forward`` reached from each kind of root."""
import functools

import fusejit

MODEL = None   # the model ``compiled_as("global", ...)`` reaches as a global


def shifted(model, x):
    return x * model.p.k + model.p.w


def slot_scaled(obj, x):
    return x * obj.k


def compiled_as(root: str, model):
    """``model.forward`` compiled so that it reaches ``model`` as the method's ``self``, as a
    global, through a ``functools.partial``, or as an argument."""
    if root == "self":
        return fusejit.compile(model.forward)
    if root == "global":
        global MODEL
        MODEL = model
        return fusejit.compile(lambda x: MODEL.forward(x))
    if root == "partial":
        return fusejit.compile(functools.partial(type(model).forward, model))
    compiled = fusejit.compile(lambda m, x: m.forward(x))
    return lambda x: compiled(model, x)
