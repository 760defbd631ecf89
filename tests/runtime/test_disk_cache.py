"""The disk cache cannot hurt: concurrent writers, damaged and foreign entries, read-only dirs."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Compiles the small GPT-2 forward, replays it, checks it against eager NumPy, reports counters.
SCRIPT = r"""
import copy, json, logging, sys
import numpy as np
import fusejit
from bench.models import gpt2_block as m
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
(ids, params, n_head), _ = m.make_gpt2_inputs(size="small")
f = fusejit.compile(m.gpt2)
expected = m.gpt2(ids, params, n_head)
for _ in range(2):
    np.testing.assert_allclose(f(ids, params, n_head), expected, rtol=2e-4, atol=2e-5)
print(json.dumps(f.cache_info()))
"""


def run(cache_dir, background=False):
    env = dict(os.environ, FUSEJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    env.pop("FUSEJIT_LOG", None)
    command = [sys.executable, "-c", SCRIPT]
    if background:
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def entries(cache_dir, folder, suffix):
    return sorted(Path(cache_dir).rglob(f"{folder}/*{suffix}"))


def test_two_processes_compiling_into_one_cache_at_once(tmp_path):
    first, second = run(tmp_path, background=True), run(tmp_path, background=True)
    for proc in (first, second):
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    assert entries(tmp_path, "programs", ".pkl") and entries(tmp_path, "kernels", ".py")
    assert not list(Path(tmp_path).rglob(".tmp-*")), "a temporary file was left behind"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign"])
def test_damaged_program_entries_are_rebuilt_with_a_warning(tmp_path, damage):
    assert run(tmp_path).returncode == 0
    programs = entries(tmp_path, "programs", ".pkl")
    victim = programs[0]
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:100])
    elif damage == "garbage":
        victim.write_bytes(b"0" * 64 + b"\n" + os.urandom(300))
    else:  # a valid entry, but written for another program
        other = tmp_path / "other"
        assert run(other).returncode == 0
        donor = next(p for p in entries(other, "programs", ".pkl"))
        victim.write_bytes(_retarget(donor.read_bytes(), programs))
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "damaged program cache entry" in result.stderr
    assert run(tmp_path).stderr.count("damaged") == 0  # rebuilt: the next process is quiet


def _retarget(blob, programs):
    """A well-formed entry for a *different* fingerprint: valid hash, wrong content."""
    import hashlib
    import pickle
    _, payload = blob.split(b"\n", 1)
    _, value = pickle.loads(payload)
    payload = pickle.dumps(("0" * 40, value))
    return hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def test_corrupted_kernel_source_is_regenerated(tmp_path):
    assert run(tmp_path).returncode == 0
    for source in entries(tmp_path, "kernels", ".py"):
        source.write_text("raise SystemExit('a corrupted kernel file was imported')\n")
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "does not hold the source it is named for" in result.stderr


def test_read_only_cache_location_compiles_in_memory_and_warns_once():
    result = run("/proc/fusejit-cache")  # not writable, even by root
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("is not writable") == 1
