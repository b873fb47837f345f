"""Latency of one ``grounded search`` CLI query from process start, per mode (issue 32 item 4).

    python benchmarks/search_latency.py [OUT] [--runs 5] [--save docs/results/search_latency.md]

``OUT`` is an existing ingest output (``grounded ingest PDFS -o OUT --embed minilm --sink lancedb``);
without it, the sample guideline + the shared ``2305.03393v1-pg9.pdf`` are ingested so into a
temporary folder first (not timed). Each run is a new process: ``grounded search OUT QUESTION --json
--mode MODE`` (``default``: no ``--mode``, i.e. hybrid). ``uptime`` is printed before and after:
a load average above 1.5 means the numbers are not those of a quiet machine. Reported per mode:
the median and minimum wall time, the median CPU time (user + sys of the child: what the run costs
the machine, less sensitive to other processes than the wall time) and the load average before and
after, since the machine is shared. ``hybrid --no-focus``: the same query without the hits' focus
(:mod:`grounded.search.focus`), so the focus's cost per query is the difference. ``vector (torch)`` is the sentence-transformers path
(``GROUNDED_QUERY_ONNX=0``), what every vector/hybrid query cost before the ONNX query path.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "Which regimen is preferred for triple-negative breast cancer with residual disease?"
MODES: tuple[tuple[str, dict[str, str]], ...] = (
    ("default", {}), ("text", {}), ("hybrid", {}), ("hybrid --no-focus", {}), ("vector", {}),
    ("vector (torch)", {"GROUNDED_QUERY_ONNX": "0"}),
)
REPO = Path(__file__).resolve().parent.parent


def _run(out: str, mode: str, env: dict[str, str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    flag = [] if mode == "default" else ["--mode", mode.split()[0], *(w for w in mode.split()[1:] if w.startswith("--"))]
    done = subprocess.run([sys.executable, "-m", "grounded.cli", "search", out, QUESTION, "--json", "-k", "5", *flag],
                          env={**os.environ, **env}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{mode}: exit {done.returncode}: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--save", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="search_latency-") as tmp:
        if args.out is None:
            args.out = str(_build(Path(tmp)))
        _measure(args)


def _build(root: Path) -> Path:
    """The sample guideline + a shared PDF, ingested with MiniLM embeddings into ``root/out``."""
    from grounded.ingest import ingest
    from grounded.samples import write_sample_pdf

    pdf = write_sample_pdf(root / "pdfs" / "guideline.pdf")
    shared = REPO.parent / "shared" / "data" / "pdfs" / "docling_groundtruth" / "2305.03393v1-pg9.pdf"
    report = ingest([str(pdf), str(shared)], root / "out", embed="minilm", sink="lancedb", workers=1, progress=False)
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.summary()}")
    return root / "out"


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _measure(args: argparse.Namespace) -> None:
    print(f"uptime before: {_uptime()}", flush=True)
    _run(args.out, "hybrid", {})  # warm: the ONNX graph exported once, files in the page cache
    rows = []
    for mode, env in MODES:
        load_before = os.getloadavg()[0]
        runs = [_run(args.out, mode, env) for _ in range(args.runs)]
        load_after = os.getloadavg()[0]
        walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
        quiet = all(r[2] == "" for r in runs)
        rows.append(f"| {mode} | {statistics.median(walls):.2f} | {min(walls):.2f} | {statistics.median(cpus):.2f} | "
                    f"{load_before:.1f} / {load_after:.1f} | {'yes' if quiet else 'no'} |")
        print(rows[-1], flush=True)
    table = "\n".join([
        "| mode | median wall (s) | min wall (s) | median CPU (s) | load before / after | stderr empty |",
        "|---|---|---|---|---|---|", *rows])
    print(f"uptime after: {_uptime()}")
    print(table)
    if args.save:
        args.save.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
