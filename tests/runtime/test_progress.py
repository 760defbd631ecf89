"""The progress line: only on a terminal, only once compiling has taken more than a second;
FUSEJIT_PROGRESS turns it off, or on for a log that is not a terminal."""
import io
import time

import pytest

from fusejit.runtime import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def _default_setting(monkeypatch):
    monkeypatch.delenv("FUSEJIT_PROGRESS", raising=False)


def test_progress_line_appears_on_a_terminal_after_the_delay(monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    stream = Terminal()
    bar = progress.Progress(3, "block", stream)
    for name in ("k0_add", "k1_sum", "k2_mul"):
        bar.step(name)
    bar.close()
    text = stream.getvalue()
    assert "compiling block [" in text and "3/3" in text and "compiled block in" in text


def test_no_progress_line_when_fast_or_not_a_terminal(monkeypatch):
    quiet = Terminal()
    bar = progress.Progress(2, "fast", quiet)       # the default one-second delay
    bar.step("k0")
    bar.close()
    assert quiet.getvalue() == ""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    piped = io.StringIO()                            # not a terminal
    bar = progress.Progress(2, "piped", piped)
    bar.step("k0")
    bar.close()
    assert piped.getvalue() == ""


def _shown(stream) -> str:
    bar = progress.Progress(1, "switch", stream)
    bar.step("k0")
    bar.close()
    return stream.getvalue()


@pytest.mark.parametrize("value, on_terminal, on_pipe", [
    ("0", False, False), ("off", False, False), ("1", True, True), ("auto", True, False)])
def test_fusejit_progress_switches_the_line(monkeypatch, value, on_terminal, on_pipe):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setenv("FUSEJIT_PROGRESS", value)
    assert bool(_shown(Terminal())) is on_terminal
    assert bool(_shown(io.StringIO())) is on_pipe


def test_progress_in_a_log_is_two_plain_lines(monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setenv("FUSEJIT_PROGRESS", "1")
    log = io.StringIO()
    bar = progress.Progress(3, "block", log)
    for name in ("k0_add", "k1_sum", "k2_mul"):
        bar.step(name)
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and len(lines) == 2
    assert lines[0] == "fusejit: compiling block (3 kernels)"
    assert lines[1].startswith("fusejit: compiled block in ")


def test_fusejit_progress_warns_about_a_value_it_does_not_know(monkeypatch, caplog):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setenv("FUSEJIT_PROGRESS", "sometimes")
    assert _shown(Terminal()) and not _shown(io.StringIO())     # as if unset
    assert "FUSEJIT_PROGRESS='sometimes' is not 0 or 1: ignored" in caplog.text


def test_the_line_appears_while_the_first_kernel_is_still_compiling(monkeypatch):
    # It appeared only when a kernel finished: a single slow kernel showed nothing at all.
    monkeypatch.setattr(progress, "DELAY_S", 0.05)
    stream = Terminal()
    bar = progress.Progress(2, "slow", stream)
    deadline = time.monotonic() + 10
    while "0/2" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)   # the first kernel compiling
    assert "compiling slow [" in stream.getvalue() and "0/2" in stream.getvalue()
    bar.step("k0")
    bar.step("k1")
    bar.close()
    assert stream.getvalue().rstrip().endswith("s") and "compiled slow in" in stream.getvalue()


def test_a_compile_that_fails_ends_the_line_saying_so(monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    stream = Terminal()
    bar = progress.Progress(2, "broken", stream)
    bar.step("k0")
    bar.close(failed=True)
    assert "stopped compiling broken in" in stream.getvalue()
    assert "compiled broken" not in stream.getvalue()
