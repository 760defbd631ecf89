"""Bench output: a plain-text table, a JSON file and (with matplotlib) a PNG of speedups."""
from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path

import numpy as np

# ``FUSEJIT_BENCH_RESULTS`` redirects the output (the test suite points it at a temp dir).
RESULTS_DIR = Path(os.environ.get("FUSEJIT_BENCH_RESULTS",
                                  Path(__file__).resolve().parent / "results"))


def _ms(result):
    if result.get("status") != "ok":
        return result.get("status", "error")
    return f"{result['median_s'] * 1e3:.2f}±{result['iqr_s'] * 1e3:.2f}"


def _ratio(result):
    return f"{result['speedup']:.2f}x" if result.get("status") == "ok" else "-"


def _mib(value):
    return f"{value / 2**20:.1f}" if isinstance(value, (int, float)) else "-"


COLUMNS = ("workload", "eager ms", "fusejit ms", "speedup", "compile s", "kernels",
           "GB/s", "%copy", "peak MiB e/f")


def table_rows(results):
    copy_bw = results["copy_bandwidth_Bps"]
    for row in results["rows"]:
        if "eager" not in row:
            yield (row["workload"], row.get("error", "error"), *["-"] * (len(COLUMNS) - 2))
            continue
        eager, fj = row["eager"], row["fusejit"]
        ok = fj.get("status") == "ok"
        best = fj if ok else eager
        yield (
            row["workload"], _ms(eager), _ms(fj), _ratio(fj),
            f"{fj['compile_s']:.2f}" if ok else "-",
            str(fj["kernels"]) if ok else "-",
            f"{best['bandwidth_Bps'] / 1e9:.1f}",
            f"{100 * best['bandwidth_Bps'] / copy_bw:.0f}",
            f"{_mib(eager['peak_bytes'])}/{_mib(fj.get('peak_bytes'))}",
        )


def format_table(rows, header):
    rows = [tuple(header), *rows]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def peer_rows(results):
    for row in results["rows"]:
        for name, peer in row.get("peers", {}).items():
            detail = peer.get("error", "") if peer.get("status") != "ok" else ""
            eager = peer.get("eager_median_s")
            yield (row["workload"], name, _ms(peer), "-" if eager is None else
                   f"{eager * 1e3:.2f}", _ratio(peer), detail[:60])


def script_rows(results):
    for row in results["rows"]:
        script = row.get("script")
        if script:
            yield (row["workload"], _ms(script["eager"]), _ms(script["fusejit"]),
                   f"{script['speedup']:.2f}x" if "speedup" in script else "-",
                   _ratio(row["fusejit"]))


def notes(results):
    for row in results["rows"]:
        fj = row.get("fusejit", {})
        if fj.get("status") not in (None, "ok"):
            yield f"{row['workload']}: fusejit {fj['status']}: {fj.get('error', '')[:200]}"


def render(results) -> str:
    """The stdout report: main table, peers table, then the reasons for any failures."""
    bw = results["copy_bandwidth_Bps"] / 1e9
    parts = [
        f"fusejit bench -- {results['meta']['size']} sizes, {results['meta']['dtype']}, "
        f"copy bandwidth {bw:.1f} GB/s\ntimes in ms: median±IQR over the timed repeats",
        format_table(list(table_rows(results)), COLUMNS),
    ]
    peers = list(peer_rows(results))
    if peers:
        parts.append(format_table(peers, ("workload", "peer", "ms", "eager ms", "speedup",
                                          "note"))
                     + "\neach peer runs in a process of its own, after eager NumPy is timed "
                       "there (its eager ms),\nwhich its speedup is against")
    scripts = list(script_rows(results))
    if scripts:
        parts.append("as plain scripts: each alone in fresh processes, eager and fusejit in turn,\n"
                     "glibc's default allocator; the median of the processes' medians\n"
                     + format_table(scripts, ("workload", "eager ms", "fusejit ms", "speedup",
                                              "(warm)")))
    failures = list(notes(results))
    if failures:
        parts.append("\n".join(failures))
    parts.append("GB/s, %copy: bytes of inputs + outputs / median time (fusejit's when it ran,\n"
                 "else eager's), against np.copyto. Peak memory counts NumPy allocations only\n"
                 "(tracemalloc), fusejit's with the arena its program keeps between calls.\n"
                 "compile s: the first call (trace, optimize) and the first replay (Numba\n"
                 "compiles the kernels, or loads them from its disk cache).")
    return "\n\n".join(parts)


def metadata(size, dtype):
    import numba

    try:
        import fusejit
        fusejit_version = fusejit.__version__
    except ImportError:
        fusejit_version = None
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "size": size, "dtype": np.dtype(dtype).name, "python": platform.python_version(),
        "numpy": np.__version__, "numba": numba.__version__, "fusejit": fusejit_version,
        "machine": platform.machine(), "processor": platform.processor(),
    }


def write_json(results, directory=RESULTS_DIR, prefix="bench") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = directory / f"{prefix}-{stamp}.json"
    path.write_text(json.dumps(results, indent=2, sort_keys=True, default=str) + "\n")
    return path


def write_plot(results, json_path: Path) -> str:
    """A bar chart of speedups over eager; returns a line saying where it went, or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no plot (pip install '.[plot]')"
    series = _speedup_series(results)
    names = [row["workload"] for row in results["rows"]]
    fig, ax = plt.subplots(figsize=(max(6, len(names) * 0.9), 4))
    width = 0.8 / max(1, len(series))
    for index, (label, values) in enumerate(series.items()):
        xs = np.arange(len(names)) + index * width
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=30, ha="right")
    ax.set_ylabel("speedup over eager NumPy")
    ax.legend()
    fig.tight_layout()
    png = json_path.with_suffix(".png")
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return f"plot: {png}"


def _speedup_series(results):
    series = {"fusejit": []}
    for row in results["rows"]:
        for name in row.get("peers", {}):
            series.setdefault(name, [])
    for row in results["rows"]:
        results_by_name = {"fusejit": row.get("fusejit", {}), **row.get("peers", {})}
        for name, values in series.items():
            values.append(results_by_name.get(name, {}).get("speedup"))
    return series
