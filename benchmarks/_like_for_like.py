"""Like-for-like ingest comparison (issue 24): grounded vs pymupdf4llm + LangChain, same settings.

Three comparisons, each side in a fresh subprocess, rounds alternating which side runs first:

* ``parse+chunk``: one process each, the libraries' default threads on both sides (ONNX Runtime's
  own intra-op default number for the layout model, which both sides run; grounded's parser loads it
  without busy-waiting threads, pymupdf4llm with ONNX Runtime's default spinning -- each side as its
  library ships): ``get_parser("pymupdf")`` +
  ``Chunker("recursive", 256)`` vs ``pymupdf4llm.to_markdown(use_ocr=False)`` + LangChain
  ``RecursiveCharacterTextSplitter`` counting MiniLM tokens (N = 256, no overlap); each round also
  times the layout model alone (``page.get_layout()`` per page): the floor both sides stand on, so
  the summary prints the ceiling of any parser that runs it;
* ``e2e+MiniLM``: the same plus all-MiniLM-L6-v2 embeddings of every chunk, torch's default threads
  on both sides: grounded's one-process product path ``ingest(workers=0, embed="minilm")`` (length-
  ordered batches of 16, embedding on a second thread while the next document parses, Parquet
  written) vs the baseline's loop (one ``encode`` call per document, batch 64, sorted by
  sentence-transformers; nothing written);
* ``equal cores``: ``grounded ingest --workers W --embed minilm`` (Parquet rows) vs the baseline
  with MiniLM spread over a spawn ``ProcessPoolExecutor(W)`` over the files, each worker process of
  both sides with 1 layout thread (no spinning) and 1 torch thread.

Timed: the work over the corpus after the side's libraries and models are loaded (parse+chunk,
e2e), or the whole run including the worker pool's start and model loads (equal cores: both
sides pay them). CPU seconds are the process's (and its children's) user + system time, less
sensitive to other load on the machine than wall time: the primary comparison when the machine is
loaded (1-minute load average above its cores), wall-time pages/s otherwise. Both sides' thread
settings are printed on every row, the machine's load on every row and in the summary.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

N = 256
EMBED_BATCH = 64
HERE = Path(__file__).resolve()


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _ort_threads() -> str:
    """How this process's layout model runs (threads, spinning)."""
    from grounded.parsers.backends.pymupdf.layout import layout_threads_setting

    return layout_threads_setting()


def _torch_threads() -> str:
    import torch

    return f"torch {torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''}"


def _minilm(device: str = "cpu") -> Callable:
    from grounded.chunking.strategies.semantic import minilm_embedder

    return minilm_embedder(batch_size=EMBED_BATCH, device=device)


def _splitter():  # noqa: ANN202 - LangChain type
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from grounded.text.tokenizer import minilm_tokenizer

    return RecursiveCharacterTextSplitter(chunk_size=N, chunk_overlap=0, length_function=minilm_tokenizer().count)


# -- one side, one process -------------------------------------------------------------------------
def side_ours(files: list[Path]) -> dict:
    from grounded.chunking import Chunker
    from grounded.parsers import get_parser

    parser = get_parser("pymupdf")  # loads the layout model as grounded does: not timed, as for the baseline
    chunker = Chunker("recursive", N)
    pages = chunks = 0
    wall, cpu = time.perf_counter(), _cpu()
    for pdf in files:
        root = parser.parse(pdf)
        items = chunker.chunk(root).chunks
        pages += int(root.metadata["page_count"])
        chunks += len(items)
    return {"pages": pages, "chunks": chunks, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
            "threads": _ort_threads()}


def side_ours_inprocess(files: list[Path]) -> dict:
    """grounded's end-to-end path in one process: ``ingest(workers=0, embed="minilm")`` -- parse,
    chunk, embed (length-ordered batches, on a second thread while the next document parses) and
    Parquet rows written to disk (the baseline writes nothing)."""
    from grounded.ingest import ingest
    from grounded.parsers import get_parser

    get_parser("pymupdf")  # the layout model and MiniLM loaded before the clock, as for the baseline
    _minilm()
    wall, cpu = time.perf_counter(), _cpu()
    with tempfile.TemporaryDirectory(prefix="grounded-lfl-") as out:
        report = ingest(files, out, workers=0, embed="minilm", progress=False, parse_cache=False)  # every round parses (no parse cache)
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.errors}")
    return {"pages": report.pages, "chunks": report.chunks, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
            "threads": _ort_threads() + ", " + _torch_threads() + " (ingest workers=0: embedding on a second thread)"}


def side_floor(files: list[Path]) -> dict:
    """The layout model alone (``page.get_layout()`` on every page, nothing else): the work both
    sides share. No parser that runs it on every page can beat the baseline by more than
    baseline / floor."""
    from grounded.parsers.backends.pymupdf.layout import _load_layout

    _load_layout(None)  # as grounded loads it (no spinning), before `import pymupdf` loads it spinning
    import pymupdf
    pages = 0
    wall, cpu = time.perf_counter(), _cpu()
    for pdf in files:
        with pymupdf.open(pdf) as doc:
            for page in doc:
                page.get_layout()
                pages += 1
    return {"pages": pages, "chunks": 0, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
            "threads": _ort_threads()}


def _baseline_file(pdf: Path, splitter, embedder) -> tuple[int, int]:  # noqa: ANN001
    import pymupdf
    import pymupdf4llm

    # use_ocr=False: born-digital pages; pymupdf4llm would OCR picture text when Tesseract data is installed
    markdown = pymupdf4llm.to_markdown(str(pdf), show_progress=False, use_ocr=False)
    texts = splitter.split_text(markdown)
    if embedder is not None and texts:
        embedder(texts)
    with pymupdf.open(pdf) as doc:
        return doc.page_count, len(texts)


def side_baseline(files: list[Path], embed: bool) -> dict:
    import pymupdf  # noqa: F401

    splitter = _splitter()
    embedder = _minilm() if embed else None
    pages = chunks = 0
    wall, cpu = time.perf_counter(), _cpu()
    for pdf in files:
        p, c = _baseline_file(pdf, splitter, embedder)
        pages, chunks = pages + p, chunks + c
    return {"pages": pages, "chunks": chunks, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
            "threads": _ort_threads() + (", " + _torch_threads() if embed else "")}


_WORKER: dict = {}


def _pool_init() -> None:
    import torch

    from grounded.parsers.backends.pymupdf.layout import _load_layout

    _load_layout(1)  # 1 ONNX Runtime thread, no spinning, set before pymupdf loads the model (as grounded's workers)
    torch.set_num_threads(1)
    _WORKER["splitter"] = _splitter()
    _WORKER["embedder"] = _minilm()


def _pool_task(pdf: str) -> tuple[int, int]:
    return _baseline_file(Path(pdf), _WORKER["splitter"], _WORKER["embedder"])


def side_pool_baseline(files: list[Path], workers: int) -> dict:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    wall, cpu = time.perf_counter(), _cpu()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_pool_init) as pool:
        results = list(pool.map(_pool_task, [str(f) for f in files]))
    return {"pages": sum(p for p, _ in results), "chunks": sum(c for _, c in results),
            "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
            "threads": f"{workers} processes x (ORT 1 thread no spinning, torch 1 thread)"}


def side_pool_ours(files: list[Path], workers: int) -> dict:
    from grounded.ingest import ingest

    folder = files[0].parent
    wall, cpu = time.perf_counter(), _cpu()
    with tempfile.TemporaryDirectory(prefix="grounded-lfl-") as out:
        report = ingest(folder, out, workers=workers, embed="minilm", progress=False, parse_cache=False)  # every round parses (no parse cache)
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.errors}")
    return {"pages": report.pages, "chunks": report.chunks, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
            "threads": f"{workers} processes x (ORT 1 thread no spinning, torch 1 thread) + parent"}


# -- rounds -----------------------------------------------------------------------------------------
def _isolated(side: str, files: list[Path], workers: int) -> dict:
    cmd = [sys.executable, str(HERE), side, "--workers", str(workers), *map(str, files)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=HERE.parent.parent)
    if done.returncode != 0:
        sys.exit(f"measurement failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


COMPARISONS = {
    # name: (ours side, baseline side, target, files key); issue #41's targets: 1.2x parse+chunk and
    # 1.3x e2e by wall, in one process (grounded's cheaper layout runtime, see layout_runtime.py)
    "parse+chunk, 1 process": ("ours", "baseline", 1.2, "single"),
    "e2e + MiniLM, 1 process": ("ours-embed", "baseline-embed", 1.3, "single"),
    "e2e + MiniLM, equal cores": ("ours-pool", "baseline-pool", 1.1, "copies"),
}
#: comparisons that also time the layout model alone (:func:`side_floor`) in every round
FLOOR = {"parse+chunk, 1 process"}
LABELS = {"floor": "layout model alone (floor)"}


def run(add: Callable[..., None], single: list[Path], copies: list[Path], rounds: int, workers: int,
        only: set[str] | None = None) -> dict[str, float]:
    """Measure every comparison ``rounds`` times, alternating which side runs first; ``add`` prints
    and saves Markdown lines. Returns the median ratio (ours / baseline pages/s) per comparison."""
    add(
        f"## Like for like (issue 24): {rounds} alternating rounds, each side in a fresh process",
        "",
        f"Corpora: parse+chunk and e2e on the {len(single)} shared long PDFs; equal cores on "
        f"{len(copies)} files (the same PDFs x{len(copies) // max(1, len(single))}, byte-distinct copies). "
        f"{os.cpu_count()} cores shared with other jobs: the load column is `uptime`'s 1/5-min load "
        "average when the row finished. pages/s from wall time; CPU s = user + system of the "
        "process and its children.",
        "",
        "| comparison | round | side | threads | pages | chunks | wall s | pages/s | CPU s | CPU ms/page | load |",
        "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    )
    ratios: dict[str, float] = {}
    summary: list[str] = []
    for name, (ours, base, target, key) in COMPARISONS.items():
        if only and name not in only:
            continue
        files = single if key == "single" else copies
        sides = (ours, base, "floor") if name in FLOOR else (ours, base)
        walls: dict[str, list[float]] = {side: [] for side in sides}
        seconds: dict[str, list[float]] = {side: [] for side in sides}
        cpus: dict[str, list[float]] = {side: [] for side in sides}
        for k in range(rounds):
            for side in (sides if k % 2 == 0 else sides[::-1]):
                r = _isolated(side, files, workers)
                walls[side].append(r["pages"] / r["wall"])
                seconds[side].append(r["wall"])
                cpus[side].append(1000 * r["cpu"] / r["pages"])
                label = LABELS.get(side) or ("grounded" if side == ours else "pymupdf4llm + LangChain")
                add(f"| {name} | {k + 1} | {label} | {r['threads']} | {r['pages']} | {r['chunks']} | "
                    f"{r['wall']:.1f} | {r['pages'] / r['wall']:.2f} | {r['cpu']:.1f} | {1000 * r['cpu'] / r['pages']:.0f} | "
                    f"{_load()} |")
        wall_ratio = statistics.median(walls[ours]) / statistics.median(walls[base])
        cpu_ratio = statistics.median(cpus[base]) / statistics.median(cpus[ours])
        loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
        primary, other = (("CPU ms per page", cpu_ratio), ("wall pages/s", wall_ratio)) if loaded else (
            ("wall pages/s", wall_ratio), ("CPU ms per page", cpu_ratio))
        ratios[name] = primary[1]
        met = "met" if primary[1] >= target else "NOT met"
        summary.append(
            f"- {name}: grounded / baseline by {primary[0]} (medians) **{primary[1]:.2f}x** (target >= {target}x: "
            f"{met}; primary because the machine was {'loaded' if loaded else 'quiet'}, load {_load()}); "
            f"by {other[0]} {other[1]:.2f}x"
        )
        if name in FLOOR:
            floor = statistics.median(seconds["floor"])
            summary.append(
                f"  - above the floor (median wall s): layout model alone {floor:.2f} s; grounded "
                f"{statistics.median(seconds[ours]) - floor:+.2f} s, baseline {statistics.median(seconds[base]) - floor:+.2f} s"
            )
            ceiling_wall = statistics.median(walls["floor"]) / statistics.median(walls[base])
            ceiling_cpu = statistics.median(cpus[base]) / statistics.median(cpus["floor"])
            summary.append(
                f"  - ceiling: the layout model alone (page.get_layout on every page, no text, no tree) runs "
                f"{ceiling_wall:.2f}x the baseline's pages/s by wall, {ceiling_cpu:.2f}x by CPU -- no parser that "
                "runs it on every page can be faster than that"
            )
    add("", *summary, "")
    return ratios


def main() -> int:
    side, rest = sys.argv[1], sys.argv[2:]
    workers = 1
    if rest[:1] == ["--workers"]:
        workers, rest = int(rest[1]), rest[2:]
    files = [Path(f) for f in rest]
    result = {
        "ours": lambda: side_ours(files),
        "floor": lambda: side_floor(files),
        "baseline": lambda: side_baseline(files, embed=False),
        "ours-embed": lambda: side_ours_inprocess(files),
        "baseline-embed": lambda: side_baseline(files, embed=True),
        "ours-pool": lambda: side_pool_ours(files, workers),
        "baseline-pool": lambda: side_pool_baseline(files, workers),
    }[side]()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
