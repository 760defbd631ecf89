"""Turning ``--arg p.attn.w=f32[768,2304]`` specs and ``FILE.py:FUNC`` into real objects."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import numpy as np

from .ir.types import SHORT_NAMES, parse_dtype

_ARRAY_SPEC = re.compile(r"^(?P<dtype>[a-z]+[0-9]*)\[(?P<dims>[0-9, ]*)\]$")


class CliError(Exception):
    """A user mistake on the command line: printed as one line, exit code 2."""


def load_function(target: str):
    """``path/to/model.py:func`` -> (module, function)."""
    path, sep, name = target.rpartition(":")
    if not sep or not path:
        raise CliError(f"expected FILE.py:FUNC, got {target!r}")
    file = Path(path)
    if not file.is_file():
        raise CliError(f"not a file: {path}" if file.exists() else f"no such file: {path}")
    module_name = f"fusejit_user_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None:
        raise CliError(f"not a Python file: {path} (expected FILE.py:FUNC)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    folder = str(file.resolve().parent)   # its sibling modules, as ``python FILE.py`` finds
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise CliError(f"{path} has no function {name!r}")
    return module, fn


def parse_value(text: str, rng):
    """``f32[2,3]`` -> a random array; anything else -> a Python literal (static)."""
    match = _ARRAY_SPEC.match(text.strip())
    if match:
        try:
            dtype = parse_dtype(match["dtype"])
        except (KeyError, TypeError) as exc:
            raise CliError(f"unknown dtype {match['dtype']!r} (use one of "
                           f"{' '.join(SHORT_NAMES)})") from exc
        dims = tuple(int(d) for d in match["dims"].replace(" ", "").split(",") if d)
        return random_array(dims, dtype, rng)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise CliError(f"cannot parse argument value {text!r}: expected e.g. f32[256,1024] "
                       "or a Python literal") from exc


def random_array(shape, dtype, rng):
    """Random values made in ``dtype`` itself (no float64 array three times the size first)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape, dtype=np.uint8).view(np.bool_)
    if dtype.kind in "iu":
        return rng.integers(0, 16, size=shape, dtype=dtype)
    if dtype in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def build_arguments(fn, specs, module, seed=0):
    """Positional arguments for ``fn`` from ``name=value`` specs or ``module.example_args()``."""
    if not specs:
        if hasattr(module, "example_args"):
            result = module.example_args()
            return (tuple(result[0]), dict(result[1])) if _is_pair(result) else (tuple(result), {})
        raise CliError("give the arguments with --arg NAME=f32[...] or define example_args()")
    rng = np.random.default_rng(seed)
    values: dict = {}
    seen = set()
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep or not all(name.strip().split(".")):
            raise CliError(f"--arg expects NAME=VALUE, got {spec!r}")
        if name.strip() in seen:
            raise CliError(f"--arg {name.strip()} is given twice")
        seen.add(name.strip())
        _insert(values, name.strip().split("."), parse_value(text, rng))
    return _in_signature_order(fn, _listify(values))


def _in_signature_order(fn, values: dict) -> tuple[tuple, dict]:
    """The named values as positional arguments in ``fn``'s parameter order (so the IR lists
    them as the source does), up to the first one not given; the rest as keywords."""
    positional = []
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return (), values
    parameters = list(parameters)
    takes_any = any(p.kind == p.VAR_KEYWORD for p in parameters)
    unknown = [name for name in values if name not in {p.name for p in parameters}]
    if unknown and not takes_any:
        raise CliError(f"--arg {unknown[0]}: {fn.__name__}() has no parameter named "
                       f"{unknown[0]!r} (it takes {', '.join(p.name for p in parameters)})")
    for parameter in parameters:
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD) \
                or parameter.name not in values:
            break
        positional.append(values.pop(parameter.name))
    return tuple(positional), values


def _is_pair(result) -> bool:
    return isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)


def _insert(tree: dict, path, value):
    for part in path[:-1]:
        tree = tree.setdefault(part, {})
    tree[path[-1]] = value


def _listify(tree):
    """Nested names ``layers.0.w`` make lists when every key is a digit."""
    if not isinstance(tree, dict):
        return tree
    converted = {k: _listify(v) for k, v in tree.items()}
    if converted and all(k.isdigit() for k in converted):
        return [converted[k] for k in sorted(converted, key=int)]
    return converted
