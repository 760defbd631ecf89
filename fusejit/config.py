"""Process-wide settings read from the environment (no mutable module state beyond caching)."""
from __future__ import annotations

import functools
import logging
import math
import os
import platform
from pathlib import Path


def strict() -> bool:
    """``FUSEJIT_STRICT=1``: internal inconsistencies raise instead of falling back to eager.
    The test suite sets it so that a fallback can never hide a tracer bug."""
    return os.environ.get("FUSEJIT_STRICT", "") not in ("", "0")


def progress() -> bool | None:
    """``FUSEJIT_PROGRESS``: ``0`` never shows the compile progress line, ``1`` shows it even
    when stderr is not a terminal (a CI log); unset, it shows on a terminal only (None)."""
    env = os.environ.get("FUSEJIT_PROGRESS", "").strip().lower()
    if env in ("", "auto"):
        return None
    if env in ("0", "off", "no", "false"):
        return False
    if env in ("1", "on", "yes", "true"):
        return True
    logging.getLogger("fusejit").warning("FUSEJIT_PROGRESS=%r is not 0 or 1: ignored", env)
    return None


def vector_bits() -> int | None:
    """``FUSEJIT_VECTOR_BITS`` (``256`` or ``512``): the vector width CPU kernels ask LLVM
    for. Unset: 512 where the CPU has AVX-512F, else LLVM's own choice (None). LLVM tunes every
    AVX-512 CPU to prefer 256-bit vectors, for the clock drop of 512-bit code on 2017's
    Skylake-SP; softmax's exp pass measured 1.5x faster in zmm than ymm on this host's Xeon."""
    env = os.environ.get("FUSEJIT_VECTOR_BITS", "").strip()
    if env in ("256", "512"):
        return int(env)
    if env:
        _ignored("FUSEJIT_VECTOR_BITS", env, "256 or 512")
    return 512 if cpu_has("avx512f") else None


def cache_max_bytes(default_mb: float) -> int:
    """``FUSEJIT_CACHE_MAX_MB``: the bound on the whole cache root, in bytes."""
    return megabytes("FUSEJIT_CACHE_MAX_MB", default_mb)


def arena_max_bytes(default_mb: float) -> int:
    """``FUSEJIT_ARENA_MAX_MB``: the bound on the intermediates' arenas kept between calls."""
    return megabytes("FUSEJIT_ARENA_MAX_MB", default_mb)


def recycle_max_bytes(default_mb: float) -> int:
    """``FUSEJIT_RECYCLE_MAX_MB``: the bound on dropped outputs' buffers kept for reuse."""
    return megabytes("FUSEJIT_RECYCLE_MAX_MB", default_mb)


def megabytes(name: str, default_mb: float) -> int:
    """A size in MiB from the environment variable ``name``, in bytes; a bad value is ignored
    with one warning."""
    env = os.environ.get(name, "").strip()
    if not env:
        return int(default_mb * 2**20)
    try:
        size = float(env)
    except ValueError:
        size = math.nan
    if not 0 <= size < math.inf:
        _ignored(name, env, "a size in MiB, 0 or more")
        size = default_mb
    return int(size * 2**20)


@functools.cache
def _ignored(name: str, value: str, expected: str) -> None:
    # Once per value: a bad setting must not stop compiling, nor warn on every call.
    logging.getLogger("fusejit").warning("%s=%r is not %s: ignored", name, value, expected)


def cpu_has(feature: str) -> bool:
    """Whether the CPU Numba compiles for has ``feature`` (LLVM's name: ``avx512f``, ``fma``)."""
    return f"+{feature}" in _cpu_features().split(",")


@functools.cache
def _cpu_features() -> str:
    """The feature string Numba compiles for: ``NUMBA_CPU_FEATURES``; none where
    ``NUMBA_CPU_NAME`` names a CPU without them (``generic``, for portable caches); else the
    host's."""
    from numba.core import config as numba_config
    if numba_config.CPU_FEATURES:
        return numba_config.CPU_FEATURES
    if numba_config.CPU_NAME:
        return ""
    import llvmlite.binding as llvm
    return llvm.get_host_cpu_features().flatten()


def cache_root() -> Path:
    """``FUSEJIT_CACHE_DIR``, else ``~/.cache/fusejit``."""
    env = os.environ.get("FUSEJIT_CACHE_DIR")
    return _absolute(env) if env else Path.home() / ".cache" / "fusejit"


@functools.cache
def _absolute(path: str) -> Path:
    """A relative cache directory, from the working directory where it was first read: one
    folder, whatever ``os.chdir`` the program makes later."""
    return Path(path).expanduser().absolute()


@functools.cache
def version_tag() -> str:
    """Cache entries are versioned by fusejit, Numba, llvmlite, NumPy and the CPU."""
    import llvmlite
    import numba
    import numpy

    from . import __version__
    parts = (f"fj{__version__}+{_source_hash()}", f"nb{numba.__version__}",
             f"ll{llvmlite.__version__}", f"np{numpy.__version__}", platform.machine())
    return "-".join(parts)


def _source_hash() -> str:
    """Entries made by other fusejit code (an upgrade, a local edit) are never reused."""
    import hashlib
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def own_dirs(root: Path) -> list[Path]:
    """fusejit's version directories in the cache root (``fj<version>+<hash>-nb...``): the
    only places eviction and ``fusejit cache clear`` touch, whatever else the root holds."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    return [p for p in entries if p.name.startswith("fj") and "-nb" in p.name and p.is_dir()
            and not p.is_symlink()]


def cache_dir() -> Path:
    """The versioned cache directory for this process, created private to the user.

    When it cannot be written (a read-only home, say), a private temporary directory serves
    this process instead, with one warning: compiling still works, it just is not kept."""
    root = cache_root()
    path = root / version_tag()
    try:
        if not root.exists():
            root.mkdir(parents=True, mode=0o700)  # private to the user: it holds code we import
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    return fallback_dir(str(path))


@functools.cache
def fallback_dir(wanted: str) -> Path:
    import atexit
    import logging
    import tempfile
    path = Path(tempfile.mkdtemp(prefix="fusejit-cache-"))
    logging.getLogger("fusejit.cache").warning(
        "cache directory %s is not writable; compiling into %s for this process only",
        wanted, path)
    atexit.register(_remove_at_exit, path, os.getpid())   # one per process, not one per run
    return path


def _remove_at_exit(path: Path, owner: int) -> None:
    import shutil
    if os.getpid() == owner:   # not a forked child, which inherits the handler
        shutil.rmtree(path, ignore_errors=True)
