"""End-to-end ingest throughput and memory: ``grounded.ingest`` vs the pipeline a user writes today.

Run: ``python benchmarks/ingest_speed.py [--quick] [--no-embed] [--save docs/results/ingest_speed.md]``
(``--sections like`` runs only the like-for-like comparison of issue 24: ``benchmarks/_like_for_like.py``;
12 runs of 44-88 pages, estimated 8-10 min on 2 quiet cores -- ``--quick --sections like``: one 13-page
PDF, about a quarter of that. On a loaded machine its summary compares CPU time, not wall time.)
(full mode: about 25-30 min on 2 quiet cores, most of it the three runs over the 704-page
document -- ``--times 8`` for about 15 min; ``--quick``: about 3 min; ``--sections`` runs a part).

Corpora (built once under ``~/.cache/grounded/bench``):

* ``x16``: the 3 shared long PDFs concatenated ``--times`` (16) times: 704 pages, one document
  (built like ``benchmarks/ground_speed.py``'s 16x document, but as a PDF);
* ``copies``: the 3 shared long PDFs (44 pages) x ``--copies`` (2), each copy byte-distinct (a
  trailing comment after ``%%EOF``) so it is not skipped as a repeat;
* ``--quick``: one shared PDF (13 pages) x1 and a 2-copy corpus of it.

Every measurement runs in a fresh subprocess (its own peak RSS) into an empty output folder:
``grounded.ingest`` (parse + chunk + MiniLM embed + Parquet write; on the one-document corpus
without the embedding unless ``--embed-long``: MiniLM costs more CPU per page than the layout
model, and embedding 704 pages three times would not fit the 15 minutes) with 1 and 2 local worker
processes and with ``--engine ray`` on 2 CPUs (on the multi-file corpus; on one document Ray
runs one actor, i.e. one CPU -- ``--ray-single`` measures it anyway), and the baseline a user
would write: a loop over the files with ``pymupdf4llm.to_markdown`` + LangChain
``RecursiveCharacterTextSplitter`` (256 MiniLM tokens) + the same MiniLM embeddings, without any
source boxes. The chunk stage alone is compared with docling-core's ``HybridChunker`` on the
DoclingDocument of the same parse trees (``benchmarks/chunk_speed.py``'s conversion).

Printed first: the CPU cost per page of each stage (one process, one layout and one torch thread,
CPU seconds -- meaningful even on a busy machine; the basis of ``docs/scaling.md``). Then per
corpus: pages/s end to end, the share of each stage (seconds summed over documents:
layout, post-processing = rest of the parse, chunk, rows, embed, write), peak RSS of the parent
and of the largest worker, and ratios (2 vs 1 workers; ours vs the baseline). Then memory in
corpus size: peak RSS ingesting the ``copies`` corpus N and 4N times. Targets (issue 12):
2 workers >= 1.7x 1 worker; ours >= the baseline's pages/s while producing exact boxes; memory
flat in corpus size.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _like_for_like as like_for_like  # benchmarks/ is sys.path[0] when run as a script
from _measure import peak_rss_mb

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"
CACHE = Path(os.environ.get("GROUNDED_BENCH_CACHE", Path.home() / ".cache" / "grounded" / "bench"))
SCRIPT = "benchmarks/ingest_speed.py"
QUICK_PDF = "cermine_web_example3_clinsci.pdf"
N = 256


def _sources(quick: bool) -> list[Path]:
    return [LONG / QUICK_PDF] if quick else sorted(LONG.glob("*.pdf"))


def concatenated(times: int, quick: bool = False) -> Path:
    import pymupdf

    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"long{'_quick' if quick else ''}_x{times}.pdf"
    if not target.exists():
        doc = pymupdf.open()
        for _ in range(times):
            for src in _sources(quick):
                with pymupdf.open(src) as s:
                    doc.insert_pdf(s)
        doc.save(target, garbage=3, deflate=True)
    return target


def copies(n: int, quick: bool = False) -> Path:
    folder = CACHE / f"long{'_quick' if quick else ''}_copies_{n}"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        for src in _sources(quick):
            target = folder / f"{src.stem}_{k}.pdf"
            if not target.exists():
                target.write_bytes(src.read_bytes() + f"\n% copy {k}\n".encode())
    return folder




# -- one measurement (own process) ------------------------------------------------------------------
def measure_ours(corpus: Path, workers: int, embed: bool, engine: str = "local") -> dict:
    from grounded.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="grounded-ingest-bench-") as out:
        report = ingest(
            corpus, out, workers=workers, embed="minilm" if embed else "none", progress=False, engine=engine,  # type: ignore[arg-type]
            parse_cache=False,  # every round parses: a cache filled by round 1 would serve round 2's trees
        )
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.errors}")
    stages = dict(report.stage_seconds)
    if "layout" in stages:  # a part of "parse": show layout and the rest (post-processing) apart
        stages["post-processing"] = stages.pop("parse") - stages["layout"]
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "pages": report.pages,
        "chunks": report.chunks,
        "seconds": report.seconds,
        "stages": stages,
        "cpu_parent": me.ru_utime + me.ru_stime,
        "cpu_workers": children.ru_utime + children.ru_stime if engine == "local" else None,
        "rss_parent_mb": peak_rss_mb(),
        # the largest of the pool's processes; Ray's workers are children of its raylet: not measured
        "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if engine == "local" else None,
    }


def measure_baseline(corpus: Path, embed: bool) -> dict:
    started = time.perf_counter()  # like ours: loading the layout model (on import) is part of the run
    import pymupdf
    import pymupdf4llm
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from grounded.text.tokenizer import minilm_tokenizer

    tokenizer = minilm_tokenizer()
    splitter = RecursiveCharacterTextSplitter(chunk_size=N, chunk_overlap=0, length_function=tokenizer.count)
    embedder = None
    if embed:
        from grounded.chunking.strategies.semantic import minilm_embedder

        embedder = minilm_embedder(batch_size=64)
    files = sorted(p for p in corpus.rglob("*") if p.suffix.lower() == ".pdf") if corpus.is_dir() else [corpus]
    stages = {"parse": 0.0, "chunk": 0.0, **({"embed": 0.0} if embed else {})}
    pages = chunks = 0
    for pdf in files:
        t0 = time.perf_counter()
        # use_ocr=False: like our pipeline on born-digital pages (pymupdf4llm OCRs picture text when
        # Tesseract data is installed, which would slow the baseline down unfairly)
        markdown = pymupdf4llm.to_markdown(str(pdf), show_progress=False, use_ocr=False)
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
        "rss_parent_mb": peak_rss_mb(),
        "rss_worker_mb": None,
    }


def measure_docling_chunk(times: int, quick: bool) -> dict:
    """docling-core HybridChunker over the DoclingDocument of the same trees (chunk stage only)."""
    spec = importlib.util.spec_from_file_location("_chunk_speed", REPO / "benchmarks" / "chunk_speed.py")
    assert spec is not None and spec.loader is not None
    chunk_speed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chunk_speed)
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from transformers import PreTrainedTokenizerFast

    from grounded.text.tokenizer import minilm_tokenizer

    root = chunk_speed.load_document(times)
    if quick:  # the quick corpus is one of the three documents
        keep = {c.id for c in root.children if c.id.split("-", 1)[0].endswith(f"t{_sources(False).index(LONG / QUICK_PDF)}")}
        root.children = [c for c in root.children if c.id in keep]
    pages = len({b.page for node in root.walk() for b in node.geom}) if quick else int(root.metadata["page_count"])
    ddoc = chunk_speed.to_docling_document(root)
    hf = minilm_tokenizer()._tok
    tok = HuggingFaceTokenizer(tokenizer=PreTrainedTokenizerFast(tokenizer_object=hf), max_tokens=N)
    chunker = HybridChunker(tokenizer=tok, merge_peers=True)
    started = time.perf_counter()
    n = len(list(chunker.chunk(ddoc)))
    return {"pages": pages, "chunks": n, "seconds": time.perf_counter() - started, "rss_parent_mb": peak_rss_mb()}


def measure_stage_costs(corpus: Path) -> dict:
    """CPU seconds per stage in one process with one layout and one torch thread (what a core
    spends per page, unaffected by other load on the machine): the basis of docs/scaling.md."""
    import io

    import pyarrow.parquet as pq
    import torch

    from grounded.ingest.rows import chunk_rows
    from grounded.ingest.worker import JobConfig, build_chunker, build_embedder, build_parser, embed_document

    torch.set_num_threads(1)
    parser = build_parser(JobConfig())  # layout_threads=1, as in a worker
    chunker = build_chunker(JobConfig())
    embedder = build_embedder("minilm", "cpu")  # as a worker: EMBED_BATCH per call, length-ordered slices
    cpu = {"layout": 0.0, "post-processing": 0.0, "chunk": 0.0, "rows": 0.0, "embed": 0.0, "write": 0.0}
    pages = chunks = 0
    for pdf in sorted(corpus.glob("*.pdf")):
        c0, w0 = time.process_time(), time.perf_counter()
        root = parser.parse(pdf)
        c1, w1 = time.process_time(), time.perf_counter()
        layout_share = min(1.0, float(root.metadata["layout_seconds"]) / max(w1 - w0, 1e-9))
        cpu["layout"] += (c1 - c0) * layout_share
        cpu["post-processing"] += (c1 - c0) * (1 - layout_share)
        pages += int(root.metadata["page_count"])
        items = list(chunker.iter_chunks(root))
        c2 = time.process_time()
        vectors = embed_document([c.content for c in items], lambda slices: map(embedder, slices))
        c3 = time.process_time()
        table = chunk_rows(items, source_path=str(pdf), source_sha256="0" * 64, config_fingerprint="", embeddings=vectors)
        c4 = time.process_time()
        pq.write_table(table, io.BytesIO(), compression="zstd")
        c5 = time.process_time()
        cpu["chunk"] += c2 - c1
        cpu["embed"] += c3 - c2
        cpu["rows"] += c4 - c3
        cpu["write"] += c5 - c4
        chunks += len(items)
    return {"pages": pages, "chunks": chunks, "cpu": cpu}


def isolated(kind: str, corpus: Path | str, workers: int, embed: bool, quick: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--one", kind, str(corpus), "--workers", str(workers)]
    cmd += (["--embed-one"] if embed else []) + (["--quick"] if quick else [])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"measurement failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- report -------------------------------------------------------------------------------------------
def _shares(stages: dict[str, float]) -> str:
    total = sum(v for k, v in stages.items()) or 1.0
    order = ["layout", "post-processing", "parse", "chunk", "rows", "embed", "write"]
    return " ".join(f"{k} {100 * stages[k] / total:.0f}%" for k in order if stages.get(k, 0) > 0)


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


class Report:
    """Markdown lines, re-saved after every measurement (a cut-short run keeps what it measured)."""

    def __init__(self, save: Path | None, header: list[str]) -> None:
        self.save = save
        self.lines = list(header)
        self.flush()

    def add(self, *lines: str) -> None:
        self.lines += lines
        for line in lines:
            print(line, flush=True)
        self.flush()

    def flush(self) -> None:
        if self.save is not None:
            from grounded.serialization import atomic_write_text

            atomic_write_text(self.save, "\n".join(self.lines) + "\n")


def run_corpus(out: Report, name: str, corpus: Path, embed: bool, ray: bool, chunk_times: int, quick: bool) -> None:
    out.add(
        f"## {name} (embed={'minilm' if embed else 'none'})",
        "",
        "| run | pages | pages/s | chunks | wall s | peak RSS parent MB | peak RSS worker MB | stage shares (summed stage seconds) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    )
    runs = [("grounded ingest, 1 worker", "ours", 1), ("grounded ingest, 2 workers", "ours", 2),
            (f"pymupdf4llm + LangChain splitter{' + MiniLM' if embed else ''}, no boxes", "baseline", 1)]
    if ray:
        runs.append(("grounded ingest --engine ray, 2 CPUs", "ray", 2))
    rows: dict[str, dict] = {}
    for label, kind, workers in runs:
        r = rows[kind + str(workers)] = isolated(kind, corpus, workers, embed)
        out.add(
            f"| {label} | {r['pages']} | {r['pages'] / r['seconds']:.2f} | {r['chunks']} | {r['seconds']:.1f} | "
            f"{_mb(r['rss_parent_mb'])} | {_mb(r['rss_worker_mb'])} | {_shares(r['stages'])} |"
        )
    docling = isolated("docling", str(chunk_times), 1, False, quick=quick)
    one, two, base = (rows[k]["pages"] / rows[k]["seconds"] for k in ("ours1", "ours2", "baseline1"))
    ours_chunk = rows["ours1"]["stages"].get("chunk", 0.0) + rows["ours1"]["stages"].get("rows", 0.0)
    lines = [
        "",
        f"- 2 workers / 1 worker: **{two / one:.2f}x** (target >= 1.7x)",
        f"- ours (2 workers) / pymupdf4llm + LangChain: **{two / base:.2f}x**; ours (1 worker) / baseline: "
        f"{one / base:.2f}x (target >= 1x, with exact boxes)",
    ]
    c1, c2 = rows["ours1"], rows["ours2"]
    serial, spread = c2["cpu_parent"], c2["cpu_workers"]
    lines.append(
        f"- CPU seconds: 1 worker {c1['cpu_parent'] + c1['cpu_workers']:.0f} (parent + worker); 2 workers: parent "
        f"{serial:.0f} + workers {spread:.0f}. On 2 idle cores 2 workers take at least max(parent, workers / 2) "
        f"and at most parent + workers / 2 of wall time: **{(c1['cpu_parent'] + c1['cpu_workers']) / (serial + spread / 2):.2f}x"
        f"-{(c1['cpu_parent'] + c1['cpu_workers']) / max(serial, spread / 2):.2f}x** 1 worker's speed (the wall ratio above "
        "depends on what else runs on the machine)"
    )
    if "ray2" in rows:
        lines.append(f"- Ray (2 CPUs) / local 2 workers: {rows['ray2']['pages'] / rows['ray2']['seconds'] / two:.2f}x")
    lines.append(
        f"- chunk stage: grounded recursive (chunks + exact boxes + Arrow rows) {rows['ours1']['pages'] / ours_chunk:.0f} pages/s; "
        f"docling-core HybridChunker on the DoclingDocument of the same trees ({docling['pages']} pages, "
        f"{docling['chunks']} chunks) {docling['pages'] / docling['seconds']:.0f} pages/s: "
        f"**{(rows['ours1']['pages'] / ours_chunk) / (docling['pages'] / docling['seconds']):.1f}x**"
        if ours_chunk > 0 else "- chunk stage: not measured"
    )
    out.add(*lines, "")


def run_memory(out: Report, corpora: list[tuple[int, Path]]) -> None:
    out.add(
        "## Memory in corpus size (2 workers, embed=none)",
        "",
        "| corpus | files | pages | chunks | peak RSS parent MB | peak RSS worker MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    )
    results = []
    for n, corpus in corpora:
        r = isolated("ours", corpus, 2, False)
        results.append(r)
        files = len(list(corpus.glob("*.pdf")))
        out.add(f"| {n} copies | {files} | {r['pages']} | {r['chunks']} | {r['rss_parent_mb']:.0f} | {_mb(r['rss_worker_mb'])} |")
    small, large = results[0], results[-1]
    out.add(
        "",
        f"- {large['pages'] / small['pages']:.0f}x the pages: parent peak RSS x{large['rss_parent_mb'] / small['rss_parent_mb']:.2f}, "
        f"worker peak RSS x{large['rss_worker_mb'] / small['rss_worker_mb']:.2f} (flat = ~1.0)",
        "",
    )


def run_stage_costs(out: Report, corpus: Path) -> None:
    r = isolated("stages", corpus, 1, True)
    total = sum(r["cpu"].values())
    out.add(
        f"## CPU cost per page and stage (one process, 1 layout + 1 torch thread; {r['pages']} pages, {r['chunks']} chunks)",
        "",
        "| stage | CPU ms / page | share |",
        "| --- | ---: | ---: |",
        *(f"| {k} | {1000 * v / r['pages']:.1f} | {100 * v / total:.0f}% |" for k, v in r["cpu"].items()),
        f"| **total** | **{1000 * total / r['pages']:.1f}** | 100% |",
        "",
    )


def _load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", nargs=2, metavar=("KIND", "CORPUS"), help=argparse.SUPPRESS)
    ap.add_argument("--embed-one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="one 13-page PDF (x2 and 2 copies): a smoke run")
    ap.add_argument("--no-embed", action="store_true", help="no MiniLM embedding stage (both pipelines)")
    ap.add_argument("--embed-long", action="store_true",
                    help="embed on the one-document corpus too (adds ~1 CPU s per page per run: ~25 min more at x16)")
    ap.add_argument("--times", type=int, default=16, help="concatenations of the shared PDFs in the one-document corpus")
    ap.add_argument("--copies", type=int, default=2, help="copies of the shared PDFs in the multi-file corpus")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray engine (also skipped when ray is not installed)")
    ap.add_argument("--ray-single", action="store_true", help="also run Ray on the one-document corpus (one actor)")
    ap.add_argument("--sections", default="like,stages,copies,long,memory",
                    help="comma-separated subset of: like (like for like vs pymupdf4llm + LangChain, issue 24), "
                    "stages (CPU per stage), copies (multi-file corpus), long (one-document corpus), "
                    "memory (N vs 4N) (default: all)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of the like-for-like section")
    ap.add_argument("--like", nargs="+", choices=list(like_for_like.COMPARISONS), default=None, metavar="NAME",
                    help="only these like-for-like comparisons (default: all three)")
    ap.add_argument("--save", type=Path, help="also write the report as Markdown, e.g. docs/results/ingest_speed.md")
    args = ap.parse_args()
    if args.one:
        kind, corpus = args.one
        if kind == "baseline":
            result = measure_baseline(Path(corpus), args.embed_one)
        elif kind == "stages":
            result = measure_stage_costs(Path(corpus))
        elif kind == "docling":
            result = measure_docling_chunk(int(corpus), args.quick)
        else:
            result = measure_ours(Path(corpus), args.workers, args.embed_one, engine="ray" if kind == "ray" else "local")
        print(json.dumps(result))
        return 0
    if not LONG.is_dir():
        sys.exit(f"no shared PDFs under {LONG}")
    embed = not args.no_embed
    times = 2 if args.quick else args.times
    n_copies = 2 if args.quick else args.copies
    flags = " ".join(
        f for f in ["--quick" if args.quick else "", "--no-embed" if args.no_embed else "",
                    f"--times {args.times}" if args.times != 16 and not args.quick else "",
                    "--embed-long" if args.embed_long else "",
                    f"--sections {args.sections}" if args.sections != "like,stages,copies,long,memory" else "",
                    f"--rounds {args.rounds}" if args.rounds != 2 else "",
                    "--like " + " ".join(repr(n) for n in args.like) if args.like else "",
                    f"--copies {args.copies}" if args.copies != 2 and not args.quick else ""] if f
    )
    started = time.perf_counter()
    out = Report(args.save, [
        f"# Ingest speed (`python {SCRIPT}{' ' + flags if flags else ''}`)", "",
        f"{os.cpu_count()} cores; at the start: {_load()}.", "",
    ])
    with_ray = not args.no_ray and importlib.util.find_spec("ray") is not None
    sections = set(args.sections.split(","))
    if "like" in sections:
        folder = copies(n_copies, args.quick)
        like_for_like.run(out.add, _sources(args.quick), sorted(folder.glob("*.pdf")), args.rounds, workers=2,
                          only=set(args.like) if args.like else None)
    if "stages" in sections:
        run_stage_costs(out, copies(1, args.quick))
    pages_per_copy = "13" if args.quick else "44"
    if "copies" in sections:
        run_corpus(out, f"{pages_per_copy} shared pages x {n_copies} files", copies(n_copies, args.quick), embed, with_ray,
                   n_copies, args.quick)
    if "long" in sections:
        run_corpus(out, f"{pages_per_copy} shared pages concatenated {times}x (one document)", concatenated(times, args.quick),
                   embed and args.embed_long, with_ray and args.ray_single, times, args.quick)
    if "memory" in sections:  # N >= 2 files, so that both runs give whole documents to the 2 workers
        small = 2 if args.quick else max(1, n_copies // 2)
        run_memory(out, [(small, copies(small, args.quick)), (4 * small, copies(4 * small, args.quick))])
    out.add(f"Total {time.perf_counter() - started:.0f} s; at the end: {_load()}.")
    if args.save:
        print(f"\nwritten {args.save}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
