"""Small readers of a code object's instructions, shared by ``code_reads`` (the chains of
names code loads) and ``whole_uses`` (where it uses a container whole)."""
from __future__ import annotations

import dis

LOADS = ("LOAD_ATTR", "LOAD_METHOD")
STORES = ("STORE_ATTR", "DELETE_ATTR")
SUBSCRIPTS = ("BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR")
_CALLS = ("PRECALL", "CALL")
_LOOKAHEAD = 24   # instructions of a default looked through to its call


def instructions_of(code) -> list:
    """The code's instructions (an ``EXTENDED_ARG``'s argument is in the next)."""
    return [ins for ins in dis.get_instructions(code) if ins.opname != "EXTENDED_ARG"]


def subscript_of(instructions: list, k: int) -> tuple:
    """(the subscript's opname, the index after it) where ``instructions[k:]`` subscript by
    the constant just loaded, past the copies an augmented assignment makes; (None, k)."""
    opnames = [opname(instructions, j) for j in range(k, k + 3)]
    if opnames[0] in SUBSCRIPTS:
        return opnames[0], k + 1
    if opnames[:2] == ["DUP_TOP_TWO", "BINARY_SUBSCR"]:             # Python 3.10
        return "STORE_SUBSCR", k + 2
    if opnames == ["COPY", "COPY", "BINARY_SUBSCR"] and \
            [instructions[j].arg for j in (k, k + 1)] == [2, 2]:   # 3.11 on
        return "STORE_SUBSCR", k + 3
    return None, k


def get_key(instructions: list, k: int) -> bool:
    """``instructions[k]`` loads a constant key as the first argument of a ``.get`` call
    (``d.get("k")``, ``d.get("k", default)``)."""
    before = instructions[k - 1] if k >= 1 else None
    return (before is not None and before.opname in LOADS and before.argval == "get"
            and opname(instructions, k) == "LOAD_CONST" and is_key(instructions[k].argval)
            and call_after(instructions, k + 1, 1))


def call_after(instructions: list, k: int, through: int, defaults: int = 1) -> bool:
    """The call whose ``through``-th argument the constant just loaded is comes from ``k``
    on: after nothing, or after the code of at most ``defaults`` more (``{}``,
    ``self.base_lr``, ``float(0.1)``), with no branch in it."""
    depth = 0   # what the default's code left on the stack so far
    for ins in instructions[k:k + _LOOKAHEAD]:
        if ins.opname in _CALLS and depth <= defaults:
            return ins.arg == through + depth
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs or ins.opname in STORES:
            return False
        try:
            depth += dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT
                                      else None)
        except ValueError:   # an opcode with no fixed effect
            return False
        if depth < 0:
            return False
    return False


def is_key(value) -> bool:
    """A str or int, or a tuple of them (``TABLE[1, "a"]``)."""
    return type(value) in (str, int) or (type(value) is tuple and 0 < len(value) <= 8 and
                                         all(type(v) in (str, int) for v in value))


def opname(instructions: list, k: int):
    return instructions[k].opname if k < len(instructions) else None
