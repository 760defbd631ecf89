"""Prints the fuzzer's counts (programs, fallbacks, ...) in pytest's terminal summary."""
from tests.fuzz.profiles import COUNTS, PROFILE


def pytest_terminal_summary(terminalreporter):
    if COUNTS:
        summary = ", ".join(f"{name}={count}" for name, count in sorted(COUNTS.items()))
        terminalreporter.write_line(f"fusejit fuzz ({PROFILE}): {summary}")
