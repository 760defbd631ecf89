"""Test-wide settings: strict mode (tracer inconsistencies raise), a private kernel cache, and
property tests that draw the same examples on every run.

Hypothesis seeds each property test from the test itself (``derandomize``), so a red run
reproduces and CI is never red by the luck of a draw. ``--hypothesis-profile=explore`` draws
new examples; the fuzzer's long profile always does (``tests/fuzz/README.md``).
"""
import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import settings


def _private_dir(prefix: str) -> str:
    """A temp dir this test process removes when it exits (a run left ~100 MB behind)."""
    path, owner = tempfile.mkdtemp(prefix=prefix), os.getpid()
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(path, ignore_errors=True))
    return path


os.environ.setdefault("FUSEJIT_STRICT", "1")
# parallel workers (bench/gpu.py) get a cache each; a pytest run inside a test's subprocess
# (the CUDA simulator cases) shares its parent's
if "FUSEJIT_CACHE_DIR" not in os.environ or os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["FUSEJIT_CACHE_DIR"] = _private_dir("fusejit-test-cache-")
if "FUSEJIT_BENCH_RESULTS" not in os.environ:   # bench JSON and charts of the CLI tests
    os.environ["FUSEJIT_BENCH_RESULTS"] = _private_dir("fusejit-bench-results-")

settings.register_profile("fusejit-tests", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("fusejit-tests")   # --hypothesis-profile, read later, overrides it

from fusejit.passes import fusion_rules  # noqa: E402  (after the environment above)


@pytest.fixture(autouse=True)
def _libm_ops_fuse_on_every_host(monkeypatch):
    """Ops that NumPy runs with AVX-512 loops where it has them (``fusion_rules.
    numpy_simd_loops``) fuse into kernels in every test, whatever the host: golden IR, kernel
    counts and explain text are the same on every machine, and the kernels' templates for
    those ops meet NumPy in the differential tests. Tests of the AVX-512 choice set it."""
    monkeypatch.setattr(fusion_rules, "SIMD_IN_NUMPY", {})
