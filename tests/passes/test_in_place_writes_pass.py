"""in_place_writes: which setitems may write into their target's buffer, and how memory planning
then keeps that buffer alive for as long as the write's result is read."""
from fusejit.ir import Node, indexing
from fusejit.passes.in_place_writes import in_place_writes
from fusejit.passes.plan_memory import caller_reachable, last_uses, lifetimes
from tests.strategies import Program, lit, var

ROW0 = indexing.encode(0)


def product_then_write(read_old_after=False, returned=False):
    """h = a @ b; h[0] = 1; y = h * 2 (a @ b: a buffer of the program's own)."""
    a, b = var("a", "f32", (4, 4)), var("b", "f32", (4, 4))
    p = Program(a, b)
    h = p("matmul", a, b)
    written = p("setitem", h, lit(1.0), key=ROW0)
    outputs = [p("mul", written, lit(2.0))]
    if read_old_after:
        outputs.append(p("neg", h))
    if returned:
        outputs.append(written)
    return p.graph(*outputs), h, written


def test_a_write_into_a_product_that_dies_there_is_in_place():
    graph, _, _ = product_then_write()
    assert [node.op for node in in_place_writes(graph)] == ["setitem"]


def test_a_write_whose_old_buffer_is_read_later_copies():
    graph, _, _ = product_then_write(read_old_after=True)
    assert not in_place_writes(graph)


def test_the_written_buffer_lives_as_long_as_the_writes_result():
    graph, h, written = product_then_write()
    writes = in_place_writes(graph)
    assert last_uses(graph)[h] == 1 and last_uses(graph, writes)[h] == 2
    assert written in lifetimes(graph) and written not in lifetimes(graph, writes)


def test_a_returned_write_makes_its_buffer_the_callers():
    graph, h, _ = product_then_write(returned=True)
    writes = in_place_writes(graph)
    assert writes and h not in caller_reachable(graph) and h in caller_reachable(graph, writes)


def test_an_input_is_written_in_place_only_when_the_body_writes_it():
    x = var("x", "f32", (4,))
    p = Program(x)
    written = p("setitem", x, lit(0.0), key=ROW0)
    graph = p.graph(p("exp", written), written)
    assert not in_place_writes(graph)
    assert [node.op for node in in_place_writes(graph, written={0: written})] == ["setitem"]


def test_a_write_into_an_input_off_its_written_chain_copies():
    # t = x.copy(); x[1] = 5; s = x.sum(); t[0] = -1 with the copy folded away
    x = var("x", "f32", (4,))
    p = Program(x)
    final = p("setitem", x, lit(5.0), key=indexing.encode(1))
    total = p("exp", final)
    into_copy = p("setitem", x, lit(-1.0), key=ROW0)
    assert in_place_writes(p.graph(total, into_copy, final), written={0: final}) == frozenset()


def test_a_chain_keeps_only_its_last_in_place_writes():
    # x[0] = 1; r = x (returned); x[1] = 2: the second write copies, so the first must too
    x = var("x", "f32", (4,))
    p = Program(x)
    first = p("setitem", x, lit(1.0), key=ROW0)
    final = p("setitem", first, lit(2.0), key=indexing.encode(1))
    assert in_place_writes(p.graph(first, final), written={0: final}) == frozenset()
    p = Program(x)
    first = p("setitem", x, lit(1.0), key=ROW0)
    read = p("exp", first)                        # the first version read before the second
    final = p("setitem", first, lit(2.0), key=indexing.encode(1))
    graph = p.graph(read, final)
    assert {node.outputs[0] for node in in_place_writes(graph, written={0: final})} == \
        {first, final}


def test_a_buffer_handed_to_a_host_call_is_never_written_in_place():
    a = var("a", "f32", (4, 4))
    p = Program(a)
    h = p("matmul", a, a)
    kept = var("kept", "f32", (4, 4))     # np.flip(h): it may be a view of h
    p.nodes.append(Node("host", (h,), (kept,), (("name", "np.flip"),)))
    written = p("setitem", h, lit(1.0), key=ROW0)
    assert not in_place_writes(p.graph(written, kept))
