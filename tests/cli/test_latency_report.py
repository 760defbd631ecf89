"""bench.latency's table from a results dict (no timing here: benchmarks never run in tests)."""
from bench.latency import summary_rows


def test_latency_table_shows_first_call_and_replay_of_a_new_shape():
    run = {"import_s": 0.05, "first_call_s": 0.27, "first_replay_s": 0.32,
           "to_first_replay_s": 0.64, "eager_call_s": 0.433, "new_shape_first_call_s": 0.22,
           "new_shape_s": 0.29, "new_shape_kernels_compiled": 0}
    results = {"block": {"cold": run, "warm": {"error": "boom"}}, "gpt2": {"cold": run,
                                                                          "warm": run},
               "dispatch": {"kernels": 5, "eager_us": 13.2, "compiled_us": 16.9}}
    rows = summary_rows(results)
    assert "+replay" in rows[0] and "new shape" in rows[0]
    assert rows[1].split()[-3:] == ["0.22", "0.29", "0"]
    assert rows[2] == "block          warm  error: boom"
    assert rows[-1] == ("dispatch (5-kernel program, 4x4): 16.9 us compiled vs 13.2 us eager "
                        "(5 kernels)")


def test_peer_rows_say_skipped_or_give_the_figures():
    from bench.latency import _peer_row
    assert _peer_row("jax.jit", {"block": {"skipped": "not installed (jax)"}}) == \
        "jax.jit: not installed (jax)"
    run = {"first_call_s": 1.5, "new_shape_first_call_s": 0.4, "dispatch_us": 30.0}
    assert _peer_row("torch.compile", {"block": run, "gpt2": run}) == (
        "torch.compile: block cold 1.50 s, new shape 0.40 s; gpt2 cold 1.50 s, new shape "
        "0.40 s; dispatch 30.0 us")


def test_peers_run_the_models_own_source_with_another_numpy():
    # jax.jit gets the models re-created with np bound to jax.numpy; bound to NumPy itself they
    # must compute exactly what the models do.
    import numpy as np

    from bench.latency_peers import gpt2_inputs, with_numpy
    from bench.models import gpt2_block, tiny
    args = gpt2_inputs("block", 16, 1)
    np.testing.assert_array_equal(with_numpy(gpt2_block, np)["block"](*args),
                                  gpt2_block.block(*args))
    x, y = tiny.make_inputs()
    for got, want in zip(with_numpy(tiny, np)["five_kernels"](x, y), tiny.five_kernels(x, y),
                         strict=True):
        np.testing.assert_array_equal(got, want)
