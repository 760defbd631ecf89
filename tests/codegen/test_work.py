"""Serial or parallel per kernel: the estimate of ``codegen/work.py`` puts cheap kernels on one
core until they are large and expensive ones on both much earlier (the crossovers its
docstring gives, measured on this project's 2-core machine)."""
import numpy as np
import pytest
from codegen_helpers import fused_node

from fusejit.codegen.kernel import plan_kernel
from fusejit.codegen.work import runs_parallel, serial_ns

F32, F64 = np.float32, np.float64


def add_one(shape, dtype):
    return fused_node([(shape, dtype)], lambda emit, x: [emit("add", x, x)])


def unary(op, shape, dtype):
    return fused_node([(shape, dtype)], lambda emit, x: [emit(op, x)])


def softmax(shape, dtype):
    def body(emit, x):
        top = emit("reduce_max", x, axes=(1,), keepdims=True)
        e = emit("exp", emit("sub", x, top))
        return [emit("div", e, emit("sum", e, axes=(1,), keepdims=True))]
    return fused_node([(shape, dtype)], body, kind="reduce")


def row_argmax(shape, dtype):
    return fused_node([(shape, dtype)], lambda emit, x: [
        emit("argmax", x, axes=(1,), keepdims=False)], kind="reduce")


def parallel(node) -> bool:
    body = node.attr["body"]
    return runs_parallel(plan_kernel(body), body)


@pytest.mark.parametrize("node, expected", [
    (add_one((8, 16), F32), False),
    (add_one((1024, 1024), F32), False),      # memory-bound: 94 us serial, 143 parallel
    (add_one((4096, 1024), F32), True),       # 779 us serial, 312 parallel
    (add_one((2048, 1024), F64), True),
    (unary("exp", (256, 512), F32), False),   # 85 us serial, 94 parallel
    (unary("exp", (1024, 1024), F32), True),  # 331 us serial, 215 parallel
    (unary("tanh", (128, 512), F64), True),   # 154 us serial, 126 parallel
    (unary("tanh", (32, 512), F64), False),
    (softmax((1024, 512), F32), True),        # 270 us serial, 182 parallel
    (softmax((128, 512), F32), False),
    (row_argmax((2048, 1024), F32), True),    # 170 us serial, 124 parallel
    (row_argmax((512, 1024), F32), False),    # 44 us serial, 71 parallel
])
def test_parallel_once_the_serial_loop_outweighs_waking_the_workers(node, expected):
    assert parallel(node) is expected


def test_cost_grows_with_elements_work_per_element_and_width():
    small, large = unary("exp", (64, 64), F32), unary("exp", (128, 64), F32)
    ns = {name: serial_ns(plan_kernel(n.attr["body"]), n.attr["body"])
          for name, n in (("small", small), ("large", large))}
    assert ns["large"] == pytest.approx(2 * ns["small"])
    cheap, dear = add_one((64, 64), F32), unary("exp", (64, 64), F32)
    wide = unary("exp", (64, 64), F64)
    costs = [serial_ns(plan_kernel(n.attr["body"]), n.attr["body"]) for n in (cheap, dear, wide)]
    assert costs[0] < costs[1] < costs[2]


def test_a_kernel_without_a_parallel_loop_stays_serial():
    # a rank-1 reduction has no dim to split outside its blocked inner loop; a bool argmax
    # over every dim is not blocked, and its element count would restart in each chunk
    vector = fused_node([((4096 * 1024,), F32)], lambda emit, x: [
        emit("sum", emit("exp", x), axes=(0,), keepdims=False)], kind="reduce")
    arg = fused_node([((4096, 1024), F32)], lambda emit, x: [
        emit("argmax", emit("gt", x, x), axes=(0, 1), keepdims=False)], kind="reduce")
    assert not parallel(vector) and not parallel(arg)


def test_an_argmax_over_every_dim_runs_chunks_of_rows_in_parallel():
    node = fused_node([((4096, 1024), F32)], lambda emit, x: [
        emit("argmax", emit("exp", x), axes=(0, 1), keepdims=False)], kind="reduce")
    assert parallel(node)


def test_a_reduction_over_every_dim_runs_chunks_of_rows_in_parallel():
    node = fused_node([((4096, 1024), F32)], lambda emit, x: [
        emit("sum", emit("exp", x), axes=(0, 1), keepdims=False)], kind="reduce")
    assert parallel(node)
