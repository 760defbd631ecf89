"""The progress line: only on a terminal, only once compiling has taken more than a second."""
import io

from fusejit.runtime import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


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
