"""The ``fusejit`` command: demo, dump, bench, cache. Errors are one line and a non-zero exit."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

from . import __version__, config
from .cli_args import CliError, build_arguments, load_function

EXIT_USAGE, EXIT_FAILURE = 2, 1


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_usage(sys.stderr)
        print("fusejit: error: a command is required (fusejit --help lists them)",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(args) or 0
    except BrokenPipeError:   # the reader went away (| head): quiet, as other tools are
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except CliError as exc:
        print(f"fusejit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # the user's model or the compiler failed: one line unless --debug
        if args.debug:
            traceback.print_exc()
        else:
            notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))
            print(f"fusejit: error: {type(exc).__name__}: {exc}{notes} (rerun with --debug for "
                  "the traceback)", file=sys.stderr)
        return EXIT_FAILURE


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fusejit", description="Compile NumPy functions "
                                     "into fused kernels, and look inside.")
    parser.add_argument("--version", action="version", version=f"fusejit {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in (_add_demo, _add_dump, _add_bench, _add_cache):   # ``--debug`` after it too
        add(commands).add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                   help="show tracebacks on errors")
    return parser


def _add_demo(commands):
    demo = commands.add_parser("demo", help="compile the bundled GPT-2 block, show the "
                               "fusion, time eager vs compiled")
    demo.add_argument("--size", choices=("small", "bench"), default="bench")
    demo.add_argument("--repeat", type=positive_int, default=20)
    demo.set_defaults(run=run_demo)
    return demo


def _add_dump(commands):
    dump = commands.add_parser("dump", help="print the IR or kernels of FILE.py:FUNC")
    dump.add_argument("function", metavar="FILE.py:FUNC")
    dump.add_argument("--arg", action="append", default=[], metavar="NAME=f32[256,1024]",
                      help="an argument: dtype[shape] for arrays, a Python literal otherwise")
    dump.add_argument("--stage", default="optimized",
                      help="traced | <pass name> | optimized | kernels | source | memory")
    dump.add_argument("--print-after", action="append", default=[], metavar="PASS")
    dump.add_argument("--why", action="store_true", help="list every refused fusion")
    dump.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    dump.add_argument("--format", choices=("text", "json", "dot"), default="text")
    dump.add_argument("--output", metavar="PATH", help="write to PATH instead of stdout")
    dump.set_defaults(run=run_dump)
    return dump


def _add_bench(commands):
    bench = commands.add_parser("bench", help="time eager NumPy against compiled")
    bench.add_argument("function", nargs="?", metavar="FILE.py:FUNC")
    bench.add_argument("--arg", action="append", default=[], metavar="NAME=f32[256,1024]")
    bench.add_argument("--suite", action="store_true", help="run the standard workloads")
    bench.add_argument("--quick", action="store_true")
    bench.add_argument("--repeat", type=positive_int, default=20)
    bench.add_argument("--json", action="store_true", help="print JSON instead of a table")
    bench.set_defaults(run=run_bench)
    return bench


def _add_cache(commands):
    cache = commands.add_parser("cache", help="inspect or clear the kernel cache")
    cache.add_argument("action", choices=("info", "clear"))
    cache.set_defaults(run=run_cache)
    return cache


# -- commands --------------------------------------------------------------------------------
def run_demo(args) -> int:
    from .demo import demo
    demo(size=args.size, repeat=args.repeat)
    return 0


def run_dump(args) -> int:
    import fusejit
    _check_format(args)
    with _user_output_to_stderr():   # also what the model file prints when imported
        module, fn = load_function(args.function)
        call_args, call_kwargs = build_arguments(fn, args.arg, module)
        # Tracing and the passes are the same for both targets; only the kernels differ, and
        # the CUDA ones can be generated (and assembled with ptxas) without a GPU.
        compiled = fusejit.compile(fn, target="cpu")
        entry = compiled.entry_for(*call_args, **call_kwargs)
        text = _dump_text(compiled, entry, args, call_args, call_kwargs)
    _emit(text, args.output)
    return 0


def _user_output_to_stderr():
    """What the user's code prints goes to stderr: stdout carries the report (JSON, dot)."""
    return contextlib.redirect_stdout(sys.stderr)


def _check_format(args) -> None:
    if args.format == "text":
        return
    text_only = [flag for flag, given in (
        (f"--stage {args.stage}", args.stage in ("kernels", "source", "memory", "ptx")),
        ("--why", args.why), ("--print-after", bool(args.print_after))) if given]
    if text_only:
        raise CliError(f"--format {args.format} writes a graph stage; {text_only[0]} is text "
                       "only (leave out --format)")


def _dump_text(compiled, entry, args, call_args, call_kwargs) -> str:
    from .runtime.explain import STAGES, stage_text
    from .runtime.export import graph_dot, graph_json
    for stage in (args.stage, *args.print_after):
        if stage not in STAGES + ("ptx",):
            raise CliError(f"unknown stage {stage!r}; choose from {', '.join(STAGES)}, ptx")
    if args.target == "cuda" and args.stage in ("source", "ptx", "kernels"):
        return _cuda_text(entry, args.stage)
    if args.stage == "ptx":
        raise CliError("--stage ptx needs --target cuda")
    if args.format != "text":
        graph = _stage_graph(entry, args.stage)
        return graph_json(graph) if args.format == "json" else graph_dot(graph)
    parts = [stage_text(entry, name) for name in args.print_after]
    parts.append(stage_text(entry, args.stage))
    if args.why:
        explanation = compiled.explain(*call_args, **call_kwargs)
        rows = [f"  {r.op} at {r.loc.short() if r.loc else '?'}: {r.reason}"
                for r in explanation.refusals]
        parts.append("refused fusions:\n" + ("\n".join(rows) if rows else "  (none)") + "\n")
    return "\n".join(parts)


def _cuda_text(tree, stage) -> str:
    from .codegen.numba_cuda import ptx_report
    from .runtime.cuda import lower_cuda
    from .runtime.explain import primary
    entry = primary(tree)
    if not hasattr(entry, "pipeline"):
        raise CliError(f"this signature runs eagerly: {entry.reason}")
    kernels = lower_cuda(entry.pipeline.graph).kernels
    blocks = []
    for kernel in kernels:
        if getattr(kernel, "kind", "") == "host":
            blocks.append(f"# {kernel.name}: runs on the host ({kernel.reason})")
        elif stage == "ptx":
            blocks += [f"{part.ptx()}\n{ptx_report(part)}"
                       for part in getattr(kernel, "parts", (kernel,))]
        else:
            blocks.append(kernel.source)
    return "\n\n".join(blocks) + "\n"


def _stage_graph(tree, stage):
    from .passes import run_pipeline
    from .runtime.explain import primary
    entry = primary(tree)
    if not hasattr(entry, "trace"):
        raise CliError(f"this signature runs eagerly: {entry.reason}")
    if stage == "traced":
        return entry.trace.graph
    if stage in ("optimized", "kernels", "source", "memory"):
        return entry.pipeline.graph
    return run_pipeline(entry.trace.graph, target=entry.pipeline.target, stop_after=stage).graph


def _emit(text: str, output) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    if output.endswith((".png", ".svg")):
        _render(text, output)
        return
    with open(output, "w") as handle:
        handle.write(text)


def _render(dot_text: str, output: str) -> None:
    import subprocess
    if not dot_text.lstrip().startswith("digraph"):
        raise CliError("rendering an image needs --format dot")
    if shutil.which("dot") is None:
        raise CliError("rendering PNG/SVG needs Graphviz: install it (apt-get install "
                       "graphviz, or brew install graphviz), or write a .dot file instead")
    fmt = output.rsplit(".", 1)[1]
    subprocess.run(["dot", f"-T{fmt}", "-o", output], input=dot_text, text=True, check=True)


def run_bench(args) -> int:
    if args.suite or args.function is None:
        from bench.__main__ import main as bench_main
        return bench_main(["--quick"] if args.quick else [])
    return _bench_function(args)


def _bench_function(args) -> int:
    import fusejit

    from .benchtools import bench_function, compile_latency
    with _user_output_to_stderr():   # the function's own errors surface here, first
        module, fn = load_function(args.function)
        call_args, call_kwargs = build_arguments(fn, args.arg, module)
        compiled, eager = (fn, fn.__wrapped__) if isinstance(fn, fusejit.CompiledFunction) \
            else (fusejit.compile(fn), fn)   # ``@fusejit.compile(...)``: with its options
        timings = bench_function(compiled, eager, call_args, call_kwargs, args.repeat)
        report = {**compile_latency(args.function, args.arg), **timings}
    print(json.dumps(report, indent=2) if args.json else report_text(report))
    return 0


def report_text(report: dict) -> str:
    lines = [f"{k:>22}: {v}" for k, v in report.items()]
    return "\n".join(lines)


def run_cache(args) -> int:
    root = config.cache_root()
    if root.exists() and not root.is_dir():
        print(f"fusejit: the cache directory {root} (FUSEJIT_CACHE_DIR) is not a directory",
              file=sys.stderr)
        return 1
    if args.action == "clear":
        return _clear_cache(root)
    files, size, unreadable = _cache_files(root)
    kernels = [p for p in files if p.suffix == ".py" and p.parent.name == "kernels"]
    print(f"cache directory: {root}\nversion tag: {config.version_tag()}\n"
          f"kernel sources: {len(kernels)}\nfiles: {len(files)}\nsize: {size / 2**20:.2f} MiB")
    if unreadable:
        print(f"unreadable: {len(unreadable)} (not counted above; first: {unreadable[0]})")
    return 0


def _cache_files(root) -> tuple[list[Path], int, list[str]]:
    """The files under fusejit's version directories, their total size, and the paths that
    could not be listed or measured (a folder without read permission, a file removed
    meanwhile)."""
    files, size, unreadable = [], 0, []
    for own in config.own_dirs(root):
        for folder, _, names in os.walk(own, onerror=lambda e: unreadable.append(e.filename)):
            for name in names:
                path = Path(folder, name)
                try:
                    size += path.stat().st_size
                except OSError:
                    unreadable.append(str(path))
                    continue
                files.append(path)
    return files, size, unreadable


def _clear_cache(root) -> int:
    """Remove fusejit's version directories (nothing else the root holds); 1 when some of
    them could not be removed."""
    failed = []

    def note(_fn, path, exc):   # exc: an exception (onexc) or sys.exc_info() (onerror)
        failed.append((path, exc[1] if isinstance(exc, tuple) else exc))

    handler = "onexc" if sys.version_info >= (3, 12) else "onerror"
    for own in config.own_dirs(root):
        shutil.rmtree(own, **{handler: note})
    if failed:
        path, exc = failed[0]
        print(f"fusejit: could not clear {root}: {path}: {exc}"
              + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""), file=sys.stderr)
        return 1
    print(f"cleared {root}" if root.is_dir() else f"nothing to clear: {root} does not exist")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
