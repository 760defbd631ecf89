"""The hypothesis strategy ``programs()``: statements drawn one at a time, kept if NumPy runs them.

Each maker draws one statement (an assignment, an in-place update, or an ``if``/``else`` on
data) over the values defined so far and returns ``(lines, new_value)``; ``Builder`` runs the
prefix plus the candidate eagerly and keeps it only if NumPy accepts it.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.programs import (
    BINARY_FUNCS,
    BINARY_OPERATORS,
    CONSTANTS,
    DISCONTINUOUS_BINARY,
    DISCONTINUOUS_UNARY,
    DTYPES,
    INEXACT_BINARY,
    INEXACT_REDUCTIONS,
    INEXACT_UNARY,
    INT_EXPONENTS,
    LARGE,
    MAX_NDIM,
    MAX_SIZE,
    REDUCTIONS,
    UNARY_FUNCS,
    Arg,
    Program,
)

# Known, already-filed bugs the generator can steer around so a run finds *new* ones:
# ``FUSEJIT_FUZZ_AVOID=gather-size1,...`` (see README.md). Off by default: CI sees every bug.
AVOID = frozenset(filter(None, os.environ.get("FUSEJIT_FUZZ_AVOID", "").split(",")))


class Rejected(Exception):
    """The candidate statement does not run eagerly (or makes an unwanted value)."""


@dataclass
class Value:
    name: str
    exact: bool
    is_arg: bool = False


@dataclass
class Builder:
    draw: object
    program: Program
    values: list[Value] = field(default_factory=list)
    counter: int = 0

    def run(self, lines) -> dict:
        """Run the program prefix ``lines`` eagerly on the sample arguments; its locals."""
        program = self.program
        text = "def _prefix(" + ", ".join(a.name for a in program.args) + "):\n"
        text += "".join(f"    {line}\n" for line in lines) + "    return locals()\n"
        namespace = {"np": np}
        exec(compile(text, "<fuzz-prefix>", "exec"), namespace)  # noqa: S102
        inputs = program.make_inputs(0)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                return namespace["_prefix"](*inputs)
            except Exception as exc:  # noqa: BLE001 -- any NumPy refusal rejects the candidate
                raise Rejected(str(exc)) from exc

    def accept(self, lines, new: Value | list[Value] | None) -> bool:
        try:
            env = self.run(self.program.lines + lines)
        except Rejected:
            return False
        news = [] if new is None else new if isinstance(new, list) else [new]
        if not all(acceptable(env[value.name]) for value in news):
            return False
        self.program.lines.extend(lines)
        for value in news:
            self.values.append(value)
            self.program.inexact |= not value.exact
        return True

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter - 1}"

    def pick(self, env, *, exact=False, arrays=False, min_ndim=0, kinds=None):
        """A defined value (``Value``) matching the filters, or None."""
        pool = [v for v in self.values if _matches(env.get(v.name), v, exact, arrays, min_ndim,
                                                   kinds)]
        return self.draw(st.sampled_from(pool)) if pool else None

    def operand(self, env, exact=False):
        """A value or a scalar constant of any Python/NumPy kind: ``(text, exact)``."""
        if self.draw(st.integers(0, 3)) == 0:
            return self.draw(st.sampled_from(CONSTANTS)), True
        value = self.pick(env, exact=exact)
        return (value.name, value.exact) if value is not None else ("2", True)


def _matches(concrete, value, exact, arrays, min_ndim, kinds) -> bool:
    if not isinstance(concrete, (np.ndarray, np.generic, float)):
        return False
    dtype = np.asarray(concrete).dtype
    return not ((exact and not value.exact and dtype.kind == "f")
                or (arrays and not isinstance(concrete, np.ndarray))
                or np.ndim(concrete) < min_ndim
                or (kinds is not None and dtype.kind not in kinds))


def acceptable(value) -> bool:
    if not isinstance(value, (np.ndarray, np.generic)):
        return False
    dtype = np.asarray(value).dtype
    return dtype.name in DTYPES and value.size <= MAX_SIZE and np.ndim(value) <= MAX_NDIM


def kind_of(env, name) -> str:
    return np.asarray(env[name]).dtype.kind


# -- statement makers: (builder, env) -> (lines, new Value or None) ----------------------------
def make_unary(b: Builder, env):
    func = b.draw(st.sampled_from(UNARY_FUNCS))
    x = b.pick(env, exact=func in DISCONTINUOUS_UNARY)
    if x is None:
        return None
    spelled = {"negative": f"-{x.name}", "absolute": f"abs({x.name})", "invert": f"~{x.name}"}
    text = spelled.get(func) if b.draw(st.booleans()) else None
    name = b.fresh()
    exact = x.exact and func not in INEXACT_UNARY
    return [f"{name} = {text or f'np.{func}({x.name})'}"], Value(name, exact)


def make_binary(b: Builder, env):
    use_operator = b.draw(st.booleans())
    op = b.draw(st.sampled_from(BINARY_OPERATORS if use_operator else BINARY_FUNCS))
    gated = op in DISCONTINUOUS_BINARY
    left, left_exact = b.operand(env, exact=gated)
    if op == "**" and left in env and kind_of(env, left) in "iub":
        right, right_exact = b.draw(st.sampled_from(INT_EXPONENTS)), True
    else:
        right, right_exact = b.operand(env, exact=gated)
    if left not in env and right not in env:
        return None                  # constants only: not a traced computation
    if b.draw(st.booleans()):
        left, right, left_exact, right_exact = right, left, right_exact, left_exact
    if op == "**" and right in env and kind_of(env, right) in "iub":
        return None                  # integer powers with traced exponents can raise on data
    name = b.fresh()
    text = f"{left} {op} {right}" if use_operator else f"np.{op}({left}, {right})"
    exact = left_exact and right_exact and op not in INEXACT_BINARY
    return [f"{name} = {text}"], Value(name, exact)


def _axis_text(b: Builder, ndim: int, allow_tuple=True):
    """``None`` (omitted or spelled), an int, a negative int, or a tuple of axes."""
    form = b.draw(st.sampled_from(["omit", "none", "int", "negative", "tuple"]))
    if ndim == 0 or form == "omit":
        return None
    if form == "none":
        return "None"
    if form == "int":
        return str(b.draw(st.integers(0, ndim - 1)))
    if form == "negative":
        return str(-b.draw(st.integers(1, ndim)))
    if not allow_tuple:
        return None
    axes = b.draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    spelled = [str(a - ndim) if b.draw(st.booleans()) else str(a) for a in axes]
    return "(" + ", ".join(spelled) + ("," if len(spelled) == 1 else "") + ")"


def make_reduction(b: Builder, env):
    func = b.draw(st.sampled_from(REDUCTIONS))
    discontinuous = func in ("argmax", "argmin", "any", "all")
    x = b.pick(env, exact=discontinuous)
    if x is None:
        return None
    ndim = np.ndim(env[x.name])
    axis = _axis_text(b, ndim, allow_tuple=func not in ("argmax", "argmin"))
    kwargs = [] if axis is None else [f"axis={axis}"]
    if b.draw(st.booleans()):
        kwargs.append("keepdims=True")
    name = b.fresh()
    if b.draw(st.booleans()) and isinstance(env[x.name], np.ndarray):
        text = f"{x.name}.{func}({', '.join(kwargs)})"
    else:
        text = f"np.{func}({', '.join([x.name] + kwargs)})"
    exact = x.exact and func not in INEXACT_REDUCTIONS
    return [f"{name} = {text}"], Value(name, exact)


def _reshape_targets(shape):
    size = int(np.prod(shape, dtype=np.int64))
    targets = [(-1,), (size,), (1,) + shape, shape + (1,), tuple(reversed(shape))]
    if len(shape) >= 2:
        targets.append((shape[0] * shape[1],) + shape[2:])
        targets.append(shape[:-2] + (-1,))
    return targets


def make_movement(b: Builder, env):
    x = b.pick(env)
    if x is None:
        return None
    concrete = env[x.name]
    shape, ndim = np.shape(concrete), np.ndim(concrete)
    kind = b.draw(st.sampled_from(["reshape", "transpose", "T", "swapaxes", "expand_dims",
                                   "squeeze", "broadcast_to", "concatenate", "stack", "newaxis"]))
    n = x.name
    if kind == "reshape":
        target = b.draw(st.sampled_from(_reshape_targets(shape)))
        text = f"{n}.reshape({target})" if b.draw(st.booleans()) else f"np.reshape({n}, {target})"
    elif kind == "transpose":
        perm = tuple(b.draw(st.permutations(range(ndim))))
        text = f"np.transpose({n}, {perm})" if perm else f"np.transpose({n})"
    elif kind == "T":
        text = f"{n}.T"
    elif kind == "swapaxes":
        if ndim == 0:
            return None
        i, j = b.draw(st.integers(-ndim, ndim - 1)), b.draw(st.integers(-ndim, ndim - 1))
        text = f"np.swapaxes({n}, {i}, {j})"
    elif kind == "expand_dims":
        axis = b.draw(st.sampled_from(["0", "-1", "(0, -1)", str(ndim)]))
        text = f"np.expand_dims({n}, {axis})"
    elif kind == "squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        axis = b.draw(st.sampled_from(ones)) if ones and b.draw(st.booleans()) else None
        text = f"np.squeeze({n})" if axis is None else f"{n}.squeeze({axis - ndim})"
    elif kind == "broadcast_to":
        target = tuple(3 if d == 1 and b.draw(st.booleans()) else d for d in shape)
        target = b.draw(st.sampled_from([(), (2,)])) + target
        text = f"np.broadcast_to({n}, {target})"
    elif kind in ("concatenate", "stack"):
        other, _ = b.operand(env)
        if other not in env:
            other = f"{n} * 2"
        axis = b.draw(st.integers(-ndim - 1, ndim))
        text = f"np.{kind}([{n}, {other}], axis={axis})"
    else:
        text = b.draw(st.sampled_from([f"{n}[None]", f"{n}[..., None]", f"{n}[:, None]"]))
    name = b.fresh()
    return [f"{name} = {text}"], Value(name, x.exact)


SLICES = (":", "1:", ":-1", "::-1", "::2", "1::2", "-2:", "::-2", "0", "-1", "1", "2:0",
          "...", "None")


def make_slice(b: Builder, env):
    x = b.pick(env, arrays=True, min_ndim=1)
    if x is None:
        return None
    ndim = np.ndim(env[x.name])
    items = b.draw(st.lists(st.sampled_from(SLICES), min_size=1, max_size=ndim))
    name = b.fresh()
    return [f"{name} = {x.name}[{', '.join(items)}]"], Value(name, x.exact)


def make_split(b: Builder, env):
    """``np.split`` into two pieces, often of an elementwise result that only the split sees.
    The pieces are kept as values, or each fed to an elementwise op and joined again (a GLU
    or rotary-embedding shape): what fuse's ``sink_splits`` moves into the operands."""
    x = b.pick(env, arrays=True, min_ndim=1)
    if x is None:
        return None
    shape = np.shape(env[x.name])
    axis = b.draw(st.integers(-len(shape), len(shape) - 1))
    cut = b.draw(st.integers(0, shape[axis]))
    n = x.name
    source = b.draw(st.sampled_from([n, f"{n} * 2 + 1", f"np.abs({n})", f"-{n}"]))
    first, second = b.fresh(), b.fresh()
    lines = [f"{first}, {second} = np.split({source}, [{cut}], axis={axis})"]
    if b.draw(st.booleans()):
        return lines, [Value(first, x.exact), Value(second, x.exact)]
    uses = [b.draw(st.sampled_from(PIECE_USES)) for _ in range(2)]
    lines += [f"{first} = {uses[0].format(first)}", f"{second} = {uses[1].format(second)}"]
    name = b.fresh()
    lines.append(f"{name} = np.concatenate([{first}, {second}], axis={axis})")
    return lines, Value(name, x.exact and all(use in EXACT_PIECE_USES for use in uses))


PIECE_USES = ("{} * 3", "np.abs({}) + 1", "np.sqrt(np.abs({}))", "np.exp({})", "np.tanh({})")
EXACT_PIECE_USES = frozenset(PIECE_USES[:3])


def make_transposed(b: Builder, env):
    """Elementwise work on a transpose, then a reduction, a reshape, a transpose back or
    nothing: what fuse's ``sink_permutes`` moves below the work when the last axis moves."""
    x = b.pick(env, arrays=True, min_ndim=2)
    if x is None:
        return None
    ndim = np.ndim(env[x.name])
    perm = tuple(b.draw(st.permutations(range(ndim))))
    moved = b.fresh()
    lines = [f"{moved} = {x.name}.T" if b.draw(st.booleans())
             else f"{moved} = np.transpose({x.name}, {perm})"]
    use = b.draw(st.sampled_from(PIECE_USES + ("{0} * {0} - 1",)))
    result = b.fresh()
    lines.append(f"{result} = {use.format(moved)}")
    exact_use = use in EXACT_PIECE_USES or use == "{0} * {0} - 1"
    tail = b.draw(st.sampled_from(TRANSPOSED_TAILS))
    if tail.startswith("np.argmax") and not (x.exact and exact_use):
        tail = ""            # an index of a rounded value: no tolerance makes it comparable
    if tail:
        name = b.fresh()
        axis = b.draw(st.integers(-ndim, ndim - 1))
        lines.append(f"{name} = {tail.format(result, axis)}")
        result = name
    exact = x.exact and exact_use and "sum" not in tail
    return lines, Value(result, exact)


TRANSPOSED_TAILS = ("", "{0}.sum(axis={1})", "{0}.max(axis={1}, keepdims=True)",
                    "np.argmax({0}, axis={1})", "{0}.reshape(-1)", "{0}.T", "{0}[..., ::2]")


def make_gather(b: Builder, env):
    x = b.pick(env, arrays=True, min_ndim=1)
    if x is None:
        return None
    shape = np.shape(env[x.name])
    axis = b.draw(st.integers(0, len(shape) - 1))
    size = shape[axis]
    if "gather-size1" in AVOID and size <= 1:
        return None
    ints = b.pick(env, arrays=True, kinds="i")
    if ints is not None and size > 0 and b.draw(st.booleans()):
        index = f"{ints.name} % {size}"
    else:
        picks = b.draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=4)) \
            if size else []
        index = f"np.array({picks}, dtype=np.intp)"
    name = b.fresh()
    return [f"{name} = {x.name}[{':, ' * axis}{index}]"], Value(name, x.exact)


def make_matmul(b: Builder, env):
    x = b.pick(env, arrays=True, min_ndim=1, kinds="fi")
    if x is None:
        return None
    other = b.pick(env, arrays=True, min_ndim=1, kinds="fi")
    choices = [f"{x.name}.T", f"np.swapaxes({x.name}, -1, -2)"]
    if other is not None:
        choices += [other.name, f"{other.name}.T", f"np.swapaxes({other.name}, -1, -2)"]
    right = b.draw(st.sampled_from(choices))
    name = b.fresh()
    text = f"{x.name} @ {right}" if b.draw(st.booleans()) else f"np.matmul({x.name}, {right})"
    exact = x.exact and (other is None or other.exact) and kind_of(env, x.name) != "f"
    return [f"{name} = {text}"], Value(name, exact)


def make_where(b: Builder, env):
    cond = b.pick(env, exact=True)
    if cond is None:
        return None
    left, left_exact = b.operand(env)
    right, right_exact = b.operand(env)
    cond_text = cond.name if kind_of(env, cond.name) == "b" else f"{cond.name} > 0"
    name = b.fresh()
    text = f"np.where({cond_text}, {left}, {right})"
    return [f"{name} = {text}"], Value(name, left_exact and right_exact)


def make_cast(b: Builder, env):
    dtype = b.draw(st.sampled_from(DTYPES))
    to_discrete = dtype in ("int32", "int64", "bool")
    if to_discrete:
        # float -> int of NaN/inf/out-of-range is undefined behaviour in C: only bounded data
        allowed = [v for v in b.values if v.is_arg or kind_of(env, v.name) != "f"]
        if b.program.specials:
            allowed = [v for v in allowed if kind_of(env, v.name) != "f"]
        if dtype == "bool":
            allowed = [v for v in b.values if v.exact or kind_of(env, v.name) != "f"]
        x = b.draw(st.sampled_from(allowed)) if allowed else None
    else:
        x = b.pick(env)
    if x is None or not isinstance(env[x.name], np.ndarray):
        return None
    name = b.fresh()
    form = b.draw(st.sampled_from(["{x}.astype({d})", "np.asarray({x}, dtype={d})",
                                   "np.array({x}, dtype={d})", "np.asarray({x})"]))
    return [f"{name} = " + form.format(x=x.name, d=f"np.{dtype}")], Value(name, x.exact)


def make_clip(b: Builder, env):
    x = b.pick(env, kinds="fi")
    if x is None:
        return None
    low, high = b.draw(st.sampled_from([("-1", "1"), ("0", "None"), ("None", "0.5"),
                                        ("np.float32(-1)", "np.float32(2)")]))
    name = b.fresh()
    return [f"{name} = np.clip({x.name}, {low}, {high})"], Value(name, x.exact)


# NumPy functions that write into their first argument; the masks and indices read the
# target's values only where they are exact (a 1-ulp difference would move them)
WRITERS = {"putmask": "np.putmask({t}, {mask}, {v})", "place": "np.place({t}, {mask}, {v})",
           "put": "np.put({t}, [0, -1], {v})", "fill_diagonal": "np.fill_diagonal({t}, {v})",
           "put_along_axis": "np.put_along_axis({t}, {t}.argmax(axis=-1, keepdims=True), {v}, "
                             "axis=-1)"}


def _inplace(b: Builder, env, target: Value):
    op = b.draw(st.sampled_from(["+=", "-=", "*=", "/=", "[slice] =", "[slice] *=", "out=",
                                 *WRITERS]))
    operand, operand_exact = b.operand(env)
    if op in WRITERS:
        if op == "put_along_axis" and not target.exact:
            return None
        mask = f"{target.name} > 0" if target.exact else f"np.ones({target.name}.shape, bool)"
        line = WRITERS[op].format(t=target.name, mask=mask, v=operand)
    elif op == "out=":
        func = b.draw(st.sampled_from(["add", "multiply", "maximum"]))
        line = f"np.{func}({target.name}, {operand}, out={target.name})"
    elif op.startswith("[slice]"):
        key = b.draw(st.sampled_from(["1:", "::2", "-1", "...", ":, 0", "::-1", "0, 1:"]))
        line = f"{target.name}[{key}] {op.split()[-1]} {operand}"
    else:
        line = f"{target.name} {op} {operand}"
    target.exact &= operand_exact and op not in ("/=",)
    b.program.inexact |= not target.exact
    return [line], None


def make_inplace_intermediate(b: Builder, env):
    pool = [v for v in b.values if not v.is_arg and isinstance(env.get(v.name), np.ndarray)]
    return _inplace(b, env, b.draw(st.sampled_from(pool))) if pool else None


def make_inplace_argument(b: Builder, env):
    pool = [v for v in b.values if v.is_arg and isinstance(env.get(v.name), np.ndarray)]
    return _inplace(b, env, b.draw(st.sampled_from(pool))) if pool else None


CONDITIONS = ("{x}.sum() > 0", "{x}.max() > 0.5", "np.any({x})", "{x}.mean() < 0",
              "float({x}.min()) < -1", "{x}.all()")


def make_branch(b: Builder, env):
    x = b.pick(env)
    if x is None:
        return None
    condition = b.draw(st.sampled_from(CONDITIONS)).format(x=x.name)
    first, second = _maker_pair(b, env)
    if first is None or second is None:
        return None
    (then_lines, then_value), (else_lines, else_value) = first, second
    name = b.fresh()
    then_lines = then_lines[:-1] + [then_lines[-1].replace(then_value.name, name, 1)]
    else_lines = else_lines[:-1] + [else_lines[-1].replace(else_value.name, name, 1)]
    for lines in (then_lines, else_lines):   # both arms must make the same kind of value
        try:
            env_arm = b.run(b.program.lines + lines)
        except Rejected:
            return None
        if not acceptable(env_arm[name]):
            return None
        signature = (type(env_arm[name]), np.shape(env_arm[name]), env_arm[name].dtype)
        if lines is then_lines:
            expected = signature
        elif signature != expected:
            return None
    lines = [f"if {condition}:", *("    " + line for line in then_lines), "else:",
             *("    " + line for line in else_lines)]
    return lines, Value(name, then_value.exact and else_value.exact)


def _maker_pair(b: Builder, env):
    makers = (make_unary, make_binary, make_reduction, make_movement, make_clip)
    return tuple(b.draw(st.sampled_from(makers))(b, env) for _ in range(2))


MAKERS = {"unary": make_unary, "binary": make_binary, "reduction": make_reduction,
          "movement": make_movement, "slice": make_slice, "split": make_split,
          "transposed": make_transposed, "gather": make_gather,
          "matmul": make_matmul, "where": make_where, "cast": make_cast, "clip": make_clip,
          "inplace_intermediate": make_inplace_intermediate,
          "inplace_argument": make_inplace_argument, "branch": make_branch}
WEIGHTS = {"unary": 3, "binary": 5, "reduction": 3, "movement": 3, "slice": 2, "split": 1,
           "transposed": 1, "gather": 1,
           "matmul": 1, "where": 1, "cast": 1, "clip": 1, "inplace_intermediate": 1,
           "inplace_argument": 1, "branch": 1}
_WEIGHTED = tuple(name for name, weight in WEIGHTS.items() for _ in range(weight))


@st.composite
def shapes(draw, max_dims=4):
    """0-d to 4-d; dims of 1 (broadcast), small sizes, and rarely 0 (listed last: hypothesis
    shrinks toward the first choice). With ``LARGE``, dims up to 1,030, a dim that would take
    the shape past 300k elements drawn as 3."""
    if not LARGE:
        return tuple(draw(st.lists(st.sampled_from([2, 3, 1, 4, 0]), max_size=max_dims)))
    dims, size = [], 1
    for dim in draw(st.lists(st.sampled_from([2, 3, 1, 67, 130, 257, 0, 1030]),
                             max_size=max_dims)):
        dim = dim if size * max(dim, 1) <= 300_000 else 3
        dims.append(dim)
        size *= max(dim, 1)
    return tuple(dims)


@st.composite
def argument_lists(draw):
    base = draw(shapes())
    args = []
    for index in range(draw(st.integers(1, 3))):
        name = f"a{index}"
        kind = draw(st.sampled_from(["array", "array", "array", "generic", "pyfloat"]))
        dtype = draw(st.sampled_from(DTYPES))
        if kind == "pyfloat":
            args.append(Arg(name, kind, (), "float64"))
            continue
        shape = tuple(d if draw(st.booleans()) else 1 for d in base)
        shape = shape[draw(st.integers(0, len(shape))):]    # fewer leading dims broadcast
        if draw(st.integers(0, 4)) == 0 and base:            # a weight for matmul
            shape = (base[-1], draw(st.sampled_from([2, 3])))
        args.append(Arg(name, kind, shape if kind == "array" else (), dtype))
    if all(a.kind != "array" for a in args):
        args[0] = Arg("a0", "array", base, args[0].dtype)
    return args


@st.composite
def programs(draw, min_statements=3, max_statements=10) -> Program:
    program = Program(draw(argument_lists()), [], [], specials=draw(st.booleans()),
                      wide_ints=draw(st.integers(0, 3)) == 0,
                      fortran=draw(st.integers(0, 3)) == 0)
    builder = Builder(draw, program, [Value(a.name, True, is_arg=True) for a in program.args])
    for _ in range(draw(st.integers(min_statements, max_statements))):
        for _attempt in range(4):
            env = builder.run(program.lines)
            made = MAKERS[draw(st.sampled_from(_WEIGHTED))](builder, env)
            if made is not None and builder.accept(*made):
                break
    made_values = [v.name for v in builder.values if not v.is_arg]
    if not made_values:
        made_values = [builder.values[0].name]
    returns = [made_values[-1]] + draw(st.lists(st.sampled_from(made_values), max_size=3))
    program.returns = returns
    return program
