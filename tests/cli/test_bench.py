"""bench/ without timing anything: the peers run with NumPy itself as their library must compute
what their bench models compute, or their rows would time different work (no peer library is
needed here); and the report's peer and plain-script tables."""
import numpy as np
import pytest

from bench.latency_peers import with_numpy
from bench.models import MODELS, load
from bench.peers import PEERS, SAME_AS, _array_api_fns, _static_argnums, jax_source_peer
from bench.workloads import leaves

ARRAY_API = ["mlp", "gelu_f32", "elementwise", "softmax", "layernorm"]
SOURCE = sorted(name for name, peers in PEERS.items() if ("jax.jit", jax_source_peer) in peers)


def numpy_row(name, x):
    return getattr(np, name)(x, axis=-1, keepdims=True)


def test_every_peer_row_is_a_bench_workload():
    assert set(PEERS) <= set(MODELS)
    assert SOURCE == ["attention", "conv", "gpt2", "gpt2_block", "lstm"]


@pytest.mark.parametrize("workload", ARRAY_API)
def test_array_api_peers_compute_the_models_math(workload):
    model, make_inputs = load(workload)
    args, kwargs = make_inputs(size="small")
    fns = _array_api_fns(np, numpy_row, lambda x: np.maximum(x, 0))
    got, want = fns[SAME_AS.get(workload, workload)](*args, **kwargs), model(*args, **kwargs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("workload", SOURCE)
def test_source_peers_rerun_the_models_own_code(workload):
    model, make_inputs = load(workload)
    module, name = MODELS[workload]
    args, kwargs = make_inputs(size="small")
    got, want = with_numpy(module, np)[name](*args, **kwargs), model(*args, **kwargs)
    for g, w in zip(leaves(got), leaves(want), strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_python_ints_are_static_for_the_peers_as_for_fusejit():
    x = np.zeros(3)
    assert _static_argnums((x, {"w": x}, 12)) == (2,)
    assert _static_argnums((x,)) == ()


def test_peer_rows_give_the_eager_time_their_speedup_is_against():
    from bench.report import peer_rows
    results = {"rows": [{"workload": "softmax", "peers": {
        "torch.compile": {"status": "ok", "median_s": 0.002, "iqr_s": 0.0001,
                          "eager_median_s": 0.006, "speedup": 3.0},
        "jax.jit": {"status": "skipped", "error": "not installed (jax)"}}}]}
    assert list(peer_rows(results)) == [
        ("softmax", "torch.compile", "2.00±0.10", "6.00", "3.00x", ""),
        ("softmax", "jax.jit", "skipped", "-", "-", "not installed (jax)")]


def test_script_rows_put_the_plain_process_ratio_beside_the_warm_one():
    from bench.report import script_rows
    ok = lambda ms: {"status": "ok", "median_s": ms / 1e3, "iqr_s": 0.0}  # noqa: E731
    results = {"rows": [
        {"workload": "layernorm", "fusejit": {"status": "ok", "speedup": 12.0},
         "script": {"eager": ok(19.0), "fusejit": ok(1.0), "speedup": 19.0}},
        {"workload": "mlp", "fusejit": {"status": "ok", "speedup": 1.0},
         "script": {"eager": ok(24.0), "fusejit": {"status": "error", "error": "boom"}}},
        {"workload": "conv", "fusejit": {"status": "error"}}]}
    assert list(script_rows(results)) == [
        ("layernorm", "19.00±0.00", "1.00±0.00", "19.00x", "12.00x"),
        ("mlp", "24.00±0.00", "error", "-", "1.00x")]


def test_plain_script_processes_take_turns_and_each_side_reports_the_median_process(monkeypatch):
    from bench import harness
    order, times = [], {"eager": iter([3.0, 9.0, 2.0]), "fusejit": iter([1.0, 1.2, 0.8])}

    def fake_run_elsewhere(module, workload, which, repeats=None):
        order.append(which)
        return {"status": "ok", "median_s": next(times[which]), "iqr_s": 0.0, "n": 5}
    monkeypatch.setattr(harness, "run_elsewhere", fake_run_elsewhere)
    script = harness.run_scripts(workload=None, rounds=3)
    assert order == ["eager", "fusejit"] * 3
    assert script["eager"]["median_s"] == 3.0 and script["fusejit"]["median_s"] == 1.0
    assert script["eager"]["n"] == 15 and script["speedup"] == 3.0


def test_a_failed_plain_script_process_is_reported_not_averaged_away(monkeypatch):
    from bench import harness
    results = iter([{"status": "ok", "median_s": 1.0, "iqr_s": 0.0, "n": 5},
                    {"status": "MISMATCH", "error": "max abs diff 1"}] * 2)
    monkeypatch.setattr(harness, "run_elsewhere", lambda *args, **kwargs: next(results))
    script = harness.run_scripts(workload=None, rounds=2)
    assert script["fusejit"] == {"status": "MISMATCH", "error": "max abs diff 1"}
    assert "speedup" not in script


def test_the_bandwidth_probe_counts_four_arrays_against_the_copy_it_timed_beside(monkeypatch):
    from bench import bandwidth, harness
    timed = []

    def fake_interleaved(calls, warmup, repeats):
        timed.extend(calls)
        return [[0.010, 0.010, 0.012], [0.004, 0.004, 0.005], [0.040, 0.041, 0.040]]
    monkeypatch.setattr(harness, "time_interleaved", fake_interleaved)
    result = bandwidth.measure(elements=4096, repeats=3, copy_megabytes=1)
    copy_bytes = 2 * 2**20
    assert len(timed) == 3 and result["shape"] == [4, 1024] and result["kernels"] == 1
    assert result["bytes_moved"] == 4 * 4096 * 4
    assert result["copy_bandwidth_Bps"] == pytest.approx(copy_bytes / 0.010)
    assert result["fraction_of_copy"] == pytest.approx(4 * 4096 * 4 / 0.004 / (copy_bytes / 0.010))
    assert result["eager_s"] == 0.040
    result["freed_memory_kept"] = True
    assert "misses the target of 70%" in bandwidth.format_result(result)
    assert "meets" in bandwidth.format_result({**result, "fraction_of_copy": 0.7})


@pytest.mark.parametrize("name", ["gelu_f32", "softmax"])
def test_the_layouts_probe_checks_f_ordered_results_then_reports_their_samples(monkeypatch, name):
    from bench import harness, layouts
    from bench.workloads import workloads
    timed = []

    def fake_interleaved(calls, warmup, repeats):
        timed.extend(call() for call in calls)   # both run: compiled, then eager
        return [[0.002, 0.002, 0.003], [0.010, 0.011, 0.010]]
    monkeypatch.setattr(harness, "time_interleaved", fake_interleaved)
    (workload,) = workloads("small", np.float32, [name])
    row = layouts.measure(workload, repeats=3)
    assert [r.flags.f_contiguous for r in timed] == [True, True]
    assert (row["fusejit_s"], row["eager_s"]) == (0.002, 0.010)
    assert row["speedup"] == pytest.approx(5.0) and row["shape"] == [8, 32]
    assert layouts.format_row(row).split()[:3] == [name, "F", "8x32"]


def test_the_layouts_probe_makes_only_the_leading_arguments_f_ordered(monkeypatch):
    from bench import harness, layouts
    from bench.workloads import workloads
    monkeypatch.setattr(harness, "time_interleaved", lambda calls, warmup, repeats: [
        [0.002], [0.004]])
    (workload,) = workloads("small", np.float32, ["elementwise"])
    row = layouts.measure(workload, repeats=1, fortran=1)
    assert row["order"] == "FCC" and layouts.format_row(row).split()[:2] == ["elementwise",
                                                                            "FCC"]


class FakeClock:
    """``time.perf_counter`` for the harness: each call of ``calls`` advances it by the next of
    its durations (the last repeating), so no test times anything."""

    def __init__(self, monkeypatch, **durations):
        from bench import harness
        self.now, self.durations, self.made = 0.0, durations, {name: 0 for name in durations}
        monkeypatch.setattr(harness.time, "perf_counter", lambda: self.now)

    def call(self, name):
        def run():
            sequence = self.durations[name]
            self.now += sequence[min(self.made[name], len(sequence) - 1)]
            self.made[name] += 1
        return run


def test_a_slow_early_call_does_not_size_the_batches(monkeypatch):
    from bench import harness
    clock = FakeClock(monkeypatch, eager=[0.0015], compiled=[0.002, 0.0067, 0.0012])
    eager, compiled = harness.time_interleaved([clock.call("eager"), clock.call("compiled")],
                                               warmup=2, repeats=3)
    batches = clock.made["compiled"] - 1 - harness.CALIBRATION_CALLS   # warmup, calibration
    assert batches == len(compiled) * 17   # ceil(20 ms / 1.2 ms), not ceil(20 / 6.7) = 3
    assert compiled == pytest.approx([0.0012] * len(compiled))
    assert eager == pytest.approx([0.0015] * len(eager))


def test_a_call_longer_than_a_batch_is_timed_once_to_size_it(monkeypatch):
    from bench import harness
    clock = FakeClock(monkeypatch, eager=[0.25])
    (samples,) = harness.time_interleaved([clock.call("eager")], warmup=1, repeats=2)
    assert clock.made["eager"] == 1 + len(samples) and samples == [0.25, 0.25]


class Recording:
    """A stand-in for the compiled function: eager NumPy that notes the arrays it was given."""

    def __init__(self, fn, seen):
        self.fn, self.seen = fn, seen

    def __call__(self, *args, **kwargs):
        self.seen.append(("compiled", args))
        return self.fn(*args, **kwargs)

    def cache_info(self):
        return {}


def test_mutating_workloads_time_both_sides_on_the_same_arrays(monkeypatch):
    from bench import harness
    from bench.workloads import workloads
    seen = []
    (workload,) = workloads("quick", np.float32, ["adam"])
    eager_fn = workload.fn
    workload.fn = lambda *args: (seen.append(("eager", args)), eager_fn(*args))[1]
    monkeypatch.setattr(harness, "compile_fn", lambda workload: Recording(eager_fn, seen))
    monkeypatch.setattr(harness, "time_interleaved", lambda calls, warmup, repeats: [
        [(call(), 0.002)[1]] for call in calls])
    monkeypatch.setattr(harness, "peak_memory", lambda call: 0)
    seen.clear()   # from here: only the timed calls
    harness.run_workload(workload, peers=False, scripts=False)
    timed = seen[-2:]   # time_interleaved ran eager, then compiled
    assert [who for who, _ in timed] == ["eager", "compiled"]
    (_, eager_args), (_, compiled_args) = timed
    assert all(a is b for a, b in zip(leaves(eager_args), leaves(compiled_args), strict=True))
    first_call_args = seen[0][1]   # eager's reference output, on a copy of its own
    assert not any(a is b for a, b in zip(leaves(first_call_args), leaves(eager_args),
                                          strict=True) if isinstance(a, np.ndarray))


class WrongOnReplay(Recording):
    """Right on the first call (a trace computes its result as NumPy does), wrong after."""

    def __call__(self, *args, **kwargs):
        out = super().__call__(*args, **kwargs)
        return out if len(self.seen) == 1 else out + 1


def test_the_first_replay_is_checked_against_eager_not_only_the_trace(monkeypatch):
    from bench import harness
    from bench.workloads import eager_output, workloads
    (workload,) = workloads("quick", np.float32, ["softmax"])
    monkeypatch.setattr(harness, "compile_fn",
                        lambda workload: WrongOnReplay(workload.fn, []))
    args, kwargs = workload.inputs()
    row = harness.prepare_compiled(workload, args, kwargs, eager_output(workload, args, kwargs),
                                   (args, kwargs))
    assert row["status"] == "MISMATCH"
