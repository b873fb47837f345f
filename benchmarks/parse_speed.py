"""Parsing throughput and peak memory of the default ``pymupdf`` parser.

Run: ``python benchmarks/parse_speed.py`` (``--quick`` for 1x/2x/4x instead of 1x/4x/16x).
Documents: the shared long PDFs (../shared/data/long) concatenated 1x, 4x, 16x (44, 176, 704
pages), built once under ``~/.cache/grounded/bench``. Every measurement runs in a fresh subprocess
so its peak RSS is its own (main process + the largest worker).

Printed per run: pages/s, the split between PyMuPDF's own layout pass (pymupdf4llm
``parse_document``: layout model, reading order, table grids) and grounded's share (input checks,
tree building with line + character boxes, post-processing, Markdown, writing .json/.md).
Targets (issue 2): grounded's share <= 25% of the layout pass; 2 worker processes >= 1.7x the
one-process throughput; pages/s flat from 1x to 16x (linear time); peak RSS at 16x < 2 GB.

One-process throughput is reported two ways: with ONNX Runtime's default threading (what a
plain ``PyMuPDFParser()`` does; ORT already uses the second core for part of the model) and with
one ORT thread, the configuration each worker process runs -- the like-for-like base of the
process-scaling ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"
CACHE = Path(os.environ.get("GROUNDED_BENCH_CACHE", Path.home() / ".cache" / "grounded" / "bench"))


def concatenated(times: int) -> Path:
    """The shared long PDFs concatenated ``times`` times (cached)."""
    import pymupdf

    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"long_x{times}.pdf"
    if target.exists():
        return target
    sources = sorted(LONG.glob("*.pdf"))
    if not sources:
        sys.exit(f"no PDFs under {LONG}")
    doc = pymupdf.open()
    for _ in range(times):
        for src in sources:
            with pymupdf.open(src) as s:
                doc.insert_pdf(s)
    doc.save(target, garbage=3, deflate=True)
    return target


# ---------------------------------------------------------------------------------------------
# one measurement (runs in its own process)
# ---------------------------------------------------------------------------------------------


def measure(pdf: Path, workers: int, layout_threads: int | None, warm: bool) -> dict:
    from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
    from grounded.parsers.pdf_input import inspect_pdf

    parser = PyMuPDFParser(workers=workers, layout_threads=layout_threads)
    if warm:  # load the model / start the worker pool on a small document first
        parser.run(sorted(LONG.glob("*.pdf"))[0])
    out_dir = Path(tempfile.mkdtemp(prefix="grounded-bench-"))
    t0 = time.perf_counter()
    info = inspect_pdf(pdf, require_text=True)
    t1 = time.perf_counter()
    native = parser._parse(info.path)
    t2 = time.perf_counter()
    root = parser._transform(native)
    t3 = time.perf_counter()
    markdown = parser._get_md(native)
    t4 = time.perf_counter()
    output = parser.finish(root, markdown, info, t1)
    t5 = time.perf_counter()
    output.save(out_dir, pdf.stem)
    t6 = time.perf_counter()
    parser.close()
    for f in out_dir.iterdir():
        f.unlink()
    out_dir.rmdir()
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "pdf": pdf.name,
        "pages": info.page_count,
        "workers": workers,
        "layout_threads": layout_threads,
        "warm": warm,
        "inspect_s": t1 - t0,
        "layout_s": t2 - t1,
        "transform_s": t3 - t2,
        "markdown_s": t4 - t3,
        "postprocess_s": t5 - t4,
        "save_s": t6 - t5,
        "total_s": t6 - t0,
        "peak_rss_main_mb": self_kb / 1024,
        "peak_rss_worker_mb": child_kb / 1024,
        "elements": sum(1 for _ in output.root.walk()) - 1,
    }


def run_isolated(pdf: Path, workers: int, layout_threads: int | None = None, warm: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--one", str(pdf), "--workers", str(workers), "--warm" if warm else "--cold"]
    if layout_threads is not None:
        cmd += ["--layout-threads", str(layout_threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"measurement failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


def _grounded_share(r: dict) -> float:
    return r["inspect_s"] + r["transform_s"] + r["markdown_s"] + r["postprocess_s"] + r["save_s"]


def _line(label: str, r: dict) -> str:
    ours = _grounded_share(r)
    return (
        f"{label:<34} {r['pages']:>5} {r['pages'] / r['total_s']:>8.2f} {r['layout_s']:>9.1f} {ours:>9.1f} "
        f"{100 * ours / r['layout_s']:>6.1f}% {r['peak_rss_main_mb']:>8.0f} {r['peak_rss_worker_mb']:>8.0f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="scale 1x/2x/4x instead of 1x/4x/16x")
    ap.add_argument("--json", type=Path, help="also write all measurements to this JSON file")
    ap.add_argument("--save", type=Path, help="also write the printed report as Markdown, e.g. docs/results/parse_speed.md")
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration of the process-scaling test")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--layout-threads", type=int, default=None, help=argparse.SUPPRESS)
    warm = ap.add_mutually_exclusive_group()
    warm.add_argument("--warm", dest="warm", action="store_true", help=argparse.SUPPRESS)
    warm.add_argument("--cold", dest="warm", action="store_false", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.workers, args.layout_threads, args.warm)))
        return 0

    printed: list[str] = []

    def emit(line: str) -> None:
        print(line, flush=True)
        printed.append(line)

    scales = (1, 2, 4) if args.quick else (1, 4, 16)
    docs = {k: concatenated(k) for k in scales}
    mid = docs[scales[1]]
    emit(f"cpus: {os.cpu_count()}  load average: {os.getloadavg()[0]:.2f}  documents: "
          + ", ".join(f"{k}x={p.name}" for k, p in docs.items()))
    emit(f"{'run':<34} {'pages':>5} {'pages/s':>8} {'layout s':>9} {'ours s':>9} {'ours%':>7} "
          f"{'RSS MB':>8} {'wrk MB':>8}")
    results: dict[str, dict] = {}
    for k, pdf in docs.items():
        results[f"scale_{k}x"] = r = run_isolated(pdf, workers=1)
        emit(_line(f"1 process, {k}x", r))
    # process scaling: configurations interleaved, best of --repeat runs each (the machine may be shared)
    small = docs[scales[0]]
    configs = {
        "one_thread": ("1 process, 1 ORT thread", dict(workers=1, layout_threads=1, warm=True)),
        "default_warm": ("1 process, default ORT threads", dict(workers=1, warm=True)),
        "two_workers": ("2 workers, warm pool", dict(workers=2, warm=True)),
    }
    runs: dict[str, list[dict]] = {key: [] for key in configs}
    for _ in range(args.repeat):
        for key, (_, kwargs) in configs.items():
            runs[key].append(run_isolated(small, **kwargs))
    for key, (label, _) in configs.items():
        results[key] = r = min(runs[key], key=lambda x: x["total_s"])
        emit(_line(f"{label}, {scales[0]}x (best of {args.repeat})", r))
    results["two_workers_cold"] = r = run_isolated(mid, workers=2, warm=False)
    emit(_line(f"2 workers, cold pool, {scales[1]}x", r))

    def rate(key: str) -> float:
        return results[key]["pages"] / results[key]["total_s"]

    base = results[f"scale_{scales[0]}x"]
    big = results[f"scale_{scales[-1]}x"]
    share = _grounded_share(big) / big["layout_s"]
    emit("")
    emit(f"grounded's share vs PyMuPDF layout pass ({scales[-1]}x): {_grounded_share(big):.1f} s vs "
          f"{big['layout_s']:.1f} s = {100 * share:.1f}%  (target <= 25%)")
    emit(f"2 workers vs 1 process, 1 ORT thread each (like for like): {rate('two_workers') / rate('one_thread'):.2f}x"
          "  (target >= 1.7x)")
    emit(f"2 workers vs 1 process, ORT default threads:             {rate('two_workers') / rate('default_warm'):.2f}x")
    emit(f"2 workers with pool start-up vs 1 process (cold, {scales[1]}x):     "
          f"{rate('two_workers_cold') / rate(f'scale_{scales[1]}x'):.2f}x")
    emit(f"load average now: {os.getloadavg()[0]:.2f} (other processes on the machine distort the scaling ratios)")
    emit("pages/s by size: " + ", ".join(f"{k}x {rate(f'scale_{k}x'):.2f}" for k in scales)
          + f"  ({scales[-1]}x/{scales[0]}x = {rate(f'scale_{scales[-1]}x') / rate(f'scale_{scales[0]}x'):.2f}, "
          "linear time = 1.0)")
    emit(f"peak RSS at {scales[-1]}x: {big['peak_rss_main_mb']:.0f} MB  (target < 2048 MB); "
          f"at {scales[0]}x: {base['peak_rss_main_mb']:.0f} MB")
    if args.save:
        from grounded.serialization import atomic_write_text

        report = "\n".join(printed)
        atomic_write_text(args.save, f"# Parsing speed (`python benchmarks/parse_speed.py --save {args.save}`)\n\n```\n{report}\n```\n")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
