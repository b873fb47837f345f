"""Shared by tests: helpers formerly at the top of test_backend_docling_granite.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pymupdf
from PIL import Image

from grounded.model import ParsingResult, ParsingResultType
from grounded.parsers.backends.granite_docling import DOCTAGS_GRID, DocTagsPages, GraniteDoclingParser
from tests.support.cloud_fixtures import RAW
from tests.support.data import shared

T = ParsingResultType

GRID_TOL = 1.0 / DOCTAGS_GRID + 1e-9  # DocTags quantize every coordinate to 1/500 of the page


def page_sizes(pdf: Path) -> list[tuple[float, float]]:
    with pymupdf.open(pdf) as d:
        return [(p.rect.width, p.rect.height) for p in d]


def export_pages(name: str) -> DocTagsPages:
    """docling-core's DocTags export of a standard-pipeline parse, split at <page_break>."""
    base = shared("native", "docling", f"{name}.doctags.txt")
    pdf = base.with_name(f"{name}.pdf")
    return DocTagsPages.from_text(base.read_text(encoding="utf-8"), page_sizes(pdf))


class RecordedVlmConverter:
    """Stands in for Docling's VLM pipeline: per-page DocTags + page size, like ConversionResult.pages."""

    def __init__(self, pages: DocTagsPages) -> None:
        self.pages = pages

    def convert(self, source: str) -> SimpleNamespace:
        return SimpleNamespace(
            pages=[
                SimpleNamespace(
                    predictions=SimpleNamespace(vlm_response=SimpleNamespace(text=p.doctags)),
                    size=SimpleNamespace(width=p.width, height=p.height),
                )
                for p in self.pages.pages
            ]
        )


def parser(pages: DocTagsPages | None = None) -> GraniteDoclingParser:
    return GraniteDoclingParser(converter=RecordedVlmConverter(pages or DocTagsPages([])))


def norm(text: str) -> str:
    return " ".join(text.split())


def replay(native: DocTagsPages, pdf: Path) -> ParsingResult:
    """The transform of recorded DocTags, replayed with ``parse_native`` under RAW options."""
    return GraniteDoclingParser(converter=RecordedVlmConverter(DocTagsPages([])), **RAW).parse_native(native, pdf).root


def image_pdf(dt: Path, tmp_path: Path) -> Path:
    """A one-page PDF of the page image a raw generation was made from (the model's input; the
    image has no text layer, so post-processing attaches no lines)."""
    png = dt.with_suffix(".png")
    with Image.open(png) as im:
        w, h = im.size
    out = tmp_path / f"{dt.stem}.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page(width=w, height=h)
        page.insert_image(page.rect, filename=str(png))
        doc.save(out)
    return out


# -- construction ----------------------------------------------------------------------------------
