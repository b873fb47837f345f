"""Issue #21.8: OCR bombs made of images are bounded, and OCR garbage never becomes elements.

Constructed pages (``tests/support/pdf_builders``): 1000 small noise images under two scanned
text lines; one huge noise image under them; and a real scanned page of a shared PDF, which no
budget may touch and from which no element may be dropped as garbage. Each parse must say what
the budget did in the page's record (``ocr_budget``) and with an ``OCRBudgetWarning`` naming the
file and page, read the real lines, and make no TABLE or text element of the noise. Parse times
are measured in ``benchmarks/ocr_bombs.py`` (docs/results/ocr_bombs.md), not asserted here.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from grounded.model import TEXT_TYPES, ParsingResultType
from grounded.parsers.backends.pymupdf.ocr_text import OCR_LEFT_OUT_KEY, is_garbage_element, word_share
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.ocr.budget import OCR_BUDGET_KEY, OCR_MAX_PAGE_IMAGES, OCRBudgetWarning
from grounded.parsers.ocr.engine import ocr_available
from tests.support.data import shared
from tests.support.pdf_builders import noise_image_pdf, noise_images_pdf
from tests.support.scanned import scanned_pdf

pytestmark = pytest.mark.skipif(not ocr_available(), reason="OCR language data not installed")

LINES = ["Bounded optical character reading", "Noise never becomes a table"]


def _parse(path: Path) -> tuple[object, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        root = PyMuPDFParser(ocr="auto").parse(path)
    return root, list(caught)


def _text(root) -> str:  # type: ignore[no-untyped-def]
    return " ".join(n.content for n in root.walk() if n.content and n.type in TEXT_TYPES)


def _has_lines(text: str) -> bool:
    """Both LINES in ``text``, spaces aside (Tesseract may join two words of a line)."""
    solid = "".join(text.split())
    return all("".join(line.split()) in solid for line in LINES)


def test_garbage_rule_keeps_real_text_and_drops_noise() -> None:
    assert not is_garbage_element("TA dosh eral Mewreinoage: O¥nical2 (2013) 590-595")  # a real, garbled header
    assert not is_garbage_element("Federal Register/Vol. 85, No. 152/Thursday, August")
    # Tesseract's reading of a page of 100 noise images (before the noise tiles were erased)
    noise = "er eeoeiaabeenfsek : achee eee ae Se BOATSeeae Seetaeoe eeoses Mente heeeeeee eR"
    assert is_garbage_element(noise)
    assert not is_garbage_element("ee ae Se eR")  # too short to judge


def test_a_page_of_1000_noise_images_is_bounded_flagged_and_reads_its_lines(tmp_path: Path) -> None:
    path = noise_images_pdf(tmp_path / "noise1000.pdf", 1000, lines=LINES)
    root, caught = _parse(path)
    page = root.metadata["pages"][0]
    budget = page[OCR_BUDGET_KEY]
    assert budget["images"] > OCR_MAX_PAGE_IMAGES and budget["whole_page"] and not budget["skipped"]
    assert budget["noise_tiles"] >= 0.5 * budget["tiles"]
    assert budget["cause"] in page["warnings"]
    assert any(issubclass(w.category, OCRBudgetWarning) and str(path) in str(w.message) and "page 1" in str(w.message)
               for w in caught)
    types = {n.type for n in root.walk()}
    assert ParsingResultType.TABLE not in types
    text = _text(root)
    assert _has_lines(text), text
    assert word_share(text) > 0.8, text  # the lines, no garbage


def test_one_huge_noise_image_is_erased_before_ocr(tmp_path: Path) -> None:
    path = noise_image_pdf(tmp_path / "noise_big.pdf", 4000, lines=LINES)
    root, caught = _parse(path)
    page = root.metadata["pages"][0]
    budget = page[OCR_BUDGET_KEY]
    assert budget["images"] == 2 and not budget["whole_page"] and budget["noise_tiles"] >= 0.5 * budget["tiles"]
    assert any(issubclass(w.category, OCRBudgetWarning) for w in caught)
    text = _text(root)
    assert _has_lines(text), text
    assert ParsingResultType.TABLE not in {n.type for n in root.walk()}


def test_a_real_scanned_page_is_untouched_by_the_budgets(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned_pdf(shared("long", "cermine_test6_peerjcs118.pdf"), [2]))
    root, caught = _parse(path)
    page = root.metadata["pages"][0]
    assert page["text_source"] == "ocr" and OCR_BUDGET_KEY not in page
    assert not any(issubclass(w.category, OCRBudgetWarning) for w in caught)
    assert page[OCR_LEFT_OUT_KEY]["garbage_elements"] == 0
    assert len(_text(root)) > 2000


def test_pages_past_the_document_image_budget_are_not_ocrd(tmp_path: Path, monkeypatch) -> None:
    import pymupdf

    from grounded.parsers.ocr import engine

    one = noise_image_pdf(tmp_path / "one.pdf", 400, lines=LINES)  # 2 images: the lines' band + noise
    with pymupdf.open(one) as src, pymupdf.open() as doc:
        doc.insert_pdf(src)
        doc.insert_pdf(src)
        doc.save(tmp_path / "two.pdf")
    monkeypatch.setattr(engine, "OCR_MAX_PAGE_IMAGES", 1)
    monkeypatch.setattr(engine, "OCR_MAX_DOCUMENT_IMAGES", 3)
    root, caught = _parse(tmp_path / "two.pdf")
    first, second = root.metadata["pages"]
    assert first["text_source"] == "ocr" and first[OCR_BUDGET_KEY]["whole_page"] and not first[OCR_BUDGET_KEY]["skipped"]
    assert second["text_source"] == "text_layer" and second[OCR_BUDGET_KEY]["skipped"]
    assert "not OCR'd" in second[OCR_BUDGET_KEY]["cause"] and "OCR_MAX_DOCUMENT_IMAGES = 3" in second[OCR_BUDGET_KEY]["cause"]
    assert second[OCR_BUDGET_KEY]["cause"] in second["warnings"]
    assert any(issubclass(w.category, OCRBudgetWarning) and "page 2" in str(w.message) for w in caught)
    assert _has_lines(_text(root))
