"""The optimized program of each traced graph, kept on disk so a new process skips the passes.

Entries are named by a fingerprint of the traced graph (its printed IR, the target, the pass
pipeline and every version in ``config.version_tag``). Each file holds a SHA-256 of its payload
and the fingerprint it was written for: a truncated, corrupt or foreign file is deleted with a
warning and rebuilt, never used. Writes are atomic (write, then rename), so concurrent
processes sharing the directory never read half an entry.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from .. import config
from ..codegen.source_cache import directory_removed, usable_dir
from ..ir import print_graph
from ..logs import topic

log = topic("cache")
DEFAULT_MAX_MB = 2048


def fingerprint(graph, target, pipeline) -> str:
    text = "\n".join([config.version_tag(), target, ",".join(pipeline), print_graph(graph),
                      _attrs_text(graph)])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _attrs_text(graph) -> str:
    """Attributes the printer abbreviates (host callables) still belong in the fingerprint."""
    return repr([sorted((k, repr(v)) for k, v in node.attrs) for node in graph.nodes])


def _path(key: str) -> Path:
    return config.cache_dir() / "programs" / f"{key}.pkl"


def load(key: str, check=None):
    """The cached (graph, stats) for ``key``, or None. ``check``: whether a value is of the
    kind stored (one that is not, written by another tool, is damage too)."""
    path = _path(key)
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    digest, _, payload = blob.partition(b"\n")
    try:
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            raise ValueError("content hash mismatch")
        stored_key, value = pickle.loads(payload)
        if stored_key != key:
            raise ValueError(f"entry written for {stored_key}")
        if check is not None and not check(value):
            raise ValueError(f"it holds a {type(value).__name__}, not a program")
    except Exception as exc:  # noqa: BLE001 -- any damage means: rebuild
        log.warning("ignoring damaged program cache entry %s (%s); rebuilding", path.name, exc)
        _remove(path)
        return None
    os.utime(path)  # least-recently-used eviction reads modification times
    return value


def store(key: str, value) -> None:
    try:
        payload = pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 -- an unpicklable attribute: keep it in memory
        log.debug("program %s not cached on disk: %s", key, exc)
        return
    blob = hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    path = _path(key)
    try:
        usable_dir(path.parent)       # damage (a file for the folder, a folder for the entry)
        directory_removed(path)       # is repaired, not warned about in every process
        atomic_write(path, blob)
        _evict_now_and_then(len(blob))
    except OSError as exc:
        log.warning("cannot write the program cache (%s); continuing in memory", exc)


_written_since_scan = [None]   # bytes this process wrote since it last scanned; None: never


def _evict_now_and_then(written: int) -> None:
    """Scanning the cache costs a stat per file (50 ms over a few thousand): scan on a
    process's first write, then once it has written 1/64 of the bound since the last scan,
    so the directory overshoots the bound by at most that much per process."""
    limit = max_bytes()
    since = _written_since_scan[0]
    if since is not None and since + written < limit // 64:
        _written_since_scan[0] = since + written
        return
    _written_since_scan[0] = 0
    evict(config.cache_root(), limit)  # old versions' entries age out too


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        _remove(Path(tmp))
        raise


def max_bytes() -> int:
    return config.cache_max_bytes(DEFAULT_MAX_MB)


def evict(root: Path, limit: int) -> int:
    """Delete least-recently-used files of fusejit's version directories until they fit in
    ``limit`` bytes. Nothing else in the root is touched: ``FUSEJIT_CACHE_DIR`` may name a
    directory that holds the user's own files too."""
    files = [(p.stat().st_mtime, p.stat().st_size, p) for own in config.own_dirs(root)
             for p in own.rglob("*") if p.is_file() and not p.is_symlink()
             and not p.name.startswith(".tmp-")]
    total, removed = sum(size for _, size, _ in files), 0
    for _, size, path in sorted(files, key=lambda entry: entry[0]):
        if total <= limit:
            break
        _remove(path)
        total, removed = total - size, removed + 1
    return removed


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
