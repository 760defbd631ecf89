"""The fuzz test's time limit: a hung program ends the run with its source and tracebacks on
the terminal (pytest's capture would otherwise swallow them with the process)."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HUNG_TEST = '''
import time

from tests.fuzz.watchdog import deadline, terminal


def test_hangs(pytestconfig):
    with terminal(pytestconfig) as out:
        with deadline(3, lambda: "def program(a0):  # the hung one", out, notice_s=2):
            time.sleep(60)
'''


def test_a_program_past_its_limit_ends_the_run_with_its_source_and_tracebacks(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_hung.py").write_text(HUNG_TEST)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path / "test_hung.py")],
                         cwd=tmp_path, env={"PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1
    assert "a program is still running after 1 s" in run.stderr
    assert "def program(a0):  # the hung one" in run.stderr
    assert "Timeout (0:00:03)!" in run.stderr
    assert "in test_hangs" in run.stderr          # the hung test's frame, from faulthandler
    assert "passed" not in run.stdout and "failed" not in run.stdout
