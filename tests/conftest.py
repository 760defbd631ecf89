"""Test-wide settings: strict mode (tracer inconsistencies raise) and a private kernel cache."""
import os
import tempfile

os.environ.setdefault("FUSEJIT_STRICT", "1")
os.environ.setdefault("FUSEJIT_CACHE_DIR", tempfile.mkdtemp(prefix="fusejit-test-cache-"))
if os.environ.get("PYTEST_XDIST_WORKER"):   # parallel workers (bench/gpu.py): a cache each
    os.environ["FUSEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusejit-test-cache-")
