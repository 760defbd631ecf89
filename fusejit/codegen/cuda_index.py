"""Injective ops on the device: ``pad``, ``concatenate``, ``setitem`` and ``gather`` as a few
launches into the output buffer, instead of a round-trip through NumPy on the host.

Each op becomes a ``DeviceSteps``: a list of launches that the runtime runs with the node's
inputs (device arrays) and its freshly allocated, C-contiguous output.

- an ``Assign`` broadcasts one input (or a literal), casts it to the output's dtype and stores
  it into a region of the output (a layout computed here, once): ``pad`` fills the output with
  its value and assigns the input to the middle, ``concatenate`` assigns each input to its slab,
  a ``setitem`` with a basic key copies the target and assigns the value to the region;
- an ``IndexLaunch`` runs ``cuda_index_kernels`` for a key of full slices and one integer
  array: ``x[ids]``, ``x[:, t] = v`` (with one index: several could repeat, and NumPy's order
  for repeats is not a GPU's). An index out of range sets a flag that ``check()`` reads after
  the call's synchronize.

Keys and ops outside these raise ``NotImplementedError``: the node runs on the host.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..ir import Graph, Node, TensorType, Var, indexing
from . import cuda_arrays as arrays
from . import cuda_launch
from .numba_cuda import build_cuda_kernel

FULL = ("slice", None, None, None)


def build_cuda_injective(node: Node) -> DeviceSteps:
    builder = _BUILDERS.get(node.op)
    if builder is None:
        raise NotImplementedError("no CUDA kernel for this op")
    return builder(node)


class DeviceSteps:
    """One node as launches into its output; listed with the kernels (``parts``)."""

    kind = "injective"

    def __init__(self, node: Node, launches: list):
        self.node, self.launches = node, launches
        self.name = f"d_{node.attr.get('name') or node.op}"
        self.parts = [kernel for launch in launches for kernel in launch.kernels]
        self.key = "+".join(part.key for part in self.parts)
        self.source_ops = [(node.op, node.loc)]

    @property
    def source(self) -> str:
        steps = "\n".join(f"#   {launch.describe()}" for launch in self.launches)
        return (f"# {self.name}  target=cuda  kind=injective: {len(self.launches)} launch(es) "
                f"into the output\n{steps}\n\n" + "\n".join(p.source for p in self.parts))

    def launch(self, inputs, outputs, stream) -> None:
        for launch in self.launches:
            launch(inputs, outputs[0], stream)

    def check(self) -> None:
        """After the call's synchronize: raise if an index was out of range."""
        for launch in self.launches:
            if isinstance(launch, IndexLaunch):
                launch.check()

    def reset(self) -> None:
        """Before a call: clear a flag a call that raised before its check left set."""
        for launch in self.launches:
            if isinstance(launch, IndexLaunch):
                launch.reset()


# -- assignments into a region of the output --------------------------------------------------
class Assign:
    def __init__(self, source, region: tuple, out_dtype, what: str):
        """``source``: an input position or a constant array; ``region``: (shape, strides,
        offset) in bytes over the output."""
        self.source, self.region, self.what = source, region, what
        self._literal = self._dtype = None
        self.out_dtype = np.dtype(out_dtype)
        self.kernel = None

    def bind(self, source_dtype) -> Assign:
        self._dtype = np.dtype(source_dtype)
        self.kernel = build_cuda_kernel(assign_node(self.region[0], self._dtype,
                                                    self.out_dtype))
        return self

    @property
    def kernels(self) -> list:
        return [self.kernel]

    def describe(self) -> str:
        shape, strides, offset = self.region
        return f"{self.what}: shape {list(shape)} strides {list(strides)} offset {offset}"

    def __call__(self, inputs, out, stream) -> None:
        shape = self.region[0]
        if not _size(shape):
            return
        value = _operand(self, inputs, stream)
        target = arrays.view(out, *self.region, self.out_dtype)
        self.kernel.launch([arrays.padded(arrays.broadcast(value, shape))],
                           [arrays.padded(target)], stream)


def _operand(launch, inputs, stream):
    """``launch.source``: an input's position, or a constant array sent to the device once
    (kept in ``launch._literal``)."""
    if not isinstance(launch.source, np.ndarray):
        return inputs[launch.source]
    if launch._literal is None:
        launch._literal = arrays.upload(launch.source, stream)
    return launch._literal


def assign_node(shape, source_dtype, dtype, source: Var | None = None) -> Node:
    """A fused elementwise node storing a value of ``shape`` cast to ``dtype`` (a copy where
    the dtypes agree), reading ``source`` (a fresh Var when None)."""
    inner = Var(TensorType(tuple(shape), np.dtype(source_dtype)))
    out = Var(TensorType(tuple(shape), np.dtype(dtype)))
    same = np.dtype(source_dtype) == np.dtype(dtype)
    step = (Node("copy", [inner], [out]) if same
            else Node("cast", [inner], [out], {"dtype": np.dtype(dtype)}))
    body = Graph("copy" if same else "assign", [inner], [step], [out])
    name = "k_copy" if same else "k_assign"
    return Node("fused", [source or Var(inner.type)], [Var(out.type)],
                {"body": body, "kind": "elementwise", "name": name})


def copy_node(var: Var) -> Node:
    """A fused node copying ``var`` into a fresh contiguous buffer."""
    return assign_node(var.type.shape, var.type.dtype, var.type.dtype, source=var)


@functools.lru_cache(maxsize=256)
def copy_kernel(var_type: TensorType):
    """The copy kernel for one type, stored through any strides (built once: each build
    is a first launch through the dispatcher again)."""
    return build_cuda_kernel(copy_node(Var(var_type)))


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _region(var_type, index) -> tuple:
    """The layout of ``out[index]`` (a basic index) over ``out``'s contiguous buffer."""
    shape, dtype = var_type.shape, var_type.dtype
    stand_in = np.ndarray(shape, dtype, buffer=np.empty(max(var_type.nbytes, 1), np.uint8))
    part = stand_in[index]
    if not isinstance(part, np.ndarray) or not np.may_share_memory(part, stand_in) or \
            any(s < 0 for s in part.strides):
        raise NotImplementedError("a region a device view cannot express")
    offset = part.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
    return part.shape, part.strides, offset


def _pad(node: Node) -> DeviceSteps:
    x, out, attrs = node.inputs[0], node.out, node.attr
    fill = np.asarray(attrs["value"], out.type.dtype)
    middle = tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.type.shape, attrs["width"],
                                                          strict=True))
    dtype = out.type.dtype
    launches = [Assign(fill, arrays.root_layout(out.type), dtype, "fill").bind(dtype),
                Assign(0, _region(out.type, middle), dtype, "input into the middle")
                .bind(x.type.dtype)]
    return DeviceSteps(node, launches)


def _concatenate(node: Node) -> DeviceSteps:
    out = node.out
    axis = node.attr["axis"] % len(out.type.shape)
    launches, start = [], 0
    for j, value in enumerate(node.inputs):
        stop = start + value.type.shape[axis]
        index = (slice(None),) * axis + (slice(start, stop),)
        launches.append(Assign(j, _region(out.type, index), out.type.dtype, f"input {j}")
                        .bind(value.type.dtype))
        start = stop
    return DeviceSteps(node, launches)


def _setitem(node: Node) -> DeviceSteps:
    x, value, out, key = node.inputs[0], node.inputs[1], node.out, node.attr["key"]
    copy = Assign(0, arrays.root_layout(out.type), out.type.dtype, "target").bind(x.type.dtype)
    if indexing.is_basic(key):
        region = _region(out.type, indexing.decode(key))
        _check_broadcast(value.type.shape, region[0])
        return DeviceSteps(node, [copy, Assign(1, region, out.type.dtype, "value")
                                  .bind(value.type.dtype)])
    axis, source, index_type = _one_array(key, x.type, node.inputs[2:], offset=2)
    if _size(index_type.shape) != 1:
        raise NotImplementedError("setitem with several indices (repeats are NumPy's order)")
    return DeviceSteps(node, [copy, IndexLaunch("scatter", node, axis, source, index_type)])


def _gather(node: Node) -> DeviceSteps:
    x, key = node.inputs[0], node.attr["key"]
    axis, source, index_type = _one_array(key, x.type, node.inputs[1:], offset=1)
    return DeviceSteps(node, [IndexLaunch("gather", node, axis, source, index_type)])


def _check_broadcast(value_shape, shape) -> None:
    value_shape = _squeezed(value_shape, len(shape))
    if np.broadcast_shapes(value_shape, shape) != tuple(shape):
        raise NotImplementedError(f"a value of shape {value_shape} into {shape}")


def _squeezed(shape, ndim: int) -> tuple:
    """NumPy's assignment drops a value's leading length-1 dims beyond the target's."""
    shape = tuple(shape)
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape


def _one_array(key, x_type, operands, offset: int):
    """(axis, index source, index type) for a key of full slices and one integer array."""
    arrays_at = [k for k, item in enumerate(key) if item != FULL]
    if len(arrays_at) != 1 or key[arrays_at[0]][0] not in ("array", "const"):
        raise NotImplementedError("an index other than full slices and one integer array")
    axis, item = arrays_at[0], key[arrays_at[0]]
    if axis >= len(x_type.shape):
        raise NotImplementedError("too many indices")
    if item[0] == "array":
        source = offset + item[1]
        index_type = operands[item[1]].type
    else:
        source = indexing.decode((item,))[0]
        index_type = TensorType(source.shape, source.dtype)
    dtype = np.dtype(index_type.dtype)
    if dtype.kind not in "iu" or (dtype.kind == "u" and dtype.itemsize == 8):
        raise NotImplementedError(f"an index of dtype {dtype}")
    return axis, source, index_type


class IndexLaunch:
    """``gather_rows``/``scatter_rows`` over (outer, rows, inner) views."""

    def __init__(self, kind: str, node: Node, axis: int, source, index_type):
        self.kind, self.source = kind, source
        x = node.inputs[0].type
        self.n = _size(index_type.shape)
        self.outer, self.rows = _size(x.shape[:axis]), x.shape[axis]
        self.inner = _size(x.shape[axis + 1:])
        self.x_type, self.index_type = x, index_type
        if kind == "scatter":
            value = node.inputs[1]
            indexed = x.shape[:axis] + tuple(index_type.shape) + x.shape[axis + 1:]
            _check_broadcast(value.type.shape, indexed)
            self.values = Assign(1, arrays.root_layout(TensorType(indexed, x.dtype)), x.dtype,
                                 "value").bind(value.type.dtype)
        self.kernel = FixedKernel(kind, x.dtype, np.dtype(index_type.dtype))
        self._flag = self._literal = None

    @property
    def kernels(self) -> list:
        values = [self.values.kernel] if self.kind == "scatter" else []
        return [self.kernel, *values]

    def describe(self) -> str:
        return (f"{self.kind}_rows: (outer {self.outer}, rows {self.rows}, inner "
                f"{self.inner}) by {self.n} index(es)")

    def __call__(self, inputs, out, stream) -> None:
        total = self.outer * self.n * self.inner
        if not total or not self.rows:
            # nothing to move, but NumPy still checks the indices (x[:, [5]] of a (0, 3) x)
            if self.n and self._host_out_of_range(inputs, stream):
                self._flagged()[0] = 1
            return
        index = self._contiguous(_operand(self, inputs, stream), self.index_type, stream)
        index = arrays.view_of(index, (self.n,), (index.dtype.itemsize,))
        shape = (self.outer, self.rows, self.inner)
        blocks, threads = cuda_launch.elementwise_config(total)
        if self.kind == "gather":
            src = self._contiguous(inputs[0], self.x_type, stream)
            args = (_as3(src, shape), index, _as3(out, (self.outer, self.n, self.inner)))
        else:   # ``out`` holds the copied target; the value goes through a contiguous buffer
            indexed = self.values.region[0]
            values = arrays.empty(indexed, self.x_type.dtype, stream)
            self.values(inputs, values, stream)
            args = (_as3(values, (self.outer, self.n, self.inner)), index, _as3(out, shape))
        self.kernel.launch(blocks, threads, stream, (*args, self._flagged()))

    def _host_out_of_range(self, inputs, stream) -> bool:
        index = _operand(self, inputs, stream)
        if self.rows:
            index = arrays.download(index, stream)
            stream.synchronize()
            return bool(((index < -self.rows) | (index >= self.rows)).any())
        return True

    def reset(self) -> None:
        if self._flag is not None:
            self._flag[0] = 0

    def check(self) -> None:
        if self._flag is not None and self._flag[0]:
            self._flag[0] = 0
            raise IndexError(f"an index of this {self.kind} is out of bounds "
                             f"(axis of size {self.rows})")

    def _flagged(self):
        if self._flag is None:
            from numba import cuda
            self._flag = cuda.mapped_array((1,), np.int32)
            self._flag[0] = 0
        return self._flag

    def _contiguous(self, array, var_type, stream):
        """``array`` itself when C-contiguous, else a contiguous copy (a 0-d index arrives
        as a shape-(1,) view)."""
        if arrays.is_c_contiguous(array):
            return array
        result = arrays.empty(var_type.shape, var_type.dtype, stream)
        copy_kernel(var_type).launch([arrays.padded(array)], [arrays.padded(result)], stream)
        return result


def _as3(array, shape):
    """A C-contiguous array seen as (outer, rows, inner)."""
    itemsize = array.dtype.itemsize
    return arrays.view_of(array, shape, arrays.contiguous_strides(shape, itemsize))


class FixedKernel:
    """A hand-written kernel of ``cuda_index_kernels`` for one pair of dtypes."""

    def __init__(self, kind: str, dtype, index_dtype):
        self.kind_name, self.dtype, self.index_dtype = kind, np.dtype(dtype), index_dtype
        self.name = f"{kind}_rows"
        self.key = f"{kind}_rows_{self.dtype.str[1:]}_{np.dtype(index_dtype).str[1:]}"
        self.launch = cuda_launch.Launcher(self.dispatcher)

    @property
    def dispatcher(self):
        from . import cuda_index_kernels
        return getattr(cuda_index_kernels, self.name)

    @property
    def source(self) -> str:
        function = getattr(self.dispatcher, "py_func", self.dispatcher)
        return (f"# kernel {self.name}  target=cuda  (hand-written, "
                f"fusejit/codegen/cuda_index_kernels.py)\n" + inspect.getsource(function))

    def argtypes(self) -> tuple:
        from numba import types
        from numba.np.numpy_support import from_dtype
        data, index = from_dtype(self.dtype), from_dtype(np.dtype(self.index_dtype))
        return (types.Array(data, 3, "A"), types.Array(index, 1, "A"),
                types.Array(data, 3, "A"), types.Array(types.int32, 1, "C"))

    def ptx(self, cc=(9, 0)) -> str:
        from numba import cuda
        function = getattr(self.dispatcher, "py_func", self.dispatcher)
        ptx, _ = cuda.compile_ptx(function, self.argtypes(), cc=cc)
        return ptx


_BUILDERS = {"pad": _pad, "concatenate": _concatenate, "setitem": _setitem,
             "gather": _gather}
