"""Generated kernel modules as real files, so that Numba's ``cache=True`` works across processes.

``<cache_dir>/kernels/<key>.py`` holds the source whose sha256 prefix is ``key``. A file whose
content differs from what we expect (truncated, edited, foreign) is rewritten, never imported
blindly. Writes are atomic (temporary file + ``os.replace``), so concurrent processes see
either no file or a whole one. Within a process a dict maps key -> module.

Numba's own cache files (``kernels/__pycache__/<key>.*.nbi``/``.nbc``, unless
``NUMBA_CACHE_DIR`` moves them) carry no checksum, and Numba links a damaged one as found (a
flipped bit can crash the process). Each time Numba saves a kernel's compiled code, its files
get a ``.sha`` beside them; once a kernel module is imported, before its first call loads
anything, its files are checked against theirs, and all of them are deleted (Numba compiles
again) when one does not match or has none.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import types
from pathlib import Path

from .. import config
from ..logs import topic

log = topic("cache")

PACKAGE = "fusejit_kernels"
KEY_CHARS = 20

_modules: dict[str, types.ModuleType] = {}
_counts = {"compiled": 0, "reused": 0}
_lock = threading.Lock()


def _new_lock() -> None:
    # a child forked while another thread wrote a kernel would wait for ever on the lock
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock)


def source_key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:KEY_CHARS]


def kernel_dir() -> Path:
    return usable_dir(config.cache_dir() / "kernels")


def usable_dir(path: Path) -> Path:
    """``path`` as a directory. A file there (damage, a stray write) is removed with a
    warning, so compiling does not fail in every process from now on."""
    if path.is_symlink() or path.exists() and not path.is_dir():
        log.warning("%s in the cache is not a directory; replacing it", path)
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    return path


def directory_removed(path: Path) -> None:
    """A directory where fusejit keeps a file (a kernel, a program): removed, with a
    warning."""
    if path.is_dir() and not path.is_symlink():
        log.warning("%s in the cache is a directory, not a file; replacing it", path)
        shutil.rmtree(path)


def load_module(key: str, source: str) -> types.ModuleType:
    """The module for ``source``: from this process's table, else written and imported."""
    with _lock:
        module = _modules.get(key)
        if module is not None:
            _counts["reused"] += 1
            return module
        path = _kernel_file(key, source)
        module = import_file(PACKAGE, f"{PACKAGE}.k_{key}", path, source)
        guard_numba_cache(module, key)   # before a first call loads anything from it
        _modules[key] = module
        _counts["compiled"] += 1
        return module


def _kernel_file(key: str, source: str) -> Path:
    """The kernel's file in the cache, else (an unwritable ``kernels`` folder, a full disk)
    in the private temporary directory that serves this process, with one warning."""
    try:
        return ensure_file(kernel_dir() / f"{key}.py", source)
    except OSError:
        wanted = config.cache_dir() / "kernels"
        fallback = usable_dir(config.fallback_dir(str(wanted)) / "kernels")
        return ensure_file(fallback / f"{key}.py", source)


def _numba_caches(module) -> list:
    """The Numba caches of the module's dispatchers (``cache=True``)."""
    caches = [getattr(value, "_cache", None) for value in vars(module).values()]
    return [c for c in caches if hasattr(c, "save_overload") and hasattr(c, "_cache_path")]


def numba_cache_files(key: str, caches) -> list[Path]:
    """The kernel's Numba files, wherever Numba keeps them (``NUMBA_CACHE_DIR`` moves them)."""
    folders = sorted({Path(cache._cache_path) for cache in caches})
    return sorted(f for folder in folders for f in folder.glob(f"{key}.*.nb[ci]"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seal_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha")


def guard_numba_cache(module, key: str) -> None:
    """Check the kernel's Numba files now, and seal them each time Numba saves to them (CPU
    and CUDA dispatchers alike; the CUDA simulator's kernels keep no files)."""
    caches = _numba_caches(module)
    check_numba_cache(key, caches)
    for cache in caches:
        def save_and_seal(sig, data, save=cache.save_overload):
            save(sig, data)
            seal_numba_cache(key, caches)
        cache.save_overload = save_and_seal


def check_numba_cache(key: str, caches) -> None:
    """Delete the kernel's Numba cache files unless each matches its ``.sha``."""
    files = numba_cache_files(key, caches)
    try:
        if all(_seal_path(f).read_text() == _digest(f) for f in files):
            return
    except (OSError, UnicodeDecodeError):   # no .sha, a damaged one, a directory: not whole
        pass
    log.warning("Numba cache files of kernel %s do not match their checksums; compiling it "
                "again", key)
    for path in files:
        _remove(path)
        _remove(_seal_path(path))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def seal_numba_cache(key: str, caches) -> None:
    """A ``.sha`` beside each of the kernel's Numba cache files, as they are now."""
    try:
        for path in numba_cache_files(key, caches):
            _write_atomic(_seal_path(path), _digest(path))
    except OSError as exc:   # a read-only or vanished cache: checked again next time
        log.debug("cannot seal the Numba cache of kernel %s: %s", key, exc)


def ensure_file(path: Path, source: str) -> Path:
    """Write ``source`` to ``path`` unless the file already holds exactly that text."""
    directory_removed(path)
    try:
        if path.read_text() == source:
            return path  # keep the mtime: Numba's on-disk cache is keyed by it
        log.warning("kernel file %s does not hold the source it is named for; rewriting it",
                    path.name)
    except (OSError, UnicodeDecodeError):
        pass
    _write_atomic(path, source)
    return path


def _write_atomic(path: Path, text: str) -> None:
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def import_file(package_name: str, name: str, path: Path, source: str) -> types.ModuleType:
    """Import a generated source file as ``name`` inside a synthetic package (so that Numba's
    ``cache=True`` can find the file). The code run is ``source``, the text checked against
    the file's name, compiled here: never a ``__pycache__`` file found in the cache."""
    if package_name not in sys.modules:
        package = types.ModuleType(package_name)
        package.__path__ = []
        sys.modules[package_name] = package
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102
    except BaseException:
        del sys.modules[name]
        raise
    return module


def stats() -> dict[str, int]:
    """``compiled``: modules built in this process; ``reused``: lookups served from the table."""
    with _lock:
        return dict(_counts)
