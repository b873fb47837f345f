"""Shared by tests: helpers formerly at the top of test_backend_docling.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pymupdf
from rapidfuzz.distance import Levenshtein

from grounded.model import TEXT_TYPES, ParsingBoundingBox, ParsingResult, ParsingResultType
from grounded.parsers.backends.docling import DoclingParser, load_docling_document
from tests.support.cloud_fixtures import RAW, blank_pdf

T = ParsingResultType


class RecordedConverter:
    """Stands in for docling's DocumentConverter: returns the recorded DoclingDocument of a PDF."""

    def __init__(self, status: str = "success") -> None:
        self.status = status
        self.calls: list[str] = []

    def convert(self, source: str) -> SimpleNamespace:
        self.calls.append(source)
        document = load_docling_document(Path(source).with_suffix(".json"))
        return SimpleNamespace(status=SimpleNamespace(value=self.status), errors=[], document=document)


def parser(**kwargs) -> DoclingParser:
    return DoclingParser(converter=RecordedConverter(), **kwargs)


def replay(pdf: Path, doc=None) -> ParsingResult:
    """The transform of the recorded DoclingDocument next to ``pdf`` (or ``doc``), replayed with
    ``parse_native`` under RAW options (nothing dropped, no hierarchy, boxes as transformed)."""
    native = doc if doc is not None else DoclingParser.load_native(pdf.with_suffix(".json"))
    return parser(**RAW).parse_native(native, pdf).root


def replay_on_blank_page(doc, tmp_path: Path, width: float, height: float) -> ParsingResult:
    """A DoclingDocument built in the test, replayed on a blank page of its size."""
    return parser(**RAW).parse_native(doc, blank_pdf(tmp_path / "blank.pdf", [(width, height)])).root


def norm(text: str) -> str:
    return " ".join(text.split())


def text_in_box(pdf: pymupdf.Document, box: ParsingBoundingBox) -> str:
    page = pdf[box.page - 1]
    w, h = page.rect.width, page.rect.height
    return page.get_text("text", clip=pymupdf.Rect(box.left * w, box.top * h, box.right * w, box.bottom * h))


def box_distances(root: ParsingResult, pdf_path: Path, min_chars: int = 20) -> list[float]:
    """Normalized edit distance between each one-box text element and the PDF text inside its box."""
    out = []
    with pymupdf.open(pdf_path) as pdf:
        for node in root.walk():
            if node.type in TEXT_TYPES and len(node.geom) == 1 and len(node.content) >= min_chars:
                found = text_in_box(pdf, node.geom[0])
                out.append(Levenshtein.normalized_distance(norm(found), norm(node.content)))
    return out


# -- construction ----------------------------------------------------------------------------------
