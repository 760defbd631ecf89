"""``python -m fusejit.benchprobe FILE.py:FUNC [--arg ...]``: compile latency in this process.

``fusejit bench`` runs it in fresh processes, once over an empty cache (cold) and once over the
cache that run filled (warm), so that nothing but the disk cache is shared."""
from __future__ import annotations

import json
import sys
import time


def probe(function: str, specs: list[str]) -> dict:
    started = time.perf_counter()
    import fusejit

    from .cli_args import build_arguments, load_function
    module, fn = load_function(function)
    args, kwargs = build_arguments(fn, specs, module)
    compiled = fusejit.compile(fn)
    imported = time.perf_counter()
    compiled(*args, **kwargs)
    traced = time.perf_counter()
    compiled(*args, **kwargs)
    replayed = time.perf_counter()
    return {"import_s": imported - started, "trace_s": traced - imported,
            "first_replay_s": replayed - traced, "total_s": replayed - started,
            "kernels_compiled": compiled.cache_info()["kernels_compiled"]}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    specs = [argv[i + 1] for i, word in enumerate(argv) if word == "--arg"]
    print(json.dumps(probe(argv[0], specs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
