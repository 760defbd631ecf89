"""Generated kernel modules as real files, so that Numba's ``cache=True`` works across processes.

``<cache_dir>/kernels/<key>.py`` holds the source whose sha256 prefix is ``key``. A file whose
content differs from what we expect (truncated, edited, foreign) is rewritten, never imported
blindly. Writes are atomic (temporary file + ``os.replace``), so concurrent processes see
either no file or a whole one. Within a process a dict maps key -> module.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
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


def source_key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:KEY_CHARS]


def kernel_dir() -> Path:
    path = config.cache_dir() / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_module(key: str, source: str) -> types.ModuleType:
    """The module for ``source``: from this process's table, else written and imported."""
    with _lock:
        module = _modules.get(key)
        if module is not None:
            _counts["reused"] += 1
            return module
        path = ensure_file(kernel_dir() / f"{key}.py", source)
        module = import_file(PACKAGE, f"{PACKAGE}.k_{key}", path)
        _modules[key] = module
        _counts["compiled"] += 1
        return module


def ensure_file(path: Path, source: str) -> Path:
    """Write ``source`` to ``path`` unless the file already holds exactly that text."""
    try:
        if path.read_text() == source:
            return path  # keep the mtime: Numba's on-disk cache is keyed by it
        log.warning("kernel file %s does not hold the source it is named for; rewriting it",
                    path.name)
    except (OSError, UnicodeDecodeError):
        pass
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(source)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def import_file(package_name: str, name: str, path: Path) -> types.ModuleType:
    """Import a generated source file as ``name`` inside a synthetic package (so that Numba's
    ``cache=True`` can find the file)."""
    if package_name not in sys.modules:
        package = types.ModuleType(package_name)
        package.__path__ = []
        sys.modules[package_name] = package
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def stats() -> dict[str, int]:
    """``compiled``: modules built in this process; ``reused``: lookups served from the table."""
    with _lock:
        return dict(_counts)
