"""Test-wide settings: strict mode (tracer inconsistencies raise), a private kernel cache, and
property tests that draw the same examples on every run.

Hypothesis seeds each property test from the test itself (``derandomize``), so a red run
reproduces and CI is never red by the luck of a draw. ``--hypothesis-profile=explore`` draws
new examples; the fuzzer's long profile always does (``tests/fuzz/README.md``).
"""
import os
import tempfile

from hypothesis import settings

os.environ.setdefault("FUSEJIT_STRICT", "1")
os.environ.setdefault("FUSEJIT_CACHE_DIR", tempfile.mkdtemp(prefix="fusejit-test-cache-"))
if os.environ.get("PYTEST_XDIST_WORKER"):   # parallel workers (bench/gpu.py): a cache each
    os.environ["FUSEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusejit-test-cache-")

settings.register_profile("fusejit-tests", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("fusejit-tests")   # --hypothesis-profile, read later, overrides it
