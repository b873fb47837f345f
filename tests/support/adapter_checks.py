"""Checks shared by the framework-adapter tests: what PyMuPDF reads inside a chunk's boxes."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymupdf
from rapidfuzz import fuzz

from grounded.model import ParsingBoundingBox
from grounded.parsers import ParseOutput
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.source import PDFSource

QUESTION = "Which compound showed potent inhibition and N-domain selectivity?"
ANSWER_MARK = "927"  # the abstract: "927-fold more selective for the N-domain than the C-domain"


def norm(text: str) -> str:
    """Letters and digits only, NFKC (ligatures spelled out), lower-cased: compares text across
    line breaks and spacing."""
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text).lower())


@functools.lru_cache(maxsize=64)
def _page_chars(pdf: str, page_number: int) -> tuple[tuple[float, float], tuple[tuple[str, float, float], ...]]:
    """Page size and every character of the page's text layer with its centre, in PyMuPDF's order."""
    out = []
    with pymupdf.open(pdf) as doc:
        page = doc[page_number - 1]
        for block in page.get_text("rawdict")["blocks"]:
            for line in block.get("lines", ()):
                for span in line["spans"]:
                    for ch in span["chars"]:
                        x0, y0, x1, y1 = ch["bbox"]
                        out.append((ch["c"], (x0 + x1) / 2, (y0 + y1) / 2))
        return (page.rect.width, page.rect.height), tuple(out)


def text_at_boxes(pdf: str | Path, boxes: Sequence[ParsingBoundingBox], pad: float = 0.5) -> str:
    """PyMuPDF's characters whose centre lies inside the line boxes (or boxes without lines), box by
    box; a character under two overlapping boxes is read once (a highlight is a union of regions)."""
    parts = []
    seen: set[tuple[int, int]] = set()
    for box in boxes:
        (w, h), page_chars = _page_chars(str(pdf), box.page)
        for line in box.spans or [box]:
            x0, y0, x1, y1 = line.left * w - pad, line.top * h - pad, line.right * w + pad, line.bottom * h + pad
            picked = []
            for i, (c, cx, cy) in enumerate(page_chars):
                if x0 <= cx <= x1 and y0 <= cy <= y1 and (box.page, i) not in seen:
                    seen.add((box.page, i))
                    picked.append(c)
            parts.append("".join(picked))
    return "\n".join(parts)


def body_coverage(pdf: str | Path, boxes: Sequence[ParsingBoundingBox], body: str) -> float:
    """How much (0-100) of the body the boxes show, for the approximate box modes (``line`` guesses
    lines from token density, ``element`` boxes come from the layout model)."""
    found = norm(text_at_boxes(pdf, [b for b in boxes if not b.is_heading]))
    wanted = norm(body)
    return fuzz.partial_ratio(wanted, found) if len(wanted) <= len(found) else fuzz.ratio(wanted, found)


def assert_boxes_show_body(pdf: str | Path, boxes: Sequence[ParsingBoundingBox], body: str) -> None:
    """The body's text lies inside its (non-heading) boxes; exact boxes show hardly anything else."""
    body_boxes = [b for b in boxes if not b.is_heading]
    assert body_boxes, "a chunk with text must have boxes"
    found = norm(text_at_boxes(pdf, body_boxes))
    wanted = norm(body)
    assert wanted in found, f"body not inside its boxes:\nbody:  {wanted[:200]}\nboxes: {found[:200]}"
    if all(b.mode == "exact" for b in body_boxes):
        n_lines = sum(max(1, len(b.spans)) for b in body_boxes)
        assert len(found) <= len(wanted) + 3 * n_lines + 8, (
            f"exact boxes cover much more than the body ({len(found)} vs {len(wanted)} characters)"
        )


class CountingParser(PyMuPDFParser):
    """The real PyMuPDF parser, counting the PDFs it parses (to observe parse-cache hits)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parses = 0

    def run(self, pdf: PDFSource, *, password: str | None = None, name: str | None = None) -> ParseOutput:
        self.parses += 1
        return super().run(pdf, password=password, name=name)


def assert_light_import_and_named_extra(adapter: str, framework: str, extra: str) -> None:
    """In a fresh interpreter: importing grounded loads no framework or model library, and importing
    ``adapter`` without ``framework`` raises BackendUnavailableError naming ``pip install 'grounded[extra]'``."""
    code = (
        "import sys, grounded, grounded.metadata\n"
        "heavy = [m for m in ('torch', 'llama_index', 'langchain_core', 'sentence_transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        f"sys.modules[{framework!r}] = None\n"
        "try:\n"
        f"    import {adapter}\n"
        "except ImportError as exc:\n"
        "    from grounded.errors import BackendUnavailableError\n"
        "    assert isinstance(exc, BackendUnavailableError), type(exc)\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"pip install 'grounded[{extra}]'" in out.stdout
