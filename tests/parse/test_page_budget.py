"""Issue #21 item 7: one hostile page cannot stall a parse.

A page whose text layer is beyond the layout budget (``LAYOUT_MAX_CHARS`` characters or
``LAYOUT_MAX_SPANS`` spans) is not given to the layout model: its text comes from MuPDF's text
blocks, every character of it, with a warning on the page and status ``ok``. The page is built of
many small text operators (a constructed PDF); the timing claims are in docs/results/hostile_pages.md
(benchmark, not a timed test).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pymupdf

from grounded.model import TEXT_TYPES
from grounded.parsers.backends.pymupdf import layout
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from tests.support.pdf_builders import many_operators_pdf


def _parse(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PyMuPDFParser().parse(path)


def _solid(text: str) -> str:
    return "".join(text.split())


def _result_text(root) -> str:
    return "".join(_solid(n.content) for n in root.walk() if n.content and (n.type in TEXT_TYPES or not n.children))


def test_a_page_beyond_the_default_budget_is_parsed_from_text_blocks(tmp_path: Path) -> None:
    ops = layout.LAYOUT_MAX_CHARS // 2 + 1000  # two characters per operator: beyond the budget
    path = many_operators_pdf(tmp_path / "ops.pdf", ops)
    with pymupdf.open(path) as doc:
        expected = _solid(doc[0].get_text())
    root = _parse(path)
    page = root.metadata["pages"][0]
    assert page["status"] == "ok"
    assert "LAYOUT_MAX_CHARS" in page["layout_skipped"]
    assert any("layout model skipped" in w for w in page["warnings"])
    assert sorted(_result_text(root)) == sorted(expected)  # every character is kept


def test_the_budget_counts_spans_and_leaves_pages_within_it_to_the_layout_model(tmp_path: Path, monkeypatch) -> None:
    path = many_operators_pdf(tmp_path / "ops.pdf", 600, per_line=6)  # 600 operators, 100 lines
    within = _parse(path)
    assert "layout_skipped" not in within.metadata["pages"][0]
    with pymupdf.open(path) as doc:
        spans = sum(len(line["spans"]) for b in doc[0].get_text("dict")["blocks"] for line in b.get("lines", ()))
    monkeypatch.setattr(layout, "LAYOUT_MAX_SPANS", spans - 1)
    beyond = _parse(path)
    assert "LAYOUT_MAX_SPANS" in beyond.metadata["pages"][0]["layout_skipped"]
    assert _result_text(beyond) and sorted(_result_text(beyond)) == sorted(_result_text(within))


def test_a_budget_of_zero_parses_every_page_from_text_blocks(tmp_path: Path, monkeypatch) -> None:
    doc = pymupdf.open()
    for k in range(2):
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 300), f"Normal page {k}. " * 40, fontsize=11)
    doc.save(tmp_path / "two.pdf")
    path = tmp_path / "two.pdf"
    normal = _parse(path)
    assert all("layout_skipped" not in p for p in normal.metadata["pages"])
    monkeypatch.setattr(layout, "LAYOUT_MAX_CHARS", 0)  # every page with text is beyond it
    cheap = _parse(path)
    assert all(p["status"] == "ok" and "layout_skipped" in p for p in cheap.metadata["pages"])
    assert sorted(_result_text(cheap)) == sorted(_result_text(normal))
