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
