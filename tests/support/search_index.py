"""Shared by the search and viewer tests: a real ingest output (the sample guideline + one shared
PDF, MiniLM embeddings, LanceDB sink), tables derived from its real rows, and the pixel check of
drawn highlight boxes."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.data import shared
from tests.support.run_once import exclusive, run_directory

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
#: the issue's question; its answer is the sample guideline's Table 1 row on page 4
QUESTION = "Which regimen is preferred for triple-negative breast cancer with residual disease after neoadjuvant therapy?"
ANSWER_PAGE = 4
SHARED_PDF = ("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


def ensure_text_index(out: Path) -> None:
    """Build the full-text index (on ``search_text``, else ``text``) when ingest did not (older ingest versions)."""
    import lancedb
    from lancedb.index import FTS

    from grounded.search import SearchIndex

    if SearchIndex(out).text_column() is None:
        table = lancedb.connect(str(out / "lancedb")).open_table("chunks")
        column = "search_text" if "search_text" in table.schema.names else "text"  # what ingest indexes
        table.create_index(column, config=FTS(), replace=True)


def build_guideline_index(root: Path) -> Path:
    """``grounded ingest`` of the sample guideline + a shared PDF with ``--embed minilm --sink lancedb``."""
    from grounded.ingest import ingest
    from grounded.samples import write_sample_pdf

    pdf = write_sample_pdf(root / "pdfs" / "guideline.pdf")
    out = root / "out"
    report = ingest([str(pdf), str(shared(*SHARED_PDF))], out, embed="minilm", sink="lancedb", workers=1, progress=False)
    assert report.ok and report.done == 2, report.summary()
    ensure_text_index(out)
    return out


def guideline_index(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A copy of :func:`build_guideline_index`'s output in a new temp folder ``name*``, the ingest
    itself run once per test run (spawned worker, layout model, MiniLM) and shared by every module
    and xdist worker. Each caller gets its own copy (``shutil.copytree`` keeps the files' bytes and
    times), so a module that writes into its ``out`` cannot change another's; the source PDFs the
    rows point to are shared, and the tests copy a PDF before changing it."""
    root = run_directory(tmp_path_factory, "guideline-index")
    with exclusive(root / "build.lock"):
        done = root / "built"
        if not done.exists():
            build = root / f"build-{os.getpid()}"  # a failed attempt's folder is never reused
            build_guideline_index(build)
            done.write_text(build.name)
        out = root / done.read_text() / "out"
    copy = tmp_path_factory.mktemp(name) / "out"
    shutil.copytree(out, copy)
    return copy


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: relative path -> (size, mtime in ns); equal states = nothing written."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))
            if p.is_file()}


def table_rows(out: Path) -> Any:
    """The ingest table of ``out`` as a :class:`pyarrow.Table`."""
    import lancedb

    return lancedb.connect(str(out / "lancedb")).open_table("chunks").to_arrow()


def derived_index(folder: Path, rows: Any, *, text_index: bool = True) -> Path:
    """``folder/out``: an ingest-like output whose table holds ``rows`` (real rows, changed by the caller)."""
    import lancedb

    out = folder / "out"
    lancedb.connect(str(out / "lancedb")).create_table("chunks", data=rows, schema=rows.schema)  # types as given
    if text_index:
        ensure_text_index(out)
    return out


def highlighted(pixels: np.ndarray) -> np.ndarray:
    """Pixels tinted by the default highlight (marker yellow over the page): red well above blue."""
    r, b = pixels[..., 0].astype(int), pixels[..., 2].astype(int)
    return (r > 150) & (r - b > 40)


def png_pixels(png: bytes) -> np.ndarray:
    import pymupdf

    pix = pymupdf.Pixmap(png)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[..., :3]


def span_rects(boxes: Iterable[dict[str, Any]], page: int, width: int, height: int, inset: int = 2) -> list[tuple[int, int, int, int]]:
    """Pixel rectangles ``(x0, y0, x1, y1)`` of the line spans of the (non-heading) boxes on ``page``,
    ``inset`` pixels inside their edges."""
    rects = []
    for box in boxes:
        if box["page"] != page or box["heading"]:
            continue
        for s in box["spans"] or [box]:
            x0, x1 = round(s["left"] * width) + inset, round(s["right"] * width) - inset
            y0, y1 = round(s["top"] * height) + inset, round(s["bottom"] * height) - inset
            if x1 > x0 and y1 > y0:
                rects.append((x0, y0, x1, y1))
    return rects


def highlight_coverage(pixels: np.ndarray, rects: Sequence[tuple[int, int, int, int]], margin: int = 6) -> tuple[float, float]:
    """(share of highlighted pixels inside ``rects``, share of highlighted pixels everywhere else,
    ``rects`` grown by ``margin`` pixels excluded)."""
    tinted = highlighted(pixels)
    inside = np.zeros(tinted.shape, dtype=bool)
    near = np.zeros(tinted.shape, dtype=bool)
    for x0, y0, x1, y1 in rects:
        inside[y0:y1, x0:x1] = True
        near[max(0, y0 - margin) : y1 + margin, max(0, x0 - margin) : x1 + margin] = True
    assert inside.any(), "no span rectangle to check"
    return float(tinted[inside].mean()), float(tinted[~near].mean())
