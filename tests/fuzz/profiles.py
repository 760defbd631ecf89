"""Hypothesis profiles for the fuzzer and the counts its summary line prints.

``fuzz-quick`` (the default, CI) draws the same 150 programs on every run (derandomized: a
red CI is this code's fault, not the draw's); ``FUSEJIT_FUZZ=long`` draws 10,000 new ones
each run, and so does a custom count (``FUSEJIT_FUZZ_EXAMPLES``): those runs explore.
"""
import os
import time
from collections import Counter

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=(HealthCheck.too_slow, HealthCheck.filter_too_much,
                                      HealthCheck.data_too_large))
settings.register_profile("fuzz-quick", max_examples=150, derandomize=True, **_COMMON)
settings.register_profile("fuzz-long", max_examples=10_000, derandomize=False, **_COMMON)
PROFILE = "fuzz-long" if os.environ.get("FUSEJIT_FUZZ") == "long" else "fuzz-quick"
if os.environ.get("FUSEJIT_FUZZ_EXAMPLES"):       # a custom count, for exploring
    settings.register_profile("fuzz-custom", settings.get_profile("fuzz-long"),
                              max_examples=int(os.environ["FUSEJIT_FUZZ_EXAMPLES"]))
    PROFILE = "fuzz-custom"

COUNTS: Counter = Counter()


def log_progress(program, seed: int) -> None:
    """``FUSEJIT_FUZZ_LOG=FILE``: append each program (and the running counts) as it starts,
    with its arguments and seed, so a long run shows where it is and what it was doing if it
    dies or hangs (``program.make_inputs(seed + call)`` rebuilds its inputs)."""
    path = os.environ.get("FUSEJIT_FUZZ_LOG")
    if path:
        with open(path, "a") as log:
            header = repr(program).splitlines()[0]   # flags and argument shapes
            log.write(f"# {dict(COUNTS)} t={time.monotonic():.1f}\n# {header} seed={seed}\n"
                      f"{program.source()}\n")
