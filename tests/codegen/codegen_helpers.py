"""Build one ``fused`` node by hand from a list of ops over shared inputs, and compare a
compiled kernel against the reference interpreter."""
import numpy as np

from fusejit.codegen import build_kernel
from fusejit.ir import Graph, Loc, Node, TensorType, Var, interpret, ops

RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-13}


def fused_node(arg_types, body_fn, kind="elementwise", name="k0_test"):
    """``body_fn(emit, *args)`` returns the body outputs; ``emit(op, *operands, **attrs)``."""
    args = [Var(TensorType(shape, dtype), f"a{i}") for i, (shape, dtype) in enumerate(arg_types)]
    nodes = []

    def emit(op, *operands, **attrs):
        (out_type,) = ops.infer_types(op, [v.type for v in operands], attrs)
        out = Var(out_type)
        nodes.append(Node(op, operands, [out], attrs, Loc("test_model.py", len(nodes) + 1)))
        return out

    outputs = body_fn(emit, *args)
    body = Graph(name, args, nodes, outputs)
    outer_in = [Var(v.type, v.hint) for v in args]
    outer_out = [Var(v.type) for v in outputs]
    return Node("fused", outer_in, outer_out, {"body": body, "kind": kind, "name": name})


def reference(node, *arrays):
    with np.errstate(all="ignore"):
        return interpret(node.attr["body"], *arrays)


def check_kernel(node, *arrays, rtol=None, labels=None):
    kernel = build_kernel(node)
    with np.errstate(all="ignore"):
        got = kernel(*arrays, parallel=False)
        fast = kernel.fast_call(*arrays)  # the replay's specialized path computes the same
    for g, f in zip(got, fast, strict=True):
        assert f.shape == g.shape and f.dtype == g.dtype
        np.testing.assert_array_equal(f, g)
    want = reference(node, *arrays)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        label = labels[k] if labels else k
        assert g.shape == w.shape and g.dtype == w.dtype, (label, g.shape, w.shape, g.dtype)
        tol = RTOL.get(w.dtype, 0) if rtol is None else rtol
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=tol, atol=1e-300, equal_nan=True,
                                       err_msg=str(label))
        else:
            np.testing.assert_array_equal(g, w, err_msg=str(label))
    return kernel
