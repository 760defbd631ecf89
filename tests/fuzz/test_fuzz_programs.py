"""Differential fuzzing: random NumPy programs, eager versus ``fusejit.compile``.

Each drawn program (see ``generator.py``) runs 3 times with fresh data of the same shapes,
eagerly and compiled; the replays are what matter. Run the long profile with
``FUSEJIT_FUZZ=long python -m pytest tests/fuzz -q``.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusejit.errors import UnsupportedError
from tests.fuzz.differential import check
from tests.fuzz.generator import programs
from tests.fuzz.profiles import COUNTS, PROFILE, log_progress
from tests.fuzz.watchdog import deadline, terminal

# A program compiles and runs in about a second; one that takes this long is hung (LLVM once
# spent minutes on a kernel). The run then ends with the program's source and every thread's
# traceback on the terminal instead of waiting forever.
PROGRAM_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def alarm_output(pytestconfig):
    with terminal(pytestconfig) as out:
        yield out


@settings(settings.get_profile(PROFILE))
@given(program=programs(), seed=st.integers(1, 2**31))
def test_compiled_program_equals_eager(alarm_output, program, seed):
    COUNTS["programs"] += 1
    log_progress(program, seed)
    fn = program.build()
    try:
        with deadline(PROGRAM_TIMEOUT_S, lambda: f"{program!r}\nseed={seed}", alarm_output):
            outcome = check(fn, lambda call: program.make_inputs(seed + call),
                            inexact=program.inexact)
    except AssertionError as exc:
        if isinstance(exc.__cause__, UnsupportedError):
            COUNTS["unsupported"] += 1
        raise
    COUNTS["fallbacks"] += outcome.fallback
    COUNTS["eager_raised"] += outcome.eager_raised
    COUNTS["retraced"] += outcome.traces > 1
    COUNTS["replays"] += outcome.hits
    COUNTS["kernels"] += outcome.kernels
