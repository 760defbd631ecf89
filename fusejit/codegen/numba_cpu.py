"""Python source for Numba CPU kernels, generated from a ``fused`` node's body.

Sizes are arguments (``n0, n1, ...``), so a kernel is shape-generic: only the rank, the dtypes,
the broadcast pattern of each operand (which dims it reads at index 0) and the scalar body reach
the source. Elementwise kernels loop over the output shape. A reduce kernel loops over its
input's shape with the kept dims outer and the reduced dims inner: *inner* values (the prologue)
are computed per input element, the accumulator lives in a local, and *outer* values (the
reduction's result and the epilogue) are computed once per output element.

Each kernel exists twice. The *row* variant (``kernel_serial``/``kernel_parallel``) reads every
array whose last axis the innermost loop walks through a 1-d row retyped as C-contiguous
(``crow``), so LLVM sees unit stride and vectorizes even when the operand is a strided NumPy
view (a ``split`` or column slice of a matmul result: Numba types those ``A`` and never
vectorizes them, measured 10x slower). It checks those rows' strides first and returns False,
having done nothing, when one is not unit; the caller then runs the *strided* variant
(``strided_serial``/``strided_parallel``), which indexes every array through its strides.
Its loops over the last axis that call vector math are functions of their own, called per
row (``outline``); such a module also has ``short_serial``/``short_parallel``, the row
variants with the loops inline, which rows of fewer than 64 elements run.

Accumulators: f32 ``sum`` adds in f32 within blocks of 256 elements and in f64 across blocks,
rounding once (``reductions``; as accurate as NumPy's pairwise f32 sum); ``prod`` runs in the
native dtype; max/min/argmax/argmin propagate the first NaN like NumPy; any/all take bools;
argmax/argmin over several axes give the flat C-order index.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir import Graph, Lit, Node, Var, ops
from . import interleave, reductions
from .kernel import KernelPlan, plan_kernel
from .outline import RowLoop, outline_rows
from .prelude import LIMITED_NAMES, VECTOR_NAMES
from .vecmath import VECMATH_SAFE_RANGE

INDENT = "    "
VECTOR_CALLS = frozenset(VECTOR_NAMES.values()) | frozenset(LIMITED_NAMES.values())
DECORATOR = '@numba.njit(cache=True, error_model="numpy", fastmath=False{extra})'


def generate_source(body: Graph, in_place=(), vector_bits: int | None = None
                    ) -> tuple[str, KernelPlan]:
    """The module source for ``body`` (no names, no shapes, no source lines) and its plan.

    ``in_place``: (output, input) positions; such an output has no parameter and is stored
    into the input's array, which LLVM then sees as one pointer read and written at the same
    index (two parameters that alias would fail its overlap check and run a scalar loop).
    ``vector_bits``: the vector width each function asks LLVM for (None: LLVM's choice)."""
    plan = plan_kernel(body)
    limited = plan.reduce is None and any(_limited_key(node) for node in body.nodes)
    over = dict(in_place)
    if over and not _stores_after_last_read(plan, body, over, limited):
        raise ValueError(f"{body.name}: outputs {sorted(over)} may not be stored in place: "
                         "only elementwise kernels that run once, or the last pass of a "
                         "row-persistent one, write over their inputs")
    outputs = [name for k, name in enumerate(plan.output_names) if k not in over]
    params = ", ".join(plan.size_names + plan.input_names + outputs)
    text = [_file_header(plan, over), "import numba", "import numpy as np", "",
            "from fusejit.codegen.prelude import *  # noqa: F403", "", ""]
    # A rank-1 elementwise space has no loop to hold the rows but the prange itself, and
    # Numba's parfor loses stores through a row hoisted above it; 1-d views that are
    # unit-stride are C-contiguous already, so they gain nothing from rows anyway.
    row_emitter = _Emitter(plan, body, rows=plan.reduce is not None or plan.rank > 1, over=over,
                           limited=limited)
    row_lines, outlined, loops = _loop_lines(row_emitter), None, []
    if row_emitter.rows and not plan.zero_d and not limited:  # nbig: a parfor reduction
        outlined, loops = outline_rows(row_lines, params.split(", "), plan.rank - 1,
                                       VECTOR_CALLS)
    strided_lines = _loop_lines(_Emitter(plan, body, rows=False, over=over))
    row_chunks = strided_chunks = None
    if plan.chunked:
        row_chunks = _loop_lines(_Emitter(plan, body, rows=True, over=over), chunked=True)
        strided_chunks = _loop_lines(_Emitter(plan, body, rows=False, over=over), chunked=True)
    if not row_emitter.row_arrays and not limited:  # no row, no vector sin: one variant
        text += _functions("kernel", params, strided_lines, plan, vector_bits, strided_chunks)
        text += _aliases("strided", "kernel") + _interleave_lines(plan, body)
        return "\n".join(text).rstrip() + "\n", plan
    guard = []
    if row_emitter.row_arrays:
        checks = " and ".join(f"unit_row({name})" for name in sorted(row_emitter.row_arrays))
        guard = [f"{INDENT}if not ({checks}):", f"{INDENT * 2}return False"]
    if limited:  # an argument beyond vecmath's range: decline, the strided variant uses libm
        guard.append(f"{INDENT}nbig = 0")
        row_lines = row_lines + [f"{INDENT}if nbig:", f"{INDENT * 2}return False"]
    chunks = row_chunks and guard + row_chunks
    if loops:  # rows shorter than MIN_ROW run the loops inline, in ``short_*``
        text += [line for loop in loops for line in _row_function(loop, vector_bits)]
        text += _functions("short", params, guard + row_lines, plan, vector_bits, chunks)
    text += _functions("kernel", params, guard + (outlined if loops else row_lines), plan,
                       vector_bits, chunks)
    text += _functions("strided", params, strided_lines, plan, vector_bits, strided_chunks)
    text += _interleave_lines(plan, body)
    return "\n".join(text).rstrip() + "\n", plan


def _interleave_lines(plan: KernelPlan, body: Graph) -> list[str]:
    return interleave.source_lines(interleave.ways_for(body, plan.reduce is not None))


def _stores_after_last_read(plan: KernelPlan, body: Graph, over: dict[int, int],
                            limited: bool) -> bool:
    """Whether each output in ``over`` is stored after the kernel last reads its input: an
    elementwise kernel that runs once, or the last pass over each row (or column) of a
    reduction without argmax/argmin (which scans its blocks again after the stores)."""
    if plan.reduce is None:
        return not limited
    if any(r.op in ("argmax", "argmin") for r in plan.reduces):
        return False
    # depth >= 1 with one pass: an outer value (the reduced axes have length 1, as an output
    # the shape of its input needs), stored once per row after its only pass, or by a
    # ``columns`` kernel once per column after the loop that read the columns.
    last = plan.passes - 1
    return all(plan.depth.get(body.outputs[k], 0) >= max(last, 1) for k in over)


def _functions(prefix: str, params: str, lines: list[str], plan: KernelPlan,
               vector_bits: int | None, parallel_lines: list[str] | None = None) -> list[str]:
    """``{prefix}_serial`` and ``{prefix}_parallel`` (an alias without a parallel loop; its
    own ``parallel_lines`` when given); both return True once they have run."""
    text = []
    for variant, extra in (("serial", ""), ("parallel", ", parallel=True")):
        if variant == "parallel" and not plan.has_parallel_loop:
            return text + [f"{prefix}_parallel = {prefix}_serial", ""]
        text.append(DECORATOR.format(extra=extra))
        text.append(f"def {prefix}_{variant}({params}):")
        loop = "numba.prange" if variant == "parallel" else "range"
        body = parallel_lines if variant == "parallel" and parallel_lines else lines
        body = [line.replace("$RANGE0", loop).replace("$RANGE", "range") for line in body]
        text += _with_vector_width(body, vector_bits)
        text += [f"{INDENT}return True", "", ""]
    return text


def _row_function(loop: RowLoop, vector_bits: int | None) -> list[str]:
    """An outlined row loop (``outline``) as a function, which both row variants call."""
    return [DECORATOR.format(extra=""), f"def {loop.name}({', '.join(loop.params)}):",
            *_with_vector_width([line.replace("$RANGE", "range") for line in loop.body],
                                vector_bits), "", ""]


def _with_vector_width(lines: list[str], bits: int | None) -> list[str]:
    """``lines`` preceded by a ``vector_width(bits)`` call, and with one more at the top of
    each ``prange`` body, which Numba compiles as a function of its own."""
    if bits is None:
        return lines
    call = f"vector_width({bits})"
    out = [INDENT + call]
    for line in lines:
        out.append(line)
        if "numba.prange(" in line:
            out.append(line[:len(line) - len(line.lstrip())] + INDENT + call)
    return out


def _aliases(alias: str, target: str) -> list[str]:
    return ["", f"{alias}_serial = {target}_serial", f"{alias}_parallel = {target}_parallel", ""]


def _file_header(plan: KernelPlan, over: dict[int, int]) -> str:
    dims = " ".join(plan.loop_dims_text())
    text = (f"# fusejit kernel (generated): target=cpu kind={plan.kind} "
            f"rank={plan.rank} loops=[{dims}]")
    return text + "".join(f"\n# out{k} is written in place over in{j}" for k, j in over.items())


# -- loops --------------------------------------------------------------------------------------
def _loop_lines(emitter: _Emitter, chunked: bool = False) -> list[str]:
    plan = emitter.plan
    if chunked:
        return emitter.chunked_lines()
    if plan.reduce is None:
        rows, inner = emitter.element_lines(emitter.inner_nodes(), emitter.inner_outputs())
        return emitter.nest(list(range(plan.rank)), inner, first=True, before_inner=rows)
    if plan.columns:
        return emitter.nest(plan.outer_kept_dims, emitter.column_lines(), first=True)
    emitter.plan_scratch()
    passes = [emitter.pass_lines(number) for number in range(plan.passes)]
    per_row = passes[0] + emitter.prefetch_lines() + [line for lines in passes[1:]
                                                       for line in lines]
    allocations = emitter.scratch_allocations()
    if allocations:
        return emitter.blocked_nest(plan.kept_dims, allocations, per_row)
    return emitter.nest(plan.kept_dims, per_row, first=True)


# Ops worth a store and a load to avoid recomputing in a later pass over the same row (the row
# is in L1 by then, so a load costs about what an add does).
COSTLY_OPS = frozenset({
    "exp", "expm1", "log", "log1p", "log2", "log10", "tanh", "sigmoid", "erf", "sin", "cos",
    "tan", "sinh", "cosh", "arctan", "arctan2", "pow", "sqrt", "div", "reciprocal",
    "floordiv", "mod"})
SCRATCH_BLOCK = 8   # rows per scratch allocation in the row loop
CHUNKS = 16         # parallel chunks of dim 0 in a reduction over every dim (``chunked``)
COLUMN_CHUNK = 256  # fewest columns per tile of a column reduction split by columns


class _Emitter:
    """Turns body nodes into scalar statements: per element of the space (inner) or once per
    row / output element (outer)."""

    def __init__(self, plan: KernelPlan, body: Graph, rows: bool, over=None, limited=False):
        self.plan, self.body, self.rows, self.limited = plan, body, rows, limited
        self.over = over or {}   # output position -> the input position it is stored into
        self.row_arrays: set[str] = set()   # arrays read or written through ``crow`` rows
        self.row_leads: dict[str, list[str]] = {}   # such an array -> its row's lead indices
        self.names: dict[Var, str] = {}
        self.outer_loaded: set[int] = set()
        for index, node in enumerate(body.nodes):
            for k, var in enumerate(node.outputs):
                self.names[var] = f"v{index}" if len(node.outputs) == 1 else f"v{index}_{k}"
        self.acc_names = {node: f"acc{k}" for k, node in enumerate(plan.reduces)}
        self.scratch: dict[Var, int] = {}   # costly inner value -> the pass that stores it
        self.scratch_out: dict[Var, int] = {}   # scratch value -> the output row that holds it

    # -- scratch rows -------------------------------------------------------------------------
    def plan_scratch(self) -> None:
        """Costly inner values a later pass needs again (softmax's exp: summed in one pass,
        divided in the next) are stored in a row-long scratch array when first computed and
        loaded after that, instead of being recomputed. Only rows over one reduced dim with
        kept dims to loop over qualify (the scratch is one row per block of rows)."""
        plan = self.plan
        if plan.passes < 2 or len(plan.reduced_dims) != 1 or not plan.kept_dims:
            return
        first_pass: dict[Node, int] = {}
        for number in range(plan.passes):
            for node in self._closure(self._wanted(number)):
                first_pass.setdefault(node, number)
        producer = {v: n for n in self.body.nodes for v in n.outputs}
        for number in range(1, plan.passes):
            stack = [producer[v] for v in self._wanted(number) if v in producer]
            seen: set[Node] = set()
            while stack:
                node = stack.pop()
                if node in seen or node in self.acc_names:
                    continue
                seen.add(node)
                if self.plan.region_of[node.outputs[0]] != "inner":
                    continue
                if node.op in COSTLY_OPS and first_pass.get(node, number) < number \
                        and len(node.outputs) == 1:
                    self.scratch.setdefault(node.out, first_pass[node])
                    continue
                stack += [producer[v] for v in node.inputs if isinstance(v, Var) and v in producer]
        order = {node.out: index for index, node in enumerate(self.body.nodes)
                 if len(node.outputs) == 1}
        self.scratch = dict(sorted(self.scratch.items(), key=lambda item: order[item[0]]))
        self.scratch_out = self._scratch_outputs()

    def _scratch_outputs(self) -> dict[Var, int]:
        """Scratch values kept in an output's row instead of a scratch row: an output of the
        value's dtype over the whole space, stored only by the last pass, holds the value from
        the pass that computes it until the last pass reads it back and overwrites it at the
        same index (softmax's exp in the output row it is divided into: no scratch row to
        allocate and keep in cache; measured 10-20% faster at 4096x1024). An output written over
        an input qualifies only if no later pass reads that input."""
        plan, last = self.plan, self.plan.passes - 1
        if plan.zero_d:
            return {}
        free = [k for k in self.inner_outputs(last)
                if self.body.outputs[k].type.shape == tuple(plan.space_shape)]
        chosen: dict[Var, int] = {}
        for var, stored_in in self.scratch.items():
            for k in free:
                if self.body.outputs[k].type.dtype != var.type.dtype:
                    continue
                if k in self.over and any(self.body.inputs[self.over[k]] in self._reads(number)
                                          for number in range(stored_in + 1, plan.passes)):
                    continue
                chosen[var] = k
                free.remove(k)
                break
        return chosen

    def _reads(self, number: int) -> set:
        """The values pass ``number``'s statements read (inputs and scratch values included)."""
        stored = {var for var, stored_in in self.scratch.items() if stored_in < number}
        wanted = self._wanted(number)
        return wanted | {v for node in self._closure(wanted, stored) for v in node.inputs}

    def scratch_allocations(self) -> list[str]:
        dim = self.plan.reduced_dims[0]
        return [f"s_{self.names[var]} = np.empty(n{dim}, {literal_ctor(var.type.dtype)})"
                for var in self.scratch if var not in self.scratch_out]

    def scratch_ref(self, var: Var, shape, exprs, rows: dict[str, str]) -> str:
        """Where ``var``'s scratch value lives at the current element: its scratch row, or
        the output row holding it."""
        k = self.scratch_out.get(var)
        if k is None:
            return f"s_{self.names[var]}[{exprs[self.inner_dim()]}]"
        array = f"in{self.over[k]}" if k in self.over else f"out{k}"
        return self.access(array, self.body.outputs[k].type.shape, shape, exprs, rows)

    def blocked_nest(self, dims, allocations, inner_lines) -> list[str]:
        """``nest`` with the first loop split into blocks of rows that share scratch rows."""
        first, block = dims[0], SCRATCH_BLOCK
        lines = [f"{INDENT}for b{first} in $RANGE0((n{first} + {block - 1}) // {block}):"]
        lines += [INDENT * 2 + line for line in allocations]
        lines.append(f"{INDENT * 2}for i{first} in $RANGE(b{first} * {block}, "
                     f"min(n{first}, b{first} * {block} + {block})):")
        depth = 3
        for dim in dims[1:]:
            lines.append(f"{INDENT * depth}for i{dim} in $RANGE(n{dim}):")
            depth += 1
        return lines + [INDENT * (depth - 1) + line for line in inner_lines]

    def nest(self, dims, inner_lines, first, before_inner=(), blocks=(),
             bounds=None) -> list[str]:
        """Loops over ``dims``; ``before_inner`` lines go right before the innermost loop.
        ``blocks`` (init, update, finish lines of float32-blocked sums) split the innermost
        loop into blocks of ``SUM_BLOCK``, initialising and finishing each block around it.
        ``bounds``: ``{dim: "start, stop"}`` for loops over part of a dim."""
        bounds = bounds or {}
        lines, depth = [], 1
        if self.plan.zero_d:
            # The padded dim of a 0-d space is one element: no loop. (A loop of one iteration
            # that loads from and stores to index 0 made LLVM's vectorizer walk a nested
            # transcendental's expression tree exponentially: minutes for tanh(tanh(x)) in a
            # 0-d reduction, and for cos(tanh(x)) in a 0-d elementwise kernel.)
            lines = [INDENT + line for line in before_inner]
            lines += [f"{INDENT}i{dim} = 0" for dim in dims]
            return lines + list(inner_lines)
        for position, dim in enumerate(dims):
            if position == len(dims) - 1:
                lines += [INDENT * depth + line for line in before_inner]
            if position == len(dims) - 1 and blocks:
                return lines + self._blocked_loop(dim, depth, inner_lines, blocks)
            loop = "$RANGE0" if (first and position == 0) else "$RANGE"
            lines.append(f"{INDENT * depth}for i{dim} in {loop}({bounds.get(dim, f'n{dim}')}):")
            depth += 1
        return lines + [INDENT * (depth - 1) + line for line in inner_lines]

    @staticmethod
    def _blocked_loop(dim, depth, inner_lines, blocks) -> list[str]:
        # The element index is unsigned: with a signed one that starts at j, Numba's negative
        # index wraparound hides unit stride from LLVM, which then gathers instead of loading.
        block, pad = reductions.SUM_BLOCK, INDENT * (depth + 1)
        lines = [f"{INDENT * depth}for j{dim} in range(0, n{dim}, {block}):"]
        lines += [pad + line for init, _, _ in blocks for line in init]
        lines.append(f"{pad}for i{dim} in range(np.uint64(j{dim}), "
                     f"np.uint64(min(n{dim}, j{dim} + {block}))):")
        lines += [pad + line for line in inner_lines]
        return lines + [pad + line.replace("$J", f"j{dim}")
                        for _, _, finish in blocks for line in finish]

    def prefetch_lines(self) -> list[str]:
        """For a row-persistent kernel, after its first pass: ``prefetch_row`` of the next row
        of every input read through rows, so that memory works while the later passes run
        over this row from L1; before, memory sat idle during them. Measured at 4096x1024
        f32 between eager calls (which evict the input from cache): layernorm 1.08-1.17 ->
        0.92-1.00 ms, softmax 1.96-2.05 -> 1.62-1.72 ms. Rows over the last dim only."""
        plan = self.plan
        if (not self.rows or plan.passes < 2 or not plan.kept_dims or plan.zero_d
                or plan.reduced_dims != [plan.rank - 1]):
            return []
        dim = plan.kept_dims[-1]
        index = f"i{dim}"
        leads = {array: [f"{index} + 1" if part == index else part for part in lead]
                 for array, lead in sorted(self.row_leads.items())
                 if array.startswith("in") and index in lead}
        if not leads:
            return []
        lines = [f"{INDENT}if {index} + 1 < n{dim}:"]
        return lines + [f"{INDENT * 2}prefetch_row({array}, ({', '.join(lead)}"
                        f"{',' if len(lead) == 1 else ''}))" for array, lead in leads.items()]

    # -- which values a pass computes ---------------------------------------------------------
    def inner_nodes(self) -> list[Node]:
        return [n for n in self.body.nodes
                if n not in self.acc_names and self.plan.region_of[n.outputs[0]] == "inner"]

    def inner_outputs(self, depth: int | None = None) -> list[int]:
        """Positions of inner body outputs (of the given depth; the last pass: the rest)."""
        plan, last = self.plan, self.plan.passes - 1
        return [k for k, var in enumerate(self.body.outputs)
                if isinstance(var, Var) and plan.region_of.get(var, "inner") == "inner"
                and (depth is None or min(plan.depth.get(var, 0), last) == depth)]

    def pass_lines(self, number: int) -> list[str]:
        """One pass over a row: its accumulations and inner stores, then the outer values the
        finished reductions make available."""
        init, loop, finish = self._pass_parts(number)
        return init + loop + finish

    def chunked_lines(self) -> list[str]:
        """``plan.chunked``: dim 0 split into ``CHUNKS`` chunks in the parallel loop, each
        reducing into its own accumulators (``c_acc``), stored as partials and combined in chunk
        order after the loop; then the outer values, as in ``pass_lines``."""
        init, loop, finish = self._pass_parts(0, {0: "c0 * n0 // nch, (c0 + 1) * n0 // nch"})
        reduces = self._pass_reduces(0)
        names = [self.acc_names[r] for r in reduces]
        # Each accumulator and its companions (acc0_b, acc0_index, ...) private to a chunk.
        private = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")(?=\b|_)")
        partials = [(f"p_{name}", f"c_{name}", reductions.accumulator_dtype(r))
                    for r, name in zip(reduces, names, strict=True)]
        partials += [(f"p_{name}_index", f"c_{name}_index", np.dtype(np.int64))
                     for r, name in zip(reduces, names, strict=True)
                     if r.op in ("argmax", "argmin")]
        lines = [f"{INDENT}nch = min(n0, {CHUNKS})"]
        lines += [f"{INDENT}{partial} = np.empty(nch, {literal_ctor(dtype)})"
                  for partial, _, dtype in partials]
        lines.append(f"{INDENT}for c0 in $RANGE0(nch):")
        lines += [INDENT + private.sub(r"c_\1", line) for line in init + loop]
        lines += [f"{INDENT * 2}{partial}[c0] = {value}" for partial, value, _ in partials]
        lines += [INDENT + line for r, name in zip(reduces, names, strict=True)
                  for line in reductions.init_lines(r, name)]
        lines.append(f"{INDENT}for c0 in range(nch):")
        lines += [INDENT * 2 + line for r, name in zip(reduces, names, strict=True)
                  for line in reductions.combine_lines(r, f"p_{name}", name)]
        return lines + finish

    def _pass_parts(self, number: int, bounds=None) -> tuple[list, list, list]:
        """(accumulator initialisations, the loops over the row, the finished reductions and
        the outer values they make available); ``bounds`` as ``nest``'s."""
        plan = self.plan
        reduces = self._pass_reduces(number)
        stores = self.inner_outputs(number)
        stored = {var for var, stored_in in self.scratch.items() if stored_in < number}
        wanted = self._wanted(number)
        nodes = self._closure(wanted, stored)
        used = wanted | {v for node in nodes for v in node.inputs}
        loaded = [var for var in self.scratch if var in stored and var in used]
        arg_blocked = [r for r in reduces if not plan.zero_d and reductions.block_arg(r)]
        blocked = arg_blocked + [r for r in reduces
                                 if not plan.zero_d and reductions.blocked(r)]
        outer = plan.reduced_dims[:-1]
        lines = [INDENT + line for r in reduces for line in reductions.init_lines(
            r, self.acc_names[r], r in arg_blocked, outer)]
        saved = [var for var, stored_in in self.scratch.items() if stored_in == number]
        rows, element = self.element_lines(nodes, stores, loaded, saved)
        computed = list(element)
        blocks = [reductions.block_lines(r, self.ref(r.inputs[0]), self.acc_names[r], outer)
                  for r in blocked]
        element += [INDENT + line for _, update, _ in blocks for line in update]
        for r in reduces:
            if r not in blocked:
                element += [INDENT + line for line in reductions.update_lines(
                    r, self.ref(r.inputs[0]), self.acc_names[r])]
        loop = self.nest(plan.reduced_dims, element, first=False, before_inner=rows,
                         blocks=blocks, bounds=bounds)
        for r in arg_blocked:
            loop += reductions.arg_rescan_lines(r, self.ref(r.inputs[0]), self.acc_names[r],
                                                plan.reduced_dims, computed, rows, INDENT)
        finish = [f"{INDENT}{self.names[r.out]} = {reductions.final_expr(r, self.acc_names[r])}"
                  for r in reduces]
        return lines, loop, finish + self.outer_lines(number + 1)

    def column_lines(self) -> list[str]:
        """A ``columns`` reduction: accumulator arrays along the last axis, filled by a loop
        over the reduced dims with the last axis innermost (rows read contiguously, SIMD
        across columns), then finished column by column. A float32 sum adds each block of
        ``SUM_BLOCK`` rows in float32 (one rounding per add, as NumPy's own column sum adds
        every row) and the blocks in float64. With kept dims outside it (the parallel loop)
        one such nest runs per outer index; without, the space is split into tiles
        (``_column_tiles``)."""
        plan, last = self.plan, self.plan.rank - 1
        stores = self.inner_outputs(0)
        nodes = self._closure({r.inputs[0] for r in plan.reduces}
                              | {self.body.outputs[k] for k in stores})
        rows, element = self.element_lines(nodes, stores)  # names the loaded inputs first
        if not plan.outer_kept_dims:
            return self._column_tiles(rows, element)
        arrays, init, finish, blocks = self._column_accumulators(element)
        lines = [f"{INDENT}{name} = np.empty(n{last}, {ctor})" for name, ctor in arrays]
        body = self.nest([last], init, first=False)
        if blocks[0]:
            body += self._row_blocks(element, rows, blocks, None)
        else:
            body += self.nest([*plan.reduced_dims, last], element, first=False,
                              before_inner=rows)
        return lines + body + self.nest([last], finish + self.outer_lines(1), first=False)

    def _column_tiles(self, rows, element) -> list[str]:
        """The parallel loop of a column reduction with no kept dim outside it: tiles of
        row chunks (of the first reduced dim, at least ``SUM_BLOCK`` rows each) by column
        chunks, ``CHUNKS`` or fewer. Each row chunk accumulates into its own row of partial
        arrays; after the loop, each column combines its chunks' partials in order and
        finishes. A tall array splits into row chunks only, each thread streaming through
        whole rows (a chunk of 256 columns down all 4096 rows read 1 KiB per row: a column
        sum over 4096x1024 float32 took 0.59 ms, against 0.37 in row chunks); a short wide
        one into column chunks."""
        plan, last, first = self.plan, self.plan.rank - 1, self.plan.reduced_dims[0]
        block = reductions.SUM_BLOCK
        lines = [f"{INDENT}nrc = max(1, min({CHUNKS}, n{first} // {block}))",
                 f"{INDENT}ncc = max(1, min((n{last} + {COLUMN_CHUNK - 1}) // {COLUMN_CHUNK}, "
                 f"{CHUNKS} // nrc))",
                 f"{INDENT}wcc = max(16, ((n{last} + ncc - 1) // ncc + 15) // 16 * 16)",
                 f"{INDENT}ncc = (n{last} + wcc - 1) // wcc"]
        allocations, views, init, combine, blocks = self._column_partials(element)
        bounds = {last: f"np.uint64(c{last} * wcc), "
                        f"np.uint64(min(n{last}, c{last} * wcc + wcc))",
                  first: "rlo, rhi"}
        tile = [f"{INDENT}r{first} = t{first} // ncc",
                f"{INDENT}c{last} = t{first} - r{first} * ncc",
                f"{INDENT}rlo = r{first} * n{first} // nrc",
                f"{INDENT}rhi = (r{first} + 1) * n{first} // nrc", *views]
        tile += self.nest([last], init, first=False, bounds=bounds)
        if blocks[0]:
            tile += self._row_blocks(element, rows, blocks, bounds)
        else:
            tile += self.nest([*plan.reduced_dims, last], element, first=False,
                              before_inner=rows, bounds=bounds)
        lines += allocations + [f"{INDENT}for t{first} in $RANGE0(nrc * ncc):"]
        lines += [INDENT + line for line in tile]
        return lines + self.nest([last], combine + self.outer_lines(1), first=False)

    def _column_partials(self, element: list[str]):
        """(allocations, per-tile views, init, combine, (block init, block finish)) lines of
        a tiled column reduction: partial accumulators by row chunk (``p_acc0[r0]``, seen in a
        tile as ``acc0``), combined per column after the parallel loop."""
        first, rank = self.plan.reduced_dims[0], self.plan.rank
        last = f"i{rank - 1}"
        arrays, init, _, blocks = self._column_accumulators(element)
        allocations = [f"{INDENT}p_{name} = np.empty((nrc, n{rank - 1}), {ctor})"
                       for name, ctor in arrays]
        views = [f"{INDENT}{name} = crow(p_{name}, (r{first},))" for name, _ in arrays]
        combine = []
        for r in self.plan.reduces:
            acc, one = self.acc_names[r], f"{self.acc_names[r]}_one"
            combine += [INDENT + line for line in reductions.init_lines(r, one)]
            combine.append(f"{INDENT}for r{first} in range(nrc):")
            combine += [INDENT * 2 + line for line in reductions.update_lines(
                r, f"p_{acc}[r{first}, {last}]", one)]
            combine.append(f"{INDENT}{self.names[r.out]} = {reductions.final_expr(r, one)}")
        return allocations, views, init, combine, blocks

    def _column_accumulators(self, element: list[str]):
        """(accumulator arrays as (name, dtype constructor), then init, finish and (block
        init, block finish) lines) of a column reduction; the per-element updates are
        appended to ``element``."""
        last = f"i{self.plan.rank - 1}"
        arrays, init, finish, block_init, block_finish = [], [], [], [], []
        for r in self.plan.reduces:
            acc, one = self.acc_names[r], f"{self.acc_names[r]}_one"
            dtype = reductions.accumulator_dtype(r)
            arrays.append((acc, literal_ctor(dtype)))
            init += [INDENT + line for line in reductions.init_lines(r, one)]
            init.append(f"{INDENT}{acc}[{last}] = {one}")
            finish.append(f"{INDENT}{self.names[r.out]} = "
                          f"{reductions.final_expr(r, f'{acc}[{last}]')}")
            if reductions.blocked(r):
                block = f"{acc}_b"
                arrays.append((block, "np.float32"))
                block_init.append(f"{INDENT}{block}[{last}] = np.float32(0)")
                element.append(f"{INDENT}{block}[{last}] = {block}[{last}] + "
                               f"{self.ref(r.inputs[0])}")
                block_finish.append(f"{INDENT}{acc}[{last}] = {acc}[{last}] + "
                                    f"np.float64({block}[{last}])")
                continue
            element.append(f"{INDENT}{one} = {acc}[{last}]")
            element += [INDENT + line for line in reductions.update_lines(
                r, self.ref(r.inputs[0]), one)]
            element.append(f"{INDENT}{acc}[{last}] = {one}")
        return arrays, init, finish, (block_init, block_finish)

    def _row_blocks(self, element, rows, blocks, bounds) -> list[str]:
        """The reduced loops with the first reduced dim in blocks of ``SUM_BLOCK`` rows (of
        its span in ``bounds``, if there), the float32 block sums started before and added
        in after each block."""
        plan, last = self.plan, self.plan.rank - 1
        first, block = plan.reduced_dims[0], reductions.SUM_BLOCK
        start, stop = (bounds or {}).get(first, f"0, n{first}").split(", ")
        inner_bounds = {d: span for d, span in (bounds or {}).items() if d != first}
        lines = [f"{INDENT}for j{first} in range({start}, {stop}, {block}):"]
        lines += [INDENT + line for line in self.nest([last], blocks[0], first=False,
                                                      bounds=inner_bounds)]
        lines.append(f"{INDENT * 2}for i{first} in range(j{first}, "
                     f"min({stop}, j{first} + {block})):")
        lines += [INDENT * 2 + line for line in self.nest(
            [*plan.reduced_dims[1:], last], element, first=False, before_inner=rows,
            bounds=inner_bounds)]
        return lines + [INDENT + line for line in self.nest([last], blocks[1], first=False,
                                                            bounds=inner_bounds)]

    def _pass_reduces(self, number: int) -> list[Node]:
        """The reductions pass ``number`` accumulates (those whose input has that depth)."""
        plan = self.plan
        return [r for r in plan.reduces if plan.depth.get(r.inputs[0], 0) == number]

    def _wanted(self, number: int) -> set:
        """The values pass ``number`` must produce: its reductions' inputs and its stores."""
        return ({r.inputs[0] for r in self._pass_reduces(number)}
                | {self.body.outputs[k] for k in self.inner_outputs(number)})

    def _closure(self, wanted: set, loaded: set = frozenset()) -> list[Node]:
        """The inner nodes ``wanted`` values need, in body order (recomputed in each pass:
        the row's inputs are in cache, so recomputing beats a trip through memory), except
        ``loaded`` values, which come from scratch rows."""
        needed, producer = set(), {v: n for n in self.body.nodes for v in n.outputs}
        stack = [producer[v] for v in wanted if v in producer and v not in loaded]
        while stack:
            node = stack.pop()
            if node in needed or node in self.acc_names:
                continue
            if self.plan.region_of[node.outputs[0]] != "inner":
                continue
            needed.add(node)
            stack += [producer[v] for v in node.inputs
                      if isinstance(v, Var) and v in producer and v not in loaded]
        return [n for n in self.body.nodes if n in needed]

    # -- statements ---------------------------------------------------------------------------
    def element_lines(self, nodes: list[Node], stores: list[int], loaded=(),
                      saved=()) -> tuple[list, list[str]]:
        """(row lines for before the innermost loop, per-element lines); ``loaded`` values
        are read from their scratch rows, ``saved`` ones written to theirs."""
        shape, exprs = self.plan.space("inner")
        rows: dict[str, str] = {}
        positions = {var: j for j, var in enumerate(self.body.inputs)}
        used = sorted({positions[v] for n in nodes for v in n.inputs if v in positions}
                      | {positions[self.body.outputs[k]] for k in stores
                         if self.body.outputs[k] in positions}
                      | {positions[r.inputs[0]] for r in self.plan.reduces
                         if r.inputs[0] in positions})
        lines = []
        for j in used:
            var = self.body.inputs[j]
            access = self.access(f"in{j}", var.type.shape, shape, exprs, rows)
            lines.append(f"{INDENT}x{j} = {access}")
            self.names[var] = f"x{j}"
        lines += [f"{INDENT}{self.names[var]} = {self.scratch_ref(var, shape, exprs, rows)}"
                  for var in loaded]
        for node in nodes:
            lines.append(f"{INDENT}{self.names[node.out]} = {self.scalar_expr(node)}")
        lines += self.count_beyond_range(nodes)
        lines += [f"{INDENT}{self.scratch_ref(var, shape, exprs, rows)} = {self.names[var]}"
                  for var in saved]
        for k in stores:
            var = self.body.outputs[k]
            array = f"in{self.over[k]}" if k in self.over else f"out{k}"
            access = self.access(array, var.type.shape, shape, exprs, rows)
            lines.append(f"{INDENT}{access} = {self.ref(var)}")
        return list(rows.values()), lines

    def count_beyond_range(self, nodes: list[Node]) -> list[str]:
        """One update of ``nbig`` per element (Numba's parfor takes one reduction statement):
        whether some sin/cos argument is beyond vecmath's range."""
        keys = [(node, _limited_key(node)) for node in nodes] if self.limited else []
        tests = [f"(abs({self.ref(node.inputs[0])}) >= {VECMATH_SAFE_RANGE[key]!r})"
                 for node, key in keys if key is not None]
        return [f"{INDENT}nbig += {' | '.join(tests)}"] if tests else []

    def access(self, array: str, array_shape, shape, exprs, rows: dict[str, str]) -> str:
        """``array[i0, i1]``; in the row variant ``r_array[i1]`` when the innermost loop walks
        the array's last axis, with the row's definition added to ``rows``."""
        parts = index_text(array_shape, shape, exprs).split(", ")
        inner = exprs[self.inner_dim()]
        if not self.rows or not array_shape or parts[-1] != inner:
            return f"{array}[{', '.join(parts)}]"
        lead = ", ".join(parts[:-1])
        lead = f"({lead},)" if lead else "()"
        rows[array] = f"r_{array} = crow({array}, {lead})"
        self.row_arrays.add(array)
        self.row_leads[array] = parts[:-1]
        return f"r_{array}[{inner}]"

    def inner_dim(self) -> int:
        """The space dim of the innermost loop of the per-element nest."""
        plan = self.plan
        return plan.reduced_dims[-1] if plan.reduce is not None and not plan.columns \
            else plan.rank - 1

    def outer_lines(self, depth: int) -> list[str]:
        """Outer nodes of ``depth`` and the outer outputs they complete."""
        plan = self.plan
        shape, exprs = plan.space("outer")
        lines = []
        for node in self.body.nodes:
            if node in self.acc_names or plan.region_of[node.outputs[0]] != "outer":
                continue
            if plan.depth[node.out] != depth:
                continue
            lines += self._outer_loads(node, shape, exprs)
            lines.append(f"{INDENT}{self.names[node.out]} = {self.scalar_expr(node)}")
        for k, var in enumerate(self.body.outputs):
            if plan.region_of.get(var) == "outer" and plan.depth[var] == depth:
                array = f"in{self.over[k]}" if k in self.over else f"out{k}"
                lines.append(f"{INDENT}{array}[{index_text(var.type.shape, shape, exprs)}] = "
                             f"{self.ref(var)}")
        return lines

    def _outer_loads(self, node: Node, shape, exprs) -> list[str]:
        lines = []
        for j, var in enumerate(self.body.inputs):
            if var in node.inputs and j not in self.outer_loaded:
                self.outer_loaded.add(j)
                lines.append(f"{INDENT}y{j} = in{j}[{index_text(var.type.shape, shape, exprs)}]")
        for var in node.inputs:
            if var in self.body.inputs:
                self.names[var] = f"y{self.body.inputs.index(var)}"
        return lines

    def ref(self, value) -> str:
        if isinstance(value, Lit):
            return literal(value.value, value.dtype)
        return self.names[value]

    def scalar_expr(self, node: Node) -> str:
        out = node.out.type.dtype
        operands = [self.ref(v) for v in node.inputs]
        if node.op == "cast":
            return cast_expr(operands[0], node.inputs[0].type.dtype, out)
        exact = exact_comparison(node, operands)
        if exact is not None:
            return wrap(exact, out)
        template = scalar_template(node, self.limited)
        attrs = node.attr
        value = attrs.get("value")
        fields = {"value": literal(value, out)} if value is not None else {}
        return wrap(template.format(*operands, **fields), out)


# A signed integer against an unsigned 64-bit one: NumPy 2 compares them exactly (its loop
# takes int64 and uint64), where the registry's template would promote both to float64 and
# tell 2**53 + 1 from 2**53 no more. {0} is the signed operand, {1} the unsigned one.
_SIGNED_UNSIGNED = {
    "eq": "({0} >= 0 and np.uint64({0}) == {1})",
    "ne": "({0} < 0 or np.uint64({0}) != {1})",
    "lt": "({0} < 0 or np.uint64({0}) < {1})",
    "le": "({0} < 0 or np.uint64({0}) <= {1})",
    "gt": "({0} >= 0 and np.uint64({0}) > {1})",
    "ge": "({0} >= 0 and np.uint64({0}) >= {1})",
}
_MIRRORED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def exact_comparison(node: Node, operands: list[str]) -> str | None:
    """A comparison of a signed integer with a uint64 as NumPy makes it, or None."""
    if node.op not in _SIGNED_UNSIGNED:
        return None
    first, second = (np.dtype(v.dtype if isinstance(v, Lit) else v.type.dtype)
                     for v in node.inputs)
    if first.kind == "i" and second == np.uint64:
        return _SIGNED_UNSIGNED[node.op].format(*operands)
    if first == np.uint64 and second.kind == "i":
        return _SIGNED_UNSIGNED[_MIRRORED[node.op]].format(operands[1], operands[0])
    return None


def scalar_template(node: Node, limited: bool = False) -> str:
    """The registry's template, with the vectorizable vecmath function where one exists (sin
    and cos only where ``limited``: the kernel counts their arguments beyond its range)."""
    dtype = template_dtype(node)
    key = (node.op, dtype.name)
    vector = VECTOR_NAMES.get(key) or (LIMITED_NAMES.get(key) if limited else None)
    if vector is not None:
        return f"{vector}({{0}})"
    template = ops.get(node.op).template(dtype)
    if template is None:
        raise ValueError(f"{node.op} has no scalar template for {dtype}")
    return template


def _limited_key(node: Node) -> tuple | None:
    """(op, dtype) of a sin or cos that vecmath computes below a bound on |x|."""
    key = (node.op, template_dtype(node).name)
    return key if key in VECMATH_SAFE_RANGE else None


def template_dtype(node: Node) -> np.dtype:
    """Elementwise nodes are homogeneous; ``where``'s last operand carries the loop dtype."""
    return node.inputs[-1].type.dtype if node.inputs else node.out.type.dtype


# -- scalar spelling ----------------------------------------------------------------------------
def literal_ctor(dtype) -> str:
    """The dtype as a constructor name, also for bool (``np.bool_``, which np.empty takes)."""
    return "np.bool_" if np.dtype(dtype) == np.bool_ else ctor(dtype)


def ctor(dtype) -> str:
    dtype = np.dtype(dtype)
    return "bool" if dtype == np.bool_ else f"np.{dtype.name}"


def wrap(expr: str, dtype) -> str:
    """Every result is rebuilt in its dtype so that integer math wraps like NumPy's."""
    return f"{ctor(dtype)}({expr})"


def cast_expr(operand: str, source, target) -> str:
    source, target = np.dtype(source), np.dtype(target)
    if target == np.bool_:
        return f"({operand} != 0)"  # float NaN -> True, as NumPy
    if source == np.bool_:
        return f"{ctor(target)}(1 if {operand} else 0)"
    if source.kind == "f" and target.kind == "u":
        return _float_to_unsigned(operand, target)
    if source.kind == "f" and target.kind == "i":
        # NumPy's x86-64 loops go through int32 for int8 and int16 (200.0 -> -56 in int8)
        return f"{ctor(target)}({_float_to_signed(operand, max(32, 8 * target.itemsize))})"
    return wrap(operand, target)


def _float_to_signed(operand: str, bits: int) -> str:
    """Float to a signed int of ``bits`` as x86-64 converts it: NaN and values out of range
    give the type's 0x80... LLVM's conversion of those is poison, which it may fold away
    (int64 -> float64 -> int8 of 2**40 + 6 gave 6, NumPy 0)."""
    low, top, ty = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1), f"np.int{bits}"
    return (f"({ty}({operand}) if {low!r} <= {operand} < {top!r} else "
            f"{ty}({-(2 ** (bits - 1))}))")


def _float_to_unsigned(operand: str, target) -> str:
    """Float to unsigned as NumPy's x86-64 loops do it, out-of-range values included (which
    NumPy warns about). uint8 and uint16 go through int32 (-2.5 -> 254; beyond int32, its
    0x80000000, truncated); uint32 and uint64 convert values in range exactly, wrap negatives
    that fit a signed type of their width, give 0 past their top and the signed type's
    0x80... below it and for NaN. LLVM's direct conversion is poison below zero."""
    ty = ctor(target)
    if target.itemsize <= 2:
        return f"{ty}({_float_to_signed(operand, 32)})"
    bits = 8 * target.itemsize
    signed, top, low = _float_to_signed(operand, bits), float(2.0 ** bits), \
        float(-(2.0 ** (bits - 1)) - 1)
    if bits == 32:  # an in-range negative wraps through int64 like NumPy's int32 path
        inside = f"{ty}(np.int64({operand}))"
        return (f"({inside} if {low!r} < {operand} < {top!r} else ({ty}(0) if {operand} >= "
                f"{top!r} else {ty}({signed})))")
    half = float(2.0 ** (bits - 1))
    return (f"({ty}({operand}) if {half!r} <= {operand} < {top!r} else ({ty}(0) if "
            f"{operand} >= {top!r} else {ty}({signed})))")


def literal(value, dtype) -> str:
    """A typed constant that round-trips exactly (f32 values via their exact f64 repr)."""
    dtype = np.dtype(dtype)
    value = dtype.type(value)
    if dtype == np.bool_:
        return repr(bool(value))
    if dtype.kind in "iu":
        return f"{ctor(dtype)}({int(value)})"
    as_float = float(value)
    if as_float != as_float:
        text = "np.nan"
    elif as_float in (float("inf"), float("-inf")):
        text = "np.inf" if as_float > 0 else "-np.inf"
    else:
        text = repr(as_float)
    return f"{ctor(dtype)}({text})"


def index_text(array_shape, space_shape, space_exprs) -> str:
    """Right-aligned broadcast indexing: a dim of 1 under a larger space dim reads index 0."""
    if not array_shape:
        return "0"
    offset = len(space_shape) - len(array_shape)
    parts = []
    for j, size in enumerate(array_shape):
        dim = offset + j
        broadcast = size == 1 and space_shape[dim] != 1
        parts.append("0" if broadcast else space_exprs[dim])
    return ", ".join(parts)
