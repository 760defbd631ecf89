"""One prepared script for a machine with a GPU: the CUDA tests for real, then the bench
workloads eager (NumPy on the host, CuPy on the device when installed) versus fusejit's CUDA
program on device-resident inputs, with achieved bandwidth against a device-to-device copy.

    python -m bench.gpu [--models softmax,gelu] [--skip-tests] [--seconds 1] [--out DIR]

Prints a table and writes ``bench/results/gpu-<time>.json`` (and, with ``--out``, the JSON and
the tests' whole log there too). Each workload's compiled result, called with NumPy arrays as
a user would, is checked against eager NumPy before anything is timed. Budget: about 5 minutes
on 16 cores (the tests run in parallel when pytest-xdist is installed).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
ELEMENTWISE = ("elementwise", "gelu")


def run_tests(timeout: int, out: Path | None) -> dict:
    """tests/cuda on the GPU: the cases for real (no simulator), then the PTX suite; every
    failure is reported (no ``-x``), the whole log kept in ``out``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env.update(FUSEJIT_CUDA_REAL="1", PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
               "--tb=short", "tests/cuda/sim_cases.py", "tests/cuda/test_ptx.py"]
    command += _parallel_workers()
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
        log, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout or b""
        if isinstance(partial, bytes):
            partial = partial.decode(errors="replace")
        log, code = f"{partial}\ntimed out after {timeout} s", -1
    if out is not None:
        (out / "gpu-tests.log").write_text(log)
    tail = log[-4000:]
    print(tail, flush=True)
    return {"returncode": code, "seconds": time.perf_counter() - started, "tail": tail}


def _parallel_workers() -> list[str]:
    """``-n N`` for pytest-xdist (half the cores, at most 8), when it is installed."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(max(1, min(8, (os.cpu_count() or 2) // 2)))]


def environment() -> dict:
    """What the numbers were measured on."""
    import numba
    from numba import cuda
    device = cuda.get_current_device()
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "device": device.name.decode()
            if isinstance(device.name, bytes) else str(device.name),
            "compute_capability": list(device.compute_capability),
            "cpu_count": os.cpu_count()}
    try:
        from importlib.metadata import version
        info["numba_cuda"] = version("numba-cuda")
    except Exception:  # noqa: BLE001 -- only a label
        info["numba_cuda"] = None
    import fusejit
    info["auto_target"] = fusejit.compile(lambda x: x + 1).target   # "cuda" on a GPU
    print(info, flush=True)
    return info


def timed(fn, seconds: float, sync=lambda: None) -> float:
    """Median seconds per call over repeated calls for about ``seconds``."""
    fn()
    sync()
    samples, deadline = [], time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 3:
        start = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - start)
        if len(samples) >= 200:
            break
    return float(np.median(samples))


def copy_bandwidth(nbytes: int = 1 << 28) -> float:
    """Device-to-device copy bandwidth (bytes read + written per second)."""
    from numba import cuda
    src = cuda.device_array(nbytes, np.uint8)
    dst = cuda.device_array(nbytes, np.uint8)
    seconds = timed(lambda: dst.copy_to_device(src), 1.0, cuda.synchronize)
    return 2 * nbytes / seconds


def model(name: str, size: str = "bench"):
    """(fn with statics bound, host args) at ``size``."""
    from bench.models import STATIC_ARGNAMES, load
    fn, make_inputs = load(name)
    args, kwargs = make_inputs(size=size)
    for static in STATIC_ARGNAMES.get(name, ()):
        fn = _bind(fn, static, args[-1], name)
        args = args[:-1]
    return fn, args, kwargs


def _bind(fn, keyword, value, name):
    """A named function with a static keyword bound (fusejit names kernels after it)."""
    def bound(*args, **kwargs):
        return fn(*args, **{keyword: value}, **kwargs)
    bound.__name__ = bound.__qualname__ = name
    return bound


def bench_model(name: str, seconds: float, size: str = "bench") -> dict:
    import copy

    from numba import cuda

    import fusejit
    fn, args, kwargs = model(name, size)
    row = {"model": name}
    eager_args = copy.deepcopy(args)       # in-place models update these run after run
    row["numpy_s"] = timed(lambda: fn(*eager_args, **kwargs), seconds)
    compiled = fusejit.compile(fn, target="cuda")
    started = time.perf_counter()
    compiled(*copy.deepcopy(args), **kwargs)                  # trace
    compiled(*copy.deepcopy(args), **kwargs)                  # compile the kernels, replay
    row["first_calls_s"] = time.perf_counter() - started
    row["matches_numpy"] = check_against_numpy(fn, compiled, args, kwargs)
    row["host_call_s"] = timed(lambda: compiled(*args, **kwargs), seconds)
    program, host, device = device_program(compiled, args, kwargs)
    outputs = program.run(device)
    row["fusejit_cuda_s"] = timed(lambda: program.run(device), seconds, cuda.synchronize)
    moved = sum(x.nbytes for x in host) + sum(int(np.prod(o.shape)) * o.dtype.itemsize
                                              for o in outputs)
    row["bytes_moved"] = moved
    row["fusejit_GBps"] = moved / row["fusejit_cuda_s"] / 1e9
    row["kernels"] = len(program.kernels)
    row["host_steps"] = sum(getattr(k, "kind", "") == "host" for k in program.kernels)
    launchers = [k._launch for k in program.kernels if hasattr(k, "_launch")]
    row["direct_launches"] = f"{sum(x.direct is not None for x in launchers)}/{len(launchers)}"
    row["cupy_s"] = bench_cupy(fn, args, kwargs, seconds)
    return row


def device_program(compiled, args, kwargs):
    """(CudaProgram of the traced call, its host inputs, device copies of them)."""
    from numba import cuda

    from fusejit.runtime.key import make_key
    entry = compiled.entry_for(*args, **kwargs).paths[0]
    _, leaves = make_key(args, kwargs, None)
    host = [np.asarray(leaves[i]) for i in entry.trace.arg_leaves]
    host += [c.resolve(leaves) for c in entry.trace.captures]
    return entry.program, host, [cuda.to_device(np.ascontiguousarray(x)) for x in host]


def check_against_numpy(fn, compiled, args, kwargs) -> str:
    """The compiled call on NumPy arguments against eager NumPy: "ok" or what differs. The
    tolerance is the precision the model computes in, its inputs' (the float64 ``gelu`` computes
    its cube in float32), as in tests/e2e/test_models.py."""
    import copy

    from tests.oracle import assert_same, tolerance_for
    floats = [x.dtype for x in args if isinstance(x, np.ndarray) and x.dtype.kind == "f"]
    tolerance = tolerance_for(min(floats, key=lambda d: d.itemsize, default=np.float32))
    with np.errstate(all="ignore"):
        eager_args, run_args = copy.deepcopy(args), copy.deepcopy(args)
        want = fn(*eager_args, **kwargs)
        got = compiled(*run_args, **kwargs)
    try:
        assert_same(want, got, tolerance)
        assert_same(eager_args, run_args, tolerance)
    except AssertionError as exc:
        return f"MISMATCH: {str(exc)[:300]}"
    return "ok"


def bench_cupy(fn, args, kwargs, seconds: float):
    try:
        import cupy
    except ImportError:
        return None
    try:
        device = [cupy.asarray(x) if isinstance(x, np.ndarray) else x for x in args]
        return timed(lambda: fn(*device, **kwargs), seconds,
                     cupy.cuda.Device().synchronize)
    except Exception as exc:  # noqa: BLE001 -- not every model runs on CuPy arrays
        return f"n/a ({type(exc).__name__})"


def table(rows: list[dict], copy_bw: float) -> str:
    lines = [f"device-to-device copy: {copy_bw / 1e9:.1f} GB/s",
             f"{'model':<12} {'numpy ms':>10} {'cupy ms':>10} {'fusejit ms':>11} "
             f"{'speedup':>8} {'GB/s':>8} {'% copy':>7} {'kernels':>8} {'host':>5} "
             f"{'host-call ms':>12}  check"]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['model']:<12} error: {row['error']}")
            continue
        cupy_s = row["cupy_s"]
        cupy_text = f"{cupy_s * 1e3:10.3f}" if isinstance(cupy_s, float) else f"{'-':>10}"
        lines.append(f"{row['model']:<12} {row['numpy_s'] * 1e3:10.3f} {cupy_text} "
                     f"{row['fusejit_cuda_s'] * 1e3:11.3f} "
                     f"{row['numpy_s'] / row['fusejit_cuda_s']:8.1f} "
                     f"{row['fusejit_GBps']:8.1f} "
                     f"{100 * row['fusejit_GBps'] * 1e9 / copy_bw:6.0f}% "
                     f"{row['kernels']:>8} {row['host_steps']:>5} "
                     f"{row['host_call_s'] * 1e3:12.3f}  {row['matches_numpy']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--size", default="bench", choices=("small", "quick", "bench"))
    parser.add_argument("--test-timeout", type=int, default=240)
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the JSON and the tests' log here")
    options = parser.parse_args(argv)
    from fusejit.runtime.cuda import cuda_usable
    if not cuda_usable():
        print("bench/gpu.py needs a usable CUDA GPU (not the simulator)")
        return 2
    from bench.models import MODELS
    started = time.perf_counter()
    report = {"host": platform.node(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "environment": environment()}
    if options.out is not None:
        options.out.mkdir(parents=True, exist_ok=True)
    report["tests"] = None if options.skip_tests else run_tests(options.test_timeout,
                                                                  options.out)
    report["copy_bandwidth_Bps"] = copy_bw = copy_bandwidth()
    names = [n for n in options.models.split(",") if n] or sorted(MODELS)
    rows = []
    for name in names:
        try:
            rows.append(bench_model(name, options.seconds, options.size))
        except Exception as exc:  # noqa: BLE001 -- one broken workload must not hide the rest
            rows.append({"model": name, "error": f"{type(exc).__name__}: {str(exc)[:500]}"})
            logging.getLogger("bench.gpu").exception("%s failed", name)
        print(table(rows[-1:], copy_bw).splitlines()[-1], flush=True)
    report["rows"], report["seconds"] = rows, time.perf_counter() - started
    report["elementwise_fraction_of_copy"] = {
        r["model"]: r["fusejit_GBps"] * 1e9 / copy_bw for r in rows
        if r["model"] in ELEMENTWISE and "error" not in r}
    print(table(rows, copy_bw))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"gpu-{time.strftime('%Y%m%d-%H%M%S')}.json"
    text = json.dumps(report, indent=2, default=str)
    path.write_text(text)
    if options.out is not None:
        (options.out / path.name).write_text(text)
    print(f"wrote {path}")
    tests_ok = report["tests"] is None or report["tests"]["returncode"] == 0
    checks_ok = all(r.get("matches_numpy") == "ok" for r in rows)
    return 0 if tests_ok and checks_ok else 1


if __name__ == "__main__":
    sys.exit(main())
