"""The disk cache cannot hurt: concurrent writers, damaged and foreign entries, read-only dirs."""
import errno
import json
import os
import re
import shutil
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
    env.pop("NUMBA_CACHE_DIR", None)   # Numba's files beside the kernels, in cache_dir
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


@pytest.mark.parametrize("damage", ["entry-is-a-folder", "folder-is-a-file"])
def test_a_damaged_program_folder_is_repaired_once(tmp_path, damage):
    # Neither was rebuilt: every later process warned "cannot write the program cache".
    assert run(tmp_path).returncode == 0
    victim = entries(tmp_path, "programs", ".pkl")[0]
    if damage == "entry-is-a-folder":
        victim.unlink()
        victim.mkdir()
    else:
        folder = victim.parent
        shutil.rmtree(folder)
        folder.write_text("not a folder")
    first = run(tmp_path)
    assert first.returncode == 0, first.stderr
    assert "in the cache is" in first.stderr and "cannot write" not in first.stderr
    again = run(tmp_path)
    assert again.returncode == 0 and again.stderr.count("cache") == 0, again.stderr
    assert entries(tmp_path, "programs", ".pkl")


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


def test_damaged_numba_cache_files_are_deleted_and_compiled_again(tmp_path):
    # Numba links its cached code as found: a flipped bit could crash the process.
    assert run(tmp_path).returncode == 0
    numba_files = entries(tmp_path, "kernels/__pycache__", ".nbc")
    assert numba_files and all(Path(f"{f}.sha").exists() for f in numba_files)
    victim = numba_files[0]
    stat = victim.stat()
    data = bytearray(victim.read_bytes())
    data[-20] ^= 1
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))   # Numba's stamp still holds
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "do not match their checksums" in result.stderr
    assert "checksums" not in run(tmp_path).stderr   # sealed again: the next process is quiet


@pytest.mark.parametrize("damage", ["seal_not_text", "index_is_a_directory"])
def test_unreadable_numba_cache_files_are_deleted_and_compiled_again(tmp_path, damage):
    # Before, a .sha that was not UTF-8 or a directory in place of a Numba file made the
    # kernel fail to load in every process from then on: its signatures all ran eagerly.
    assert run(tmp_path).returncode == 0
    index = entries(tmp_path, "kernels/__pycache__", ".nbi")[0]
    if damage == "seal_not_text":
        Path(f"{index}.sha").write_bytes(b"\xff\xfe")
    else:
        index.unlink()
        index.mkdir()
    for _ in range(2):   # repaired by the first, quiet in the second
        result = run(tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["eager_signatures"] == 0, result.stderr
    assert "checksums" not in result.stderr


def test_an_unwritable_kernel_folder_compiles_into_a_private_one(tmp_path, monkeypatch,
                                                                 caplog):
    # A kernels folder that refuses writes (permissions, a full disk) made every signature
    # run eagerly; an unwritable version folder already fell back to a temporary one.
    from fusejit.codegen import source_cache
    cache = tmp_path / "cache"
    monkeypatch.setattr(source_cache.config, "cache_dir", lambda: cache)
    write = source_cache._write_atomic

    def full_disk(path, text):
        if cache in path.parents:
            raise OSError(errno.ENOSPC, "No space left on device")
        write(path, text)

    monkeypatch.setattr(source_cache, "_write_atomic", full_disk)
    path = source_cache._kernel_file("unwritable_kernel", "VALUE = 4\n")
    assert path.read_text() == "VALUE = 4\n" and cache not in path.parents
    assert "is not writable" in caplog.text


@pytest.mark.parametrize("value", ["abc", "inf", "nan", "-5"])
def test_a_bad_cache_bound_is_ignored_with_a_warning(monkeypatch, caplog, value):
    from fusejit import config
    from fusejit.runtime import program_cache
    monkeypatch.setenv("FUSEJIT_CACHE_MAX_MB", value)
    assert program_cache.max_bytes() == program_cache.DEFAULT_MAX_MB * 2**20
    config._ignored.cache_clear()
    program_cache.max_bytes()
    assert f"FUSEJIT_CACHE_MAX_MB={value!r} is not a size in MiB" in caplog.text


# Imports a CUDA kernel module (no GPU needed) and prints where Numba keeps its files.
CUDA_SCRIPT = r"""
import logging
from fusejit.codegen import numba_cuda, source_cache
logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
source = "from numba import cuda\n@cuda.jit(cache=True)\ndef kernel(a):\n    a[0] = 1\n"
module = numba_cuda.load_cuda_module(source_cache.source_key(source), source)
print(source_cache.source_key(source), module.kernel._cache._cache_path)
"""


def test_unsealed_numba_files_of_a_cuda_kernel_are_deleted_before_its_first_launch(tmp_path):
    env = dict(os.environ, FUSEJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    command = [sys.executable, "-c", CUDA_SCRIPT]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    key, folder = first.stdout.split()
    planted = [Path(folder) / f"{key}.kernel-3.py311.{suffix}" for suffix in ("nbi", "nbc")]
    for path in planted:
        path.write_bytes(b"not what Numba wrote")
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "do not match their checksums" in second.stderr
    assert not any(path.exists() for path in planted)


def test_read_only_cache_location_compiles_in_memory_and_warns_once():
    result = run("/proc/fusejit-cache")  # not writable, even by root
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("is not writable") == 1
    used = re.search(r"compiling into (\S+) for this process only", result.stderr)[1]
    assert not Path(used).exists()   # deleted at exit: one leaked per process before


def test_eviction_deletes_least_recently_used_files_until_the_bound(tmp_path):
    from fusejit.runtime import program_cache
    old_version = tmp_path / "fj0.1+aaa-nb0.68" / "programs"
    current = tmp_path / "fj0.2+bbb-nb0.68" / "programs"
    for folder in (old_version, current):
        folder.mkdir(parents=True)
    files = []
    for age, folder in enumerate([old_version, old_version, current, current]):
        path = folder / f"entry{age}.pkl"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1000 + age, 1000 + age))  # entry0 is the least recently used
        files.append(path)
    (current / ".tmp-in-flight").write_bytes(b"x" * 5000)  # a write in progress: never touched
    assert program_cache.evict(tmp_path, 2500) == 2
    assert [p.exists() for p in files] == [False, False, True, True]
    assert (current / ".tmp-in-flight").exists()


def test_storing_programs_keeps_the_cache_under_its_bound(tmp_path, monkeypatch):
    from fusejit import config
    from fusejit.runtime import program_cache
    monkeypatch.setenv("FUSEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSEJIT_CACHE_MAX_MB", str(20_000 / 2**20))
    monkeypatch.setattr(program_cache, "_written_since_scan", [None])
    stale = config.cache_root() / "fj0.1+stale-nb0.68" / "kernels" / "old.py"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"#" * 15_000)
    os.utime(stale, (1000, 1000))
    program_cache.store("a" * 40, {"payload": "p" * 8_000})   # first write: scans
    assert not stale.exists() and program_cache.load("a" * 40) == {"payload": "p" * 8_000}


def test_eviction_deletes_fusejits_own_files_only(tmp_path):
    from fusejit.runtime.program_cache import evict
    own = tmp_path / "fj0.0+abc-nb0.68-ll0.45"
    (own / "kernels").mkdir(parents=True)
    (own / "kernels" / "old.py").write_text("x" * 100)
    (tmp_path / "weights.npy").write_bytes(b"w" * 100)      # the user's, beside it
    (tmp_path / "fjords").mkdir()
    (tmp_path / "fjords" / "notes.txt").write_text("n")
    assert evict(tmp_path, 0) == 1
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["notes.txt",
                                                                         "weights.npy"]


def test_a_kernel_module_runs_its_checked_source_not_a_bytecode_file_found_beside_it(tmp_path):
    import importlib.util
    import py_compile

    from fusejit.codegen import source_cache
    path = tmp_path / "k_tampered.py"
    real, forged = "VALUE = 'real'  \n", "VALUE = 'forged'\n"   # the same length
    path.write_text(forged)
    os.utime(path, (1_000_000, 1_000_000))
    py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)))
    path.write_text(real)    # same size and time: Python's import would trust the .pyc
    os.utime(path, (1_000_000, 1_000_000))
    module = source_cache.import_file("fusejit_test_kernels", "fusejit_test_kernels.k_t",
                                      path, real)
    assert module.VALUE == "real"


@pytest.mark.parametrize("damage", ["kernels_is_a_file", "kernel_is_a_directory"])
def test_a_damaged_kernel_directory_is_repaired_with_a_warning(tmp_path, monkeypatch, caplog,
                                                              damage):
    from fusejit.codegen import source_cache
    monkeypatch.setattr(source_cache.config, "cache_dir", lambda: tmp_path)
    source, key = "VALUE = 3\n", "damaged_kernel"
    if damage == "kernels_is_a_file":
        (tmp_path / "kernels").write_text("x")
    else:
        (tmp_path / "kernels" / f"{key}.py").mkdir(parents=True)
    path = source_cache.ensure_file(source_cache.kernel_dir() / f"{key}.py", source)
    assert path.read_text() == source and "replacing it" in caplog.text


def test_a_well_formed_entry_holding_no_program_is_rebuilt(tmp_path, monkeypatch, caplog):
    from fusejit.runtime import pipeline, program_cache
    monkeypatch.setenv("FUSEJIT_CACHE_DIR", str(tmp_path))
    program_cache.store("k" * 40, ("not", "a", "program"))   # hash and key as a real one
    assert program_cache.load("k" * 40, check=pipeline._is_optimized) is None
    assert "it holds a tuple, not a program" in caplog.text
    assert not entries(tmp_path, "programs", ".pkl")


def test_a_relative_cache_directory_stays_where_it_was_first_read(tmp_path, monkeypatch):
    from fusejit import config
    name = f"relative-cache-{os.getpid()}-{id(tmp_path)}"
    monkeypatch.setenv("FUSEJIT_CACHE_DIR", name)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    first = config.cache_root()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert config.cache_root() == first == tmp_path / name
