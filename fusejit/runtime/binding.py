"""A call's static arguments split from its traced ones, and its keywords moved to their
positions, planned once per call layout.

``inspect.Signature.bind`` costs about 7 us a call, on every replay of a function with
``static_argnames``. How a call binds depends only on its layout: how many arguments come by
position and which names by keyword. The first call of a layout binds for real (and raises
what ``bind`` raises); later calls of that layout replay the plan as index lookups.
"""
from __future__ import annotations

import contextlib
import inspect

_PLAIN = {inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}
MAX_PLANS = 64   # layouts remembered per function


class StaticSplit:
    """``split(args, kwargs)`` -> (statics, args, kwargs): what binding the call and popping
    the static names from ``BoundArguments.arguments`` gives, as its ``args``/``kwargs``."""

    def __init__(self, signature: inspect.Signature, static_argnames):
        self._signature, self._static = signature, tuple(static_argnames)
        self._names = list(signature.parameters)
        # *args, **kwargs and positional-only parameters bind by rules a plan would repeat
        # wrongly: such functions always bind.
        self._plannable = all(p.kind in _PLAIN for p in signature.parameters.values())
        self._plans: dict = {}

    def __call__(self, args: tuple, kwargs: dict):
        layout = (len(args), tuple(kwargs))
        plan = self._plans.get(layout)
        if plan is None:
            return self._bind(args, kwargs, layout)
        values = args + tuple(kwargs.values()) if kwargs else args
        statics, positional, keywords = plan
        return ({name: values[i] for name, i in statics}, tuple([values[i] for i in positional]),
                {name: values[i] for name, i in keywords})

    def positional(self, args: tuple, kwargs: dict):
        """``(args, kwargs)`` with each keyword argument that could come by position moved there,
        so ``f(x, w=w)`` and ``f(x, w)`` are one call. As they are where the signature is not
        planned (``*args``, ``**kwargs``, positional-only) or the call does not bind: calling
        the function raises Python's own error for it."""
        if not self._plannable:
            return args, kwargs
        with contextlib.suppress(TypeError):
            _, args, kwargs = self(args, kwargs)
        return args, kwargs

    def _bind(self, args, kwargs, layout):
        bound = self._signature.bind(*args, **kwargs)
        statics = {n: bound.arguments.pop(n) for n in self._static if n in bound.arguments}
        result = statics, bound.args, bound.kwargs
        if self._plannable and len(self._plans) < MAX_PLANS:
            self._plans[layout] = self._plan(layout, statics, bound)
        return result

    def _plan(self, layout, statics, bound):
        """Indices into ``args + kwargs.values()`` for each static, positional and keyword
        value, in the order ``BoundArguments`` gives them."""
        count, keywords = layout

        def source(name: str) -> int:
            index = self._names.index(name)
            return index if index < count else count + keywords.index(name)

        present = bound.arguments   # the static names already popped
        positional, by_keyword, started = [], [], False
        for name, parameter in self._signature.parameters.items():
            started = started or parameter.kind is inspect.Parameter.KEYWORD_ONLY \
                or name not in present
            if name in present:
                (by_keyword if started else positional).append(name)
        return ([(n, source(n)) for n in statics], [source(n) for n in positional],
                [(n, source(n)) for n in by_keyword])
