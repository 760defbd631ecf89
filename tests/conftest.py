"""Test-wide settings: strict mode (tracer inconsistencies raise), a private kernel cache, and
property tests that draw the same examples on every run.

Hypothesis seeds each property test from the test itself (``derandomize``), so a red run
reproduces and CI is never red by the luck of a draw. ``--hypothesis-profile=explore`` draws
new examples; the fuzzer's long profile always does (``tests/fuzz/README.md``).
"""
import os
import tempfile

import pytest
from hypothesis import settings

os.environ.setdefault("FUSEJIT_STRICT", "1")
os.environ.setdefault("FUSEJIT_CACHE_DIR", tempfile.mkdtemp(prefix="fusejit-test-cache-"))
if os.environ.get("PYTEST_XDIST_WORKER"):   # parallel workers (bench/gpu.py): a cache each
    os.environ["FUSEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusejit-test-cache-")

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
