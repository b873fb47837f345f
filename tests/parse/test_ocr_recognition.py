"""What Tesseract reads on OCR'd pages (issue 11): character-level recognition, on constructed
scans and the shared long PDFs. Real OCR (Tesseract inside PyMuPDF), no mocks.

Dot leaders ("Labor cost ........ $85"): Tesseract reads a long run of dots as letters
("cecece"); :func:`grounded.parsers.ocr.regions.dot_leaders` finds them in the page image, the
OCR'd copy has them erased from the image Tesseract reads and written back as "." characters.

Dashes: Tesseract reads en dashes as hyphens or em dashes; each dash it reads is made the one
its width in the image shows (:func:`grounded.parsers.ocr.regions.dash_kind`).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from grounded.parsers.ocr.engine import DASHES, ocr_copy
from grounded.parsers.ocr.regions import dot_leaders
from tests.support.data import SHARED_DATA
from tests.support.scanned import scanned_pdf

LONG = SHARED_DATA / "long"
FEDREG = LONG / "federal-register-2020-17221.pdf"
PEERJ = LONG / "cermine_test6_peerjcs118.pdf"
CLINSCI = LONG / "cermine_web_example3_clinsci.pdf"
SCAN_DPI = 300
OCR_DPI = 200
#: OCR words whose centres are more than this many points apart vertically are on different lines
ROW_GAP = 4.0

#: (label, amount) rows of the constructed table of costs
_ROWS = [
    ("Labor cost", "$85"),
    ("Parts cost", "$0"),
    ("Cost per product", "$6,205"),
    ("Installation and verification", "$1,530"),
    ("Manual revisions", "$170"),
    ("Inspection of the marker", "$2,040"),
]


def _leader_pdf(fontsize: float = 9.0) -> tuple[bytes, list[str]]:
    """A born-digital page of ``_ROWS`` as "label ........ amount" lines (dots filling the gap to a
    right-aligned amount, as in a cost table or a table of contents), under a line of prose.
    Returns (PDF bytes, the text of each line)."""
    lines = ["Estimated costs of the proposed actions for each operator are shown below."]
    font = pymupdf.Font("helv")
    dot = font.text_length(".", fontsize=fontsize)
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 100), lines[0], fontsize=fontsize, fontname="helv")
        y = 130.0
        for label, amount in _ROWS:
            right = 400 - font.text_length(amount, fontsize=fontsize)
            start = 72 + font.text_length(label + " ", fontsize=fontsize)
            dots = "." * int((right - dot - start) / dot)
            text = f"{label} {dots} {amount}"
            page.insert_text((72, y), f"{label} {dots}", fontsize=fontsize, fontname="helv")
            page.insert_text((right, y), amount, fontsize=fontsize, fontname="helv")
            lines.append(text)
            y += fontsize * 1.6
        return bytes(doc.tobytes()), lines


def _gray(data: bytes, dpi: int = OCR_DPI) -> np.ndarray:
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        pix = doc[0].get_pixmap(dpi=dpi, alpha=False)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n).min(axis=2)


def _ocr_lines(tmp_path: Path, data: bytes) -> list[str]:
    """The lines of the OCR'd copy of the one-page scan ``data`` (MuPDF's lines, top down)."""
    (tmp_path / "scan.pdf").write_bytes(data)
    ocr_copy(tmp_path / "scan.pdf", [0], tmp_path / "ocr.pdf", dpi=OCR_DPI)
    with pymupdf.open(tmp_path / "ocr.pdf") as doc:
        words = doc[0].get_text("words", sort=True)
    rows: list[list[tuple[float, float, str]]] = []
    for x0, y0, _, y1, text, *_ in sorted(words, key=lambda w: (w[1] + w[3]) / 2):
        cy = (y0 + y1) / 2
        if not rows or cy - rows[-1][-1][0] > ROW_GAP:
            rows.append([])
        rows[-1].append((cy, x0, text))
    return [" ".join(t for _, _, t in sorted(row, key=lambda w: w[1])) for row in rows]


def _solid(text: str) -> str:
    return "".join(text.split())


def test_dot_leaders_are_found_on_a_constructed_page(tmp_path: Path) -> None:
    """One leader per row, each dot of it; none in the prose line above (its full stop)."""
    data, lines = _leader_pdf()
    (tmp_path / "leaders.pdf").write_bytes(data)
    leaders = dot_leaders(_gray(scanned_pdf(tmp_path / "leaders.pdf", dpi=SCAN_DPI)), OCR_DPI)
    assert len(leaders) == len(_ROWS)
    for leader, line in zip(sorted(leaders, key=lambda lead: lead.baseline), lines[1:], strict=True):
        assert abs(len(leader.dots) - line.count(".")) <= 1, (len(leader.dots), line)
        assert 7.0 <= leader.fontsize <= 11.0


def test_dot_leaders_of_shared_pages() -> None:
    """The Federal Register cost tables (p5: one row label and three rows of three amount cells
    with dots); no leader on pages without them (prose, chemistry, a logo of tiny letters)."""
    leaders = dot_leaders(_gray(scanned_pdf(FEDREG, [5], dpi=SCAN_DPI)), OCR_DPI)
    assert len(leaders) == 10 and sum(len(lead.dots) for lead in leaders) >= 200
    for src, page in ((FEDREG, 1), (FEDREG, 3), (PEERJ, 2), (CLINSCI, 2), (CLINSCI, 11)):
        assert dot_leaders(_gray(scanned_pdf(src, [page], dpi=SCAN_DPI)), OCR_DPI) == [], (src.name, page)


@pytest.mark.slow
def test_scanned_dot_leaders_read_as_dots(tmp_path: Path) -> None:
    """The constructed cost table scanned and OCR'd: every line reads as printed, dots included
    (CER <= 3% per line; was "cecece" for the dots), no letters made of dots."""
    data, lines = _leader_pdf()
    (tmp_path / "leaders.pdf").write_bytes(data)
    got = _ocr_lines(tmp_path, scanned_pdf(tmp_path / "leaders.pdf", dpi=SCAN_DPI))
    assert len(got) == len(lines), got
    for line, truth in zip(got, lines, strict=True):
        assert Levenshtein.distance(_solid(line), _solid(truth)) <= 0.03 * len(_solid(truth)), (line, truth)
    assert not any(re.search(r"[ce]{4,}", line) for line in got), got


#: lines with hyphens, en dashes (ranges) and em dashes (a break in a sentence)
_DASH_LINES = [
    "See pages 305\u2013313 and the years 2019\u20132020 in the report.",
    "A well-known state-of-the-art method for long-term care.",
    "The result\u2014as expected\u2014held for the follow-up group.",
    "Call 202\u2013493\u20132251 or see Docket No. FAA\u20132020\u20130686 today.",
]


def _dashes(text: str) -> str:
    return "".join(c for c in text if c in DASHES)


@pytest.mark.slow
@pytest.mark.parametrize("fontname", ["helv", "tiro"])
def test_scanned_dashes_keep_their_kind(tmp_path: Path, fontname: str) -> None:
    """Hyphens and em dashes of a constructed page (sans and serif, 9 pt) are read as printed
    after scanning, and at least 5 of its 6 en dashes (measured: all 6 in both fonts; Tesseract
    alone reads most of them as hyphens or em dashes, and a Times en dash runs into the bar of
    the "4" after it)."""
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        writer = pymupdf.TextWriter(page.rect)  # an embedded font: the base-14 encoding has no dashes
        for i, line in enumerate(_DASH_LINES):
            writer.append((72, 100 + 16 * i), line, font=pymupdf.Font(fontname), fontsize=9.0)
        writer.write_text(page)
        assert page.get_text().split("\n")[:-1] == _DASH_LINES
        (tmp_path / "dashes.pdf").write_bytes(doc.tobytes())
    got = _ocr_lines(tmp_path, scanned_pdf(tmp_path / "dashes.pdf", dpi=SCAN_DPI))
    read, truth = "".join(_dashes(line) for line in got), "".join(_dashes(line) for line in _DASH_LINES)
    assert len(read) == len(truth), got
    pairs = list(zip(read, truth, strict=True))
    assert all(r == t for r, t in pairs if t != "\u2013"), got
    assert sum(r == t for r, t in pairs if t == "\u2013") >= 5, got


@pytest.mark.slow
def test_dashes_of_a_shared_page(tmp_path: Path) -> None:
    """Federal Register p1 (docket numbers, phone numbers, hyphenated words): the OCR'd words at
    the born-digital words with an en dash have it (>= 70%; measured 16 of 21, Tesseract alone
    about none), those with a hyphen keep it (all)."""
    _ocr_lines(tmp_path, scanned_pdf(FEDREG, [1], dpi=SCAN_DPI))
    with pymupdf.open(tmp_path / "ocr.pdf") as doc:
        words = doc[0].get_text("words")
    with pymupdf.open(FEDREG) as doc:
        truth = [w for w in doc[0].get_text("words") if set(w[4]) & DASHES]
    kept = {"-": [0, 0], "\u2013": [0, 0]}
    for x0, y0, x1, y1, text, *_ in truth:
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        near = [w[4] for w in words if w[0] - 2 <= cx <= w[2] + 2 and w[1] - 2 <= cy <= w[3] + 2]
        for kind, tally in kept.items():
            if kind in text:
                tally[1] += 1
                tally[0] += any(_dashes(w) == _dashes(text) for w in near)
    (en, n_en), (hy, n_hy) = kept["\u2013"], kept["-"]
    assert n_en >= 20 and n_hy >= 3, kept
    assert en >= 0.7 * n_en and hy == n_hy, kept


#: (base word, superscript) pairs of the constructed page: residue numbers and footnote marks
_SUPERSCRIPTED = [
    ("Tyr", "369"),
    ("Arg", "381"),
    ("His", "388"),
    ("Phe", "391"),
    ("Glu", "403"),
    ("Thr", "496"),
    ("Val", "518"),
    ("Douglas", "1,2"),
    ("Sharma", "3"),
    ("Chibale", "2,4"),
]


def _superscript_pdf(fontsize: float = 9.0) -> bytes:
    """A born-digital page of prose in which each word of ``_SUPERSCRIPTED`` carries its
    superscript (2/3 of the font size, raised by 1/3 of it), two per line."""
    font = pymupdf.Font("tiro")
    small, rise = fontsize * 2 / 3, fontsize / 3
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        writer = pymupdf.TextWriter(page.rect)
        for i in range(0, len(_SUPERSCRIPTED), 2):
            y = 100 + (i // 2) * fontsize * 1.8
            x = 72.0
            for j, (word, sup) in enumerate(_SUPERSCRIPTED[i : i + 2]):
                lead = "The residue " if j == 0 else " and then "
                for text, size, dy in ((lead + word, fontsize, 0.0), (sup, small, -rise)):
                    writer.append((x, y + dy), text, font=font, fontsize=size)
                    x += font.text_length(text, fontsize=size)
            writer.append((x, y), " were measured.", font=font, fontsize=fontsize)
        writer.write_text(page)
        return bytes(doc.tobytes())


@pytest.mark.slow
def test_scanned_superscripts_are_read(tmp_path: Path) -> None:
    """Superscript numbers and footnote marks of a constructed page (Times 9 pt, superscripts
    6 pt) scanned and OCR'd: at least 7 of the 10 read as printed after their word (measured: 7,
    and "1.2", "2.4" for "1,2", "2,4"; a lone mark read as one quote is left; Tesseract alone:
    none, all as symbols such as "Arg**!")."""
    (tmp_path / "sup.pdf").write_bytes(_superscript_pdf())
    text = _solid(" ".join(_ocr_lines(tmp_path, scanned_pdf(tmp_path / "sup.pdf", dpi=SCAN_DPI))))
    found = [word + sup for word, sup in _SUPERSCRIPTED if word + sup in text]
    assert len(found) >= 7, (found, text)
