"""Parse once per PDF (issue 33.3): what the parse cache saves when a user re-chunks or re-ingests.

Run: ``python benchmarks/parse_cache.py [--rounds 2] [--save docs/results/parse_cache.md]``
(~4 min per round on 2 cores).

Every timed step is a whole ``grounded`` process (imports, tokenizer and model load included), wall
seconds, on the three shared long PDFs (``../shared/data/long``, 44 pages), each round with a new,
empty ``$GROUNDED_CACHE_DIR``:

* ingest (text only, no ``--embed``, default workers): ``grounded ingest LONG -o A`` (cold cache:
  parses and stores the trees), then ``grounded ingest LONG -o B -n 64`` (another chunk configuration
  into another folder: the trees are loaded), then ``grounded ingest LONG -o C -n 64
  --no-parse-cache`` (what that second run cost before). The rows of B and C are compared.
* chunk, per PDF (its own empty cache): ``grounded chunk PDF`` (cold), then ``grounded chunk PDF -n 64``
  (warm), then ``grounded chunk PDF -n 64 --no-parse-cache``; the chunks of the warm and the
  uncached run are compared (timings, which differ between any two runs, left out).

The load average (1 min) of the machine is printed beside every row; the median of ``--rounds``
rounds is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"
GROUNDED = [sys.executable, "-m", "grounded.cli"]
TIMINGS = ("elapsed_seconds", "layout_seconds")


#: set by --pyc: let the processes write and use bytecode files, as an installed package has them
WRITE_BYTECODE = False


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str], cache: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the process and its worker processes, 1-min load average at
    the start) of one ``grounded`` process."""
    env = {**os.environ, "GROUNDED_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    if WRITE_BYTECODE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    load = os.getloadavg()[0]
    cpu = _cpu_children()
    started = time.perf_counter()
    done = subprocess.run([*GROUNDED, *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"grounded {' '.join(args)} failed:\n{done.stderr}")
    return seconds, _cpu_children() - cpu, load


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _chunks(path: Path) -> list[Any]:
    return [_untimed(json.loads(line)) for line in path.read_text("utf-8").splitlines()]


def _rows(out: Path) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq

    return {p.name: pq.read_table(p).to_pylist() for p in sorted((out / "chunks").glob("part-*.parquet"))}


def one_round(work: Path, pdfs: list[Path]) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    cache = work / "cache-ingest"
    first = _run(["ingest", str(LONG), "-o", str(work / "A"), "-q"], cache)
    second = _run(["ingest", str(LONG), "-o", str(work / "B"), "-n", "64", "-q"], cache)
    uncached = _run(["ingest", str(LONG), "-o", str(work / "C"), "-n", "64", "-q", "--no-parse-cache"], cache)
    rows["ingest (3 PDFs, 44 pages)"] = {"first": first, "second": second, "uncached": uncached,
                                         "same": _rows(work / "B") == _rows(work / "C")}
    for pdf in pdfs:
        cache = work / f"cache-{pdf.stem}"
        first = _run(["chunk", str(pdf), "-o", str(work / f"{pdf.stem}-256.jsonl")], cache)
        second = _run(["chunk", str(pdf), "-n", "64", "-o", str(work / f"{pdf.stem}-64.jsonl")], cache)
        uncached = _run(["chunk", str(pdf), "-n", "64", "--no-parse-cache", "-o", str(work / f"{pdf.stem}-64-fresh.jsonl")], cache)
        same = _chunks(work / f"{pdf.stem}-64.jsonl") == _chunks(work / f"{pdf.stem}-64-fresh.jsonl")
        rows[f"chunk {pdf.name}"] = {"first": first, "second": second, "uncached": uncached, "same": same}
    return rows


def main() -> None:
    global WRITE_BYTECODE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--pyc", action="store_true",
                    help="let the processes write/use .pyc files (unset PYTHONDONTWRITEBYTECODE), as an installed package")
    ap.add_argument("--save", type=Path, default=None, help="write the Markdown table here")
    args = ap.parse_args()
    WRITE_BYTECODE = args.pyc
    pdfs = sorted(LONG.glob("*.pdf"))
    if WRITE_BYTECODE:  # one process first: the bytecode files exist before the first timed run
        subprocess.run([*GROUNDED, "--help"], env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                       capture_output=True)
    rounds = []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="grounded-parse-cache-bench-") as tmp:
            rounds.append(one_round(Path(tmp), pdfs))
        print(f"round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    header = ("| run | first run, cold cache: wall s (CPU s) | second run, other -n, warm cache: wall s (CPU s) | "
              "second run with --no-parse-cache: wall s (CPU s) | second / first: wall (CPU) | second / uncached: wall "
              "(CPU) | outputs equal | load (1 min) at the runs |")
    lines = [header, "|---|---|---|---|---|---|---|---|"]

    def median(name: str, step: str, k: int) -> float:
        return statistics.median(r[name][step][k] for r in rounds)

    for name in rounds[0]:
        (fw, fc), (sw, sc), (uw, uc) = ((median(name, step, 0), median(name, step, 1)) for step in ("first", "second", "uncached"))
        loads = [r[name][k][2] for r in rounds for k in ("first", "second", "uncached")]
        same = all(r[name]["same"] for r in rounds)
        lines.append(f"| {name} | {fw:.1f} ({fc:.1f}) | {sw:.1f} ({sc:.1f}) | {uw:.1f} ({uc:.1f}) | "
                     f"{sw / fw:.2f}x ({sc / fc:.2f}x); {fw / sw:.1f}x faster | {sw / uw:.2f}x ({sc / uc:.2f}x) | "
                     f"{'yes' if same else 'NO'} | {min(loads):.2f}-{max(loads):.2f} |")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    table = "\n".join(lines)
    command = f"python benchmarks/parse_cache.py --rounds {args.rounds}" + (" --pyc" if args.pyc else "")
    print(table)
    print(f"\n`uptime` after the run: {uptime}")
    if args.save:
        args.save.write_text(
            "# Parse once per PDF: re-chunking and re-ingesting with the parse cache\n\n"
            f"Command: `{command}` (median of {args.rounds} round(s); every step a whole `grounded` process: wall "
            "seconds, and in brackets the CPU seconds of the process and its worker processes; the 3 shared long PDFs; "
            "each round a new empty `$GROUNDED_CACHE_DIR`). See the docstring of `benchmarks/parse_cache.py` for the "
            "steps.\n\n"
            f"{table}\n\n`uptime` after the run: `{uptime}`\n"
        )


if __name__ == "__main__":
    main()
