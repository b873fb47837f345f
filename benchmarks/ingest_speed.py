"""End-to-end ingest throughput: ``grounded.ingest`` (local engine) vs the pipeline a user writes today.

Run: ``python benchmarks/ingest_speed.py [--quick] [--embed] [--save docs/results/ingest_speed.md]``.

Corpora (built once under ``~/.cache/grounded/bench``):

* ``x16``: the shared long PDFs concatenated 16 times (704 pages, one document);
* ``copies``: the 3 shared long PDFs (44 pages) x ``--copies`` (default 4), each copy made
  byte-distinct (a trailing comment after ``%%EOF``) so resume does not treat it as a repeat;
* ``--quick``: only one shared PDF (13 pages), for a smoke run.

Every measurement runs in a fresh subprocess (its own peak RSS): ``grounded.ingest`` with 1 and 2
worker processes (and ``--engine ray`` with 2 CPUs when ray is installed) into an empty output folder (parse + chunk + optional MiniLM embed + Parquet
write), and the baseline a user would write: a loop over the files with
``pymupdf4llm.to_markdown`` + LangChain ``RecursiveCharacterTextSplitter`` (256 MiniLM tokens, the
same tokenizer) + the same MiniLM embeddings when ``--embed`` -- without any source boxes.

Printed: pages/s end to end, the share of each stage (worker CPU seconds: parse, chunk, rows,
embed; parent: write), peak RSS of the parent and of the largest worker, and ratios (2 vs 1
workers; ours vs the baseline). Targets (issue 12): 2 workers >= 1.7x 1 worker on the multi-file
corpus; ours >= the baseline's pages/s while producing exact boxes. A single document is one
task, so 2 workers cannot beat 1 on ``x16`` (the parser's own page pool is the tool there).
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
SCRIPT = "benchmarks/ingest_speed.py"


def concatenated(times: int) -> Path:
    import pymupdf

    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"long_x{times}.pdf"
    if not target.exists():
        doc = pymupdf.open()
        for _ in range(times):
            for src in sorted(LONG.glob("*.pdf")):
                with pymupdf.open(src) as s:
                    doc.insert_pdf(s)
        doc.save(target, garbage=3, deflate=True)
    return target


def copies(n: int) -> Path:
    folder = CACHE / f"long_copies_{n}"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        for src in sorted(LONG.glob("*.pdf")):
            target = folder / f"{src.stem}_{k}.pdf"
            if not target.exists():
                target.write_bytes(src.read_bytes() + f"\n% copy {k}\n".encode())
    return folder


def quick() -> Path:
    folder = CACHE / "long_quick"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "clinsci.pdf"
    if not target.exists():
        target.write_bytes((LONG / "cermine_web_example3_clinsci.pdf").read_bytes())
    return folder


# -- one measurement (own process) ------------------------------------------------------------------
def measure_ours(corpus: Path, workers: int, embed: bool, engine: str = "local") -> dict:
    from grounded.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="grounded-ingest-bench-") as out:
        report = ingest(
            corpus, out, workers=workers, embed="minilm" if embed else "none", progress=False, engine=engine  # type: ignore[arg-type]
        )
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.errors}")
    return {
        "pages": report.pages,
        "chunks": report.chunks,
        "seconds": report.seconds,
        "stages": report.stage_seconds,
        "rss_parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        # Ray's workers are children of its raylet, not of this process: not measured here
        "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if engine == "local" else float("nan"),
    }


def measure_baseline(corpus: Path, embed: bool) -> dict:
    started = time.perf_counter()  # like ours: loading the layout model (on import) is part of the run
    import pymupdf
    import pymupdf4llm
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from grounded.chunking.tokenizer import minilm_tokenizer

    tokenizer = minilm_tokenizer()
    splitter = RecursiveCharacterTextSplitter(chunk_size=256, chunk_overlap=0, length_function=tokenizer.count)
    embedder = None
    if embed:
        from grounded.chunking.strategies.semantic import minilm_embedder

        embedder = minilm_embedder(batch_size=64)
    files = sorted(p for p in corpus.rglob("*") if p.suffix.lower() == ".pdf") if corpus.is_dir() else [corpus]
    stages = {"parse": 0.0, "chunk": 0.0, **({"embed": 0.0} if embed else {})}
    pages = chunks = 0
    for pdf in files:
        t0 = time.perf_counter()
        markdown = pymupdf4llm.to_markdown(str(pdf), show_progress=False)
        with pymupdf.open(pdf) as doc:
            pages += doc.page_count
        t1 = time.perf_counter()
        texts = splitter.split_text(markdown)
        t2 = time.perf_counter()
        if embedder is not None and texts:
            embedder(texts)
        t3 = time.perf_counter()
        chunks += len(texts)
        stages["parse"] += t1 - t0
        stages["chunk"] += t2 - t1
        if embed:
            stages["embed"] += t3 - t2
    return {
        "pages": pages,
        "chunks": chunks,
        "seconds": time.perf_counter() - started,
        "stages": stages,
        "rss_parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_worker_mb": 0.0,
    }


def isolated(kind: str, corpus: Path, workers: int, embed: bool) -> dict:
    cmd = [sys.executable, __file__, "--one", kind, str(corpus), "--workers", str(workers)] + (["--embed"] if embed else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"measurement failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- report -------------------------------------------------------------------------------------------
def _shares(stages: dict[str, float]) -> str:
    total = sum(stages.values()) or 1.0
    return " ".join(f"{k} {100 * v / total:.0f}%" for k, v in stages.items() if v > 0)


def run_corpus(name: str, corpus: Path, embed: bool, with_ray: bool) -> list[str]:
    rows = {
        "grounded ingest, 1 worker": isolated("ours", corpus, 1, embed),
        "grounded ingest, 2 workers": isolated("ours", corpus, 2, embed),
        "pymupdf4llm + LangChain splitter": isolated("baseline", corpus, 1, embed),
    }
    if with_ray:
        rows["grounded ingest --engine ray, 2 CPUs"] = isolated("ray", corpus, 2, embed)
    lines = [
        f"## {name} ({next(iter(rows.values()))['pages']} pages, embed={'minilm' if embed else 'none'})",
        "",
        "| run | pages/s | chunks | wall s | peak RSS parent MB | peak RSS worker MB | stage shares |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, r in rows.items():
        lines.append(
            f"| {label} | {r['pages'] / r['seconds']:.2f} | {r['chunks']} | {r['seconds']:.1f} | "
            f"{r['rss_parent_mb']:.0f} | {r['rss_worker_mb']:.0f} | {_shares(r['stages'])} |"
        )
    one, two, base = (r["pages"] / r["seconds"] for r in list(rows.values())[:3])
    lines += [
        "",
        f"- 2 workers / 1 worker: **{two / one:.2f}x** (target >= 1.7x on a multi-file corpus)",
        f"- ours (2 workers) / pymupdf4llm + LangChain: **{two / base:.2f}x**; ours (1 worker) / baseline: "
        f"{one / base:.2f}x (target >= 1x, with exact boxes)",
        "",
    ]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", nargs=2, metavar=("KIND", "CORPUS"), help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="one 13-page PDF only (smoke run)")
    ap.add_argument("--embed", action="store_true", help="also embed every chunk with MiniLM (both pipelines)")
    ap.add_argument("--copies", type=int, default=4, help="copies of the 44 shared pages in the multi-file corpus")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray engine (also skipped when ray is not installed)")
    ap.add_argument("--save", type=Path, help="also write the report as Markdown, e.g. docs/results/ingest_speed.md")
    args = ap.parse_args()
    if args.one:
        kind, corpus = args.one
        if kind == "baseline":
            result = measure_baseline(Path(corpus), args.embed)
        else:
            result = measure_ours(Path(corpus), args.workers, args.embed, engine="ray" if kind == "ray" else "local")
        print(json.dumps(result))
        return 0
    if not LONG.is_dir():
        sys.exit(f"no shared PDFs under {LONG}")
    corpora = [("quick: 1 shared PDF", quick())] if args.quick else [
        (f"44 shared pages x {args.copies} files", copies(args.copies)),
        ("16x concatenated document", concatenated(16)),
    ]
    command = f"python {SCRIPT}" + (" --quick" if args.quick else "") + (" --embed" if args.embed else "")
    lines = [f"# Ingest speed (`{command}`)", "", f"{os.cpu_count()} cores.", ""]
    import importlib.util

    with_ray = not args.no_ray and importlib.util.find_spec("ray") is not None
    for name, corpus in corpora:
        lines += run_corpus(name, corpus, args.embed, with_ray)
    print("\n".join(lines))
    if args.save:
        from grounded.serialization import atomic_write_text

        atomic_write_text(args.save, "\n".join(lines) + "\n")
        print(f"\nwritten {args.save}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
