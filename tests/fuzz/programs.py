"""Random NumPy programs as source text, drawn with hypothesis.

A ``Program`` is the text of ``def program(a0, a1, ...)`` plus how to make its arguments. The
generator grows it one statement at a time and runs every candidate prefix eagerly on sample
arguments: a statement NumPy rejects (shapes that do not broadcast, a bad axis, an in-place
cast NumPy refuses) is dropped, so every drawn program runs eagerly. Nothing here imports
fusejit: the generator only knows NumPy.

Values carry an *exact* flag: arguments are exact, and so is anything computed from exact
values by correctly rounded operations (+ - * / sqrt, max/min, casts, movement ops). Sums,
means and transcendentals are not. Discontinuous operations on floats (floor, comparisons,
``//``, ``%``, argmax, casts to int or bool) are applied to exact values only: a few-ulp
difference before ``floor`` is not a bug, and comparing it would only make noise.
"""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass

import numpy as np

DTYPES = ("float32", "float64", "int32", "int64", "bool")
# ``FUSEJIT_FUZZ_SHAPES=large``: dims up to 1,030 and values up to 400k elements, which reach
# what tiny arrays never do (parallel variants, tiled copies of column-ordered inputs, the
# arena, concatenation loops); off by default: such programs take seconds each
LARGE = os.environ.get("FUSEJIT_FUZZ_SHAPES") == "large"
MAX_SIZE = 400_000 if LARGE else 2048
MAX_NDIM = 5

UNARY_FUNCS = ("negative", "absolute", "exp", "expm1", "log", "log1p", "sqrt", "tanh", "sin",
               "cos", "floor", "ceil", "sign", "isnan", "isinf", "isfinite", "logical_not",
               "square", "rint", "sinh", "cosh", "arctan", "log2", "log10", "invert",
               "positive")
INEXACT_UNARY = frozenset({"exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "sinh", "cosh",
                           "arctan", "log2", "log10"})
DISCONTINUOUS_UNARY = frozenset({"floor", "ceil", "sign", "isnan", "isinf", "isfinite",
                                 "logical_not", "rint", "invert"})
BINARY_OPERATORS = ("+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=",
                    "&", "|", "^")
BINARY_FUNCS = ("maximum", "minimum", "fmax", "fmin", "arctan2", "logical_and", "logical_or",
                "logical_xor", "add", "subtract", "multiply", "true_divide")
DISCONTINUOUS_BINARY = frozenset({"//", "%", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^",
                                  "logical_and", "logical_or", "logical_xor"})
INEXACT_BINARY = frozenset({"**", "arctan2"})
REDUCTIONS = ("sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin", "std",
              "var")
INEXACT_REDUCTIONS = frozenset({"sum", "prod", "mean", "std", "var"})
# Constants of every Python and NumPy scalar kind, to exercise NEP 50 promotion.
CONSTANTS = ("2", "0", "-1", "3", "1.5", "-0.5", "0.0", "-0.0", "2.0", "True", "False",
             "np.float32(1.5)", "np.float32(-2.0)", "np.float64(0.25)", "np.int32(3)",
             "np.int64(-2)", "np.bool_(True)", "np.inf", "-np.inf", "np.nan", "np.float32(np.inf)",
             "1e-40", "np.float32(1e-40)", "7", "300", "np.int32(-7)")
INT_EXPONENTS = ("0", "1", "2", "3", "np.int64(2)", "np.int32(1)", "2.0", "0.5")


@dataclass
class Arg:
    name: str
    kind: str                # "array" | "generic" | "pyfloat"
    shape: tuple = ()
    dtype: str = "float64"


@dataclass
class Program:
    args: list[Arg]
    lines: list[str]
    returns: list[str]
    specials: bool = False   # NaN, ±inf, -0.0 and subnormals in float arguments
    wide_ints: bool = False  # integers over the whole range (overflow), else small
    inexact: bool = False    # some value went through a reordered reduction or libm call
    fortran: bool = False    # array arguments of two or more axes F-ordered (keyed apart)

    def source(self, name="program") -> str:
        body = self.lines + ["return " + ", ".join(self.returns)]
        params = ", ".join(a.name for a in self.args)
        return f"def {name}({params}):\n" + "".join(f"    {line}\n" for line in body)

    def build(self, name="program"):
        """A fresh function object; its source is registered with linecache."""
        text = self.source(name)
        filename = f"<fuzz-program-{abs(hash(text)):x}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"np": np}
        exec(compile(text, filename, "exec"), namespace)  # noqa: S102 -- generated test code
        function = namespace[name]
        function.__fusejit_source__ = text  # the oracle reads its precision from the source
        return function

    def make_inputs(self, seed: int) -> list:
        rng = np.random.default_rng(seed)
        args = [make_arg(arg, rng, self.specials, self.wide_ints) for arg in self.args]
        return [np.asfortranarray(a) if self.fortran and np.ndim(a) > 1 else a for a in args]

    def __repr__(self):
        flags = (f"specials={self.specials}, wide_ints={self.wide_ints}, "
                 f"inexact={self.inexact}, fortran={self.fortran}")
        shapes = ", ".join(f"{a.name}: {a.kind} {a.dtype}{list(a.shape)}" for a in self.args)
        return f"Program({flags}; {shapes})\n{self.source()}"


SPECIAL_VALUES = (np.nan, np.inf, -np.inf, -0.0, 1e-310, 5e-39)


def make_arg(arg: Arg, rng, specials=False, wide_ints=False):
    dtype = np.dtype(arg.dtype)
    if arg.kind == "pyfloat":
        return float(np.round(rng.standard_normal(), 3))
    shape = arg.shape if arg.kind == "array" else ()
    if dtype.kind == "f":
        values = np.asarray(rng.standard_normal(shape) * 2, dtype=dtype)
        if specials and values.size:
            mask = rng.random(shape) < 0.2
            values[mask] = rng.choice(np.array(SPECIAL_VALUES, dtype=dtype), size=mask.sum())
    elif dtype.kind == "i":
        info = np.iinfo(dtype)
        low, high = (info.min, info.max) if wide_ints else (-6, 7)
        values = rng.integers(low, high, size=shape, dtype=dtype, endpoint=wide_ints)
    else:
        values = rng.random(shape) < 0.5
    values = np.asarray(values, dtype=dtype)
    return values if arg.kind == "array" else values[()]
