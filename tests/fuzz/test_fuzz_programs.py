"""Differential fuzzing: random NumPy programs, eager versus ``fusejit.compile``.

Each drawn program (see ``generator.py``) runs 3 times with fresh data of the same shapes,
eagerly and compiled; the replays are what matter. Run the long profile with
``FUSEJIT_FUZZ=long python -m pytest tests/fuzz -q``.
"""
import faulthandler

from hypothesis import given, settings
from hypothesis import strategies as st

from fusejit.errors import UnsupportedError
from tests.fuzz.differential import check
from tests.fuzz.generator import programs
from tests.fuzz.profiles import COUNTS, PROFILE, log_progress

# A program compiles and runs in about a second; one that takes this long is hung (LLVM once
# spent minutes on a kernel). The process then dies with every thread's traceback on stderr
# instead of a long run waiting forever; the progress log names the program and its seed.
PROGRAM_TIMEOUT_S = 300


@settings(settings.get_profile(PROFILE))
@given(programs(), st.integers(1, 2**31))
def test_compiled_program_equals_eager(program, seed):
    COUNTS["programs"] += 1
    log_progress(program, seed)
    fn = program.build()
    faulthandler.dump_traceback_later(PROGRAM_TIMEOUT_S, exit=True)
    try:
        outcome = check(fn, lambda call: program.make_inputs(seed + call),
                        inexact=program.inexact)
    except AssertionError as exc:
        if isinstance(exc.__cause__, UnsupportedError):
            COUNTS["unsupported"] += 1
        raise
    finally:
        faulthandler.cancel_dump_traceback_later()
    COUNTS["fallbacks"] += outcome.fallback
    COUNTS["eager_raised"] += outcome.eager_raised
    COUNTS["retraced"] += outcome.traces > 1
    COUNTS["replays"] += outcome.hits
    COUNTS["kernels"] += outcome.kernels
