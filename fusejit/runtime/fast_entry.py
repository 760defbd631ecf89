"""``CompiledEntry.run`` as generated straight-line Python, for the entries most calls reach.

A replay's entry does the same few things every call: take the arguments out of the flattened
leaves, re-read captured arrays, check that the arrays the program writes share memory with
nothing else, run the program, copy the written values into the caller's arrays and build
the result. The general path does each with loops over the trace's records; here each becomes
a line of its own, with every check that can be answered cheaply answered inline. Whatever
the cheap checks cannot vouch for (a captured array that changed, an argument that is a view,
a read-only or strided written array) goes to the general path, which decides what to do: a
``fast_run`` returns exactly what ``general(leaves)`` would."""
from __future__ import annotations

import types

import numpy as np

from ..tracer import layouts, pystate, unflatten
from ..tracer.captures import ContainerChanged
from ..tracer.returned_views import apply_views
from . import undo
from .device import is_device_array
from .program import GuardFailed

LAID_OUT_OTHERWISE = ("an array is laid out otherwise than when traced, and the trace "
                      "reshaped it (or a value computed from it) into a view or a copy as "
                      "its strides allowed")


def fast_entry(entry, general):
    """The generated ``fast_run(leaves)`` of ``entry``, falling back on ``general``; None
    for the entries only the general path serves (attribute rebinding, deferred writes...)."""
    trace, program = entry.trace, entry.program
    if trace.attr_writes or entry.copied_views \
            or getattr(program, "deferred", None) \
            or any(order is not None for order in entry.target_orders) \
            or any(m.target != "arg" for m in trace.mutations):
        return None
    names = dict(ndarray=np.ndarray, as_array=as_array, run=program.run, general=general,
                 unflatten=unflatten, treedef=trace.out_treedef, hold=layouts.hold,
                 layouts=trace.layouts, capture_layouts=trace.capture_layouts,
                 GuardFailed=GuardFailed, laid_out=LAID_OUT_OTHERWISE,
                 write_back=program.write_back, recording=undo.recording)
    lines = ["def fast_run(leaves):"]
    if trace.layouts is not None:
        lines += ["    if not hold(layouts, leaves):", "        raise GuardFailed(laid_out)"]
    _plain_read_lines(trace, lines, names, entry.owner)
    if trace.containers:   # ``for layer in net.layers``: the items the trace looped over
        names["containers"], names["ContainerChanged"] = trace.containers, ContainerChanged
        lines += ["    try:", "        for check in containers: check.verify(leaves)",
                  "    except ContainerChanged as changed:",
                  "        raise GuardFailed(str(changed)) from None"]
    arguments = _argument_lines(trace, lines)
    captured = _capture_lines(trace, lines, names)
    targets = _write_check_lines(trace, arguments, captured, lines)
    inputs = _in_order_lines(entry, arguments, captured, lines)
    body = [f"values = run([{', '.join(inputs)}])"]
    body += [f"write_back({target}, values[{m.output}])"
             for target, m in zip(targets, trace.mutations, strict=True)]
    if program.caller_writes:   # its writes into the caller's arrays are undone if it fails
        lines += ["    with recording():"] + [f"        {line}" for line in body]
    else:
        lines += [f"    {line}" for line in body]
    lines.append(_return_line(trace, names))
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<fusejit entry of {program.graph.name}>", "exec"), names)  # noqa: S102
    return names["fast_run"]


def _plain_read_lines(trace, lines: list, names: dict, owner) -> None:
    """The globals, closure cells and attributes whose plain values the trace read (``x *
    SCALE``, ``if self.bias is not None``): a global still bound to the same object passes at
    the cost of a dict lookup."""
    names["absent"], names["owner"], names["no_dict"] = pystate.ABSENT, owner, {}
    names["module_type"], names["method_of"] = types.ModuleType, pystate.method_of
    walked: dict = {}
    for k, read in enumerate(trace.plain_reads):
        names[f"read{k}"], names[f"value{k}"] = read, read.value
        alias = type(read.value) is pystate.AliasOf
        if alias and read.source[0] == read.first[0][0] == "global":   # ``MODEL.layers[1]``
            first = _global_walk(k, read.first[0], read.first[1], None, names, walked, lines)
            found = _global_walk(k, read.source, read.path, None, names, walked, lines)
            lines.append(f"    if ({found} is not {first} or {found} is absent) and "
                         f"not read{k}.holds():")
        elif read.value is pystate.ABSENT or alias:
            lines.append(f"    if not read{k}.holds():")   # nothing there: an inline step
            #                                                 that does not lead on would pass
        elif hasattr(read, "steps"):   # ``config.SCALE``: ``code_reads.ChainRead``
            _chain_lines(k, read, lines, names)
        elif read.source[0] == "global":   # ``x * SCALE``, or ``self.s`` of ``MODEL.forward``
            found = _global_walk(k, read.source, read.path, read.cls, names, walked, lines)
            lines.append(f"    if {found} is not value{k} and not read{k}.holds():")
        else:
            lines.append(f"    if not read{k}.holds():")
        lines.append(f"        raise GuardFailed(read{k}.failure())")
    for k, read in enumerate(trace.attribute_reads):
        names[f"attribute{k}"], names[f"held{k}"] = read, read.value
        check = f"not attribute{k}.holds(leaves, owner)"
        if type(read.value) is pystate.AliasOf:   # two places reaching one object
            first = _inline_walk(k, *_root(read.first[0]), read.first[1], None, names,
                                 walked, lines)
            found = _inline_walk(k, *_root(read.leaf), read.steps, None, names, walked, lines)
            check = f"({found} is not {first} or {found} is absent) and {check}"
        elif read.value is pystate.PRESENT:   # ``"bias" in self.params``: anything there
            found = _inline_walk(k, *_root(read.leaf), read.steps, None, names, walked, lines)
            check = f"{found} is absent and {check}"
        elif read.value is not pystate.ABSENT:   # else walked in full, as a plain read's
            found = _inline_walk(k, *_root(read.leaf), read.steps, read.cls, names, walked,
                                 lines)
            check = f"{found} is not held{k} and {check}"
        lines += [f"    if {check}:",
                  f"        raise GuardFailed(attribute{k}.failure(leaves, owner))"]


def _global_walk(k: int, source: tuple, path: tuple, cls, names: dict, walked: dict,
                 lines: list) -> str:
    """The expression of what ``path`` below the global ``source`` finds, walked inline; the
    global's value walked once for all the reads below it."""
    module = f"globals{k}_{len(names)}"   # a name no other read's walk took
    names[module] = source[1]
    found = f"{module}.get({source[2]!r}, absent)"
    if not path:
        return found
    root = ("global", id(source[1]), source[2])
    if root not in walked:
        walked[root] = f"w{len(walked)}"
        lines.append(f"    {walked[root]} = {found}")
    return _inline_walk(k, root, walked[root], path, cls, names, walked, lines)


def _root(leaf: int) -> tuple:
    """(the path key, the expression) of an attribute read's root: argument ``leaf``, or the
    compiled method's object (-1)."""
    return (("owner",), "owner") if leaf < 0 else ((leaf,), f"leaves[{leaf}]")


def _inline_walk(k: int, path: tuple, here: str, steps: tuple, cls, names: dict,
                 walked: dict, lines: list) -> str:
    """The name of a local holding what ``steps`` below ``here`` (an expression, known as
    ``path``) find, walked inline: each step only where the object is of the kind it reads,
    else ``absent`` (and the read's ``holds`` walks it in full); a last method step by its
    class ``cls`` while the object is of that class and has no attribute of its own of that
    name. ``walked``: the locals of the paths walked before, by path, so that
    ``net.layers[3]`` is walked once for all the reads below it."""
    for j, (kind, key) in enumerate(steps):
        path += ((kind, key),)
        if path in walked:
            here = walked[path]
            continue
        if kind == "attr":
            step = f"getattr({here}, '__dict__', no_dict).get({key!r}, absent)"
        elif kind == "item" and type(key) not in _LITERAL_KEYS:   # ``nan``: no literal
            return "absent"
        elif kind == "item":
            step = f"{here}.get({key!r}, absent) if type({here}) is dict else " + (
                f"{here}[{key!r}] if type({here}) is list and -len({here}) <= {key!r} < "
                f"len({here}) else absent" if type(key) is int else "absent")
        elif kind == "method" and j == len(steps) - 1 and cls is not None:
            names[f"owner_cls{k}"] = cls
            step = (f"getattr(owner_cls{k}, {key!r}, absent) if type({here}) is owner_cls{k} "
                    f"and {key!r} not in getattr({here}, '__dict__', no_dict) else absent")
        else:
            return "absent"
        here = walked[path] = f"w{len(walked)}"
        lines.append(f"    {here} = {step}")
    return here


_LITERAL_KEYS = (str, int, bool, bytes, type(None))   # keys whose repr reads back as them
_STEP = {"module": "o.__dict__.get({name!r}, absent) if type(o) is module_type else absent",
         "object": "o.__dict__.get({name!r}, absent) if type(o) is {cls} else absent",
         "item": "o.get({name!r}, absent) if type(o) is dict else absent",
         "index": "o[{name!r}] if type(o) is list and -len(o) <= {name!r} < len(o) else absent",
         "method": "method_of(o, {name!r}) if type(o) is {cls} else absent",
         "class": "getattr(o, {name!r}, absent) if type(o) is type else absent"}


def _chain_lines(k: int, read, lines: list, names: dict) -> None:
    """A chain walked again inline, each step only where the object is of the kind traced
    (else ``read.holds()`` walks it in full): no call while it holds."""
    names[f"root{k}"] = read.root
    lines.append(f"    o = root{k}.get({read.steps[0]!r}, absent)")
    for j, (kind, name, cls) in enumerate(read.steps[1:]):
        names[f"cls{k}_{j}"] = cls
        lines.append("    o = " + _STEP[kind].format(name=name, cls=f"cls{k}_{j}"))
    lines.append(f"    if o is not value{k} and not read{k}.holds():")


def _argument_lines(trace, lines: list) -> list[str]:
    """``a0 = leaves[3]``...: each array argument, a Python scalar made a 0-d array."""
    arguments = []
    for position, index in enumerate(trace.arg_leaves):
        lines += [f"    a{position} = leaves[{index}]",
                  f"    if type(a{position}) is not ndarray: a{position} = as_array(a{position})"]
        arguments.append(f"a{position}")
    return arguments


def _capture_lines(trace, lines: list, names: dict) -> list[str]:
    """``c0 = capture0.resolve(leaves)``...: each captured array read again through its path,
    and to the general path (which traces again, or runs eagerly) unless it is still an
    ndarray of the traced shape and dtype, reached by its aliases, laid out as traced."""
    captured = []
    for k, capture in enumerate(trace.captures):
        names.update({f"capture{k}": capture, f"shape{k}": capture.type.shape,
                      f"dtype{k}": capture.type.dtype})
        lines += [f"    c{k} = capture{k}.resolve(leaves)",
                  f"    if type(c{k}) is not ndarray or c{k}.shape != shape{k} or "
                  f"c{k}.dtype != dtype{k}:",
                  "        return general(leaves)"]
        if capture.aliases:
            lines += [f"    if not capture{k}.aliases_hold(leaves, c{k}):",
                      "        return general(leaves)"]
        captured.append(f"c{k}")
    if trace.capture_layouts:
        lines += [f"    if not hold(capture_layouts, ({''.join(c + ', ' for c in captured)})):",
                  "        return general(leaves)"]
    return captured


def _write_check_lines(trace, arguments: list, captured: list, lines: list) -> list[str]:
    """The names of the written arrays, after lines that send the call to the general path
    unless none of them can share memory with another array of the call: every array owns
    its memory (no view), no array is passed twice, and every written one is a writeable
    contiguous ndarray (the general path raises NumPy's error for a read-only one, and runs
    eagerly where writes would overlap)."""
    if not trace.mutations:
        return []
    named = {index: arguments[position] for position, index in enumerate(trace.arg_leaves)}
    targets, extra = [], []
    for m in trace.mutations:
        if m.index not in named:   # written, never read: a leaf of its own
            named[m.index] = f"t{len(extra)}"
            extra.append(named[m.index])
            lines.append(f"    {named[m.index]} = leaves[{m.index}]")
        targets.append(named[m.index])
    written = list(dict.fromkeys(targets))
    unsafe = [f"type({t}) is not ndarray or {t}.base is not None or not "
              f"{t}.flags.writeable or not {t}.flags.c_contiguous" for t in written]
    unsafe += [f"(type({a}) is ndarray and {a}.base is not None)"
               for a in arguments + captured if a not in written]
    everything = arguments + captured + extra
    if len(everything) > 1:
        unsafe.append(f"len({{{', '.join(f'id({a})' for a in everything)}}}) < "
                      f"{len(everything)}")
    lines.append("    if (" + " or\n            ".join(unsafe) + "):")
    lines.append("        return general(leaves)")
    return targets


def _in_order_lines(entry, arguments: list, captured: list, lines: list) -> list[str]:
    """The program's inputs: the arrays compiled in memory order transposed into it (under
    new names: a written array takes its values in its own order)."""
    names = arguments + captured
    for position, order in entry.orders:
        lines.append(f"    {names[position]}_t = {names[position]}.transpose({order!r})")
        names[position] += "_t"
    return names


def _return_line(trace, names: dict) -> str:
    results = [_output_expression(leaf, position, names)
               for position, leaf in enumerate(trace.out_leaves)]
    treedef = trace.out_treedef
    if treedef.flat_tuple and len(results) == len(treedef.children):
        return f"    return ({''.join(r + ', ' for r in results)})"
    if treedef.kind == "leaf" and len(results) == 1:
        return f"    return {results[0]}"
    return f"    return unflatten(treedef, [{', '.join(results)}])"


def _output_expression(leaf, position: int, names: dict) -> str:
    """What ``entries._output`` computes for this leaf, as an expression over ``values``,
    ``leaves`` and the captured arrays ``c0``..."""
    if leaf.kind == "arg":
        if leaf.view:
            names["argument_view"] = argument_view
            return f"argument_view(leaves[{leaf.index}], {leaf.view!r})"
        return f"leaves[{leaf.index}]"
    if leaf.kind == "capture":
        return f"c{leaf.index}"
    if leaf.kind == "view":   # a view of an argument or a captured array (not "copied")
        names["apply_views"], names[f"views{position}"] = apply_views, leaf.views
        base = f"leaves[{leaf.index}]" if leaf.view == "arg" else f"c{leaf.index}"
        return f"apply_views({base}, views{position})"
    if leaf.kind == "const":
        names[f"const{position}"] = leaf.const
        copy = ".copy(order=\"K\")" if isinstance(leaf.const, np.ndarray) else ""
        return f"const{position}{copy}"
    value = f"values[{leaf.index}]"
    if leaf.pyfloat or leaf.pyint or leaf.pybool:
        names["host_scalar"] = host_scalar
        kind = "float" if leaf.pyfloat else "int" if leaf.pyint else "bool"
        return f"{kind}(host_scalar({value}))"
    if leaf.view:
        names["argument_view"] = argument_view
        return f"argument_view({value}, {leaf.view!r})"
    return f"{value}[()]" if leaf.scalar else value


def host_scalar(value):
    """A program's 0-d value, read back from the device where it is there (``float`` of a
    device array raises)."""
    return value if isinstance(value, (np.ndarray, np.generic)) else value[()]


def argument_view(array, view: str):
    """A new view of an argument or a result (``x.reshape(x.shape)``), read-only where
    NumPy's was; or a copy (one output that NumPy returned as two arrays); or the array
    itself made read-only ("frozen"). A device array is handed out as it is."""
    if type(array) is not np.ndarray:
        return array
    if view == "copy":
        return array.copy()
    if view == "frozen":   # the output itself, read-only as NumPy's result was
        array.flags.writeable = False
        return array
    result = array.view()
    if view == "ro":
        result.flags.writeable = False
    return result


def as_array(leaf):
    if type(leaf) is np.ndarray or is_device_array(leaf):
        return leaf
    return np.asarray(leaf)
