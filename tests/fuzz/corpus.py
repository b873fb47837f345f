"""Seeded generator of bad-input files (issue #14): 21 kinds, built with PyMuPDF from the shared PDFs.

Every generated :class:`Case` records its ``kind`` and the contract class it must meet:

* ``must_error``     -- only a typed error naming the file is acceptable (missing, not a PDF, ...),
* ``must_have_text`` -- the file carries text (``page.get_text()`` sees it): the result must hold it,
* ``text_or_error``  -- a typed error is acceptable, but a result must hold the text (damaged but
  repairable files, names the file system may refuse for the output),
* ``may_be_empty``   -- a typed error, a result with text, or an empty result whose empty pages
  each carry a reason (byte-flip mutants, scans, blank pages).

Generation is deterministic for a given seed: each kind draws from its own ``random.Random``
derived from ``(seed, kind)``, so changing how many cases one kind gets does not change the
others. :func:`build_corpus` writes into a caller-given folder (a ``tmp_path``), never into
``../shared``.
"""

from __future__ import annotations

import functools
import random
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from tests.support.data import SHARED_DATA
from tests.support.pdf_builders import (
    add_scanned_page,
    bitmap_page_pdf,
    noise_image_pdf,
    noise_images_pdf,
    raw_pdf,
)

__all__ = [
    "Case",
    "KINDS",
    "MUST_ERROR",
    "MUST_HAVE_TEXT",
    "TEXT_OR_ERROR",
    "MAY_BE_EMPTY",
    "SHARED_DATA",
    "TEST_COUNTS",
    "build_corpus",
    "full_counts",
    "shared_pdfs",
]


MUST_ERROR = "must_error"
MUST_HAVE_TEXT = "must_have_text"
TEXT_OR_ERROR = "text_or_error"
MAY_BE_EMPTY = "may_be_empty"

#: the 21 kinds of issue #14 and the image bombs of issue #21.8, in the order tables show them
KINDS = (
    "missing",
    "directory",
    "empty",
    "non_pdf",
    "truncated",
    "byte_flip",
    "encrypted_user",
    "encrypted_owner",
    "zero_pages",
    "image_only",
    "rotated",
    "huge_page",
    "tiny_page",
    "oversize_page",
    "long_text",
    "broken_xref",
    "active_content",
    "unicode",
    "type3",
    "odd_name",
    "thousand_pages",
    "image_bomb",
)

#: cases per kind for the CI subset (every kind, every variant that is cheap; ~50 files)
TEST_COUNTS: dict[str, int] = {
    "missing": 2,
    "directory": 2,
    "empty": 2,
    "non_pdf": 4,
    "truncated": 3,
    "byte_flip": 6,
    "encrypted_user": 2,
    "encrypted_owner": 1,
    "zero_pages": 6,
    "image_only": 3,
    "rotated": 5,
    "huge_page": 2,
    "tiny_page": 4,
    "oversize_page": 2,
    "long_text": 0,  # ~1 min per interface today: its own slow test
    "broken_xref": 3,
    "active_content": 2,
    "unicode": 3,
    "type3": 2,
    "odd_name": 4,
    "thousand_pages": 0,  # ~5 CPU-minutes per interface: benchmarks/fuzz_run.py only
    "image_bomb": 0,  # OCR of noise pages, ~20 CPU-s each: tests/parse/test_ocr_noise.py + benchmarks/fuzz_run.py
}

# clean body pages of the shared long PDFs (no references/furniture-heavy layout), 0-based
_BODY_PAGES = (
    ("long/cermine_web_example3_clinsci.pdf", 1),
    ("long/cermine_web_example3_clinsci.pdf", 2),
    ("long/cermine_test6_peerjcs118.pdf", 2),
    ("long/cermine_test6_peerjcs118.pdf", 7),
    ("long/cermine_test6_peerjcs118.pdf", 10),
)
_RTL_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
# a little slack below 255 bytes so "<stem>.pdf" itself is legal but derived names are long
_NAME_MAX = 255


@dataclass(frozen=True)
class Case:
    """One generated input. ``cli_relative``: the CLI gets the bare name (after ``--``) from its folder."""

    kind: str
    name: str
    path: Path
    expect: str
    note: str = ""
    cli_relative: bool = False
    source: str = ""  # the shared PDF a mutant/truncated file was made from


def full_counts(total: int) -> dict[str, int]:
    """Counts for the larger run: several variants of every kind, byte-flip mutants fill up to ``total``."""
    counts = {
        "missing": 3,
        "directory": 2,
        "empty": 3,
        "non_pdf": 8,
        "truncated": 12,
        "encrypted_user": 3,
        "encrypted_owner": 2,
        "zero_pages": 9,
        "image_only": 4,
        "rotated": 8,
        "huge_page": 3,
        "tiny_page": 8,
        "oversize_page": 3,
        "long_text": 2,
        "broken_xref": 6,
        "active_content": 4,
        "unicode": 4,
        "type3": 3,
        "odd_name": 5,
        "thousand_pages": 1,
        "image_bomb": 3,
    }
    others = sum(counts.values())
    if total <= others:  # a small run: shrink the others proportionally (>= 1 each), one mutant at least
        scale = (total - 1) / others
        counts = {k: max(1, round(v * scale)) for k, v in counts.items()}
        others = sum(counts.values())
    counts["byte_flip"] = max(1, total - others)
    return counts


# ---------------------------------------------------------------------------------------------
# sources
# ---------------------------------------------------------------------------------------------


def shared_pdfs() -> list[Path]:
    """The shared PDFs (long + pdfs/**), sorted; empty when ../shared/data is not there."""
    if not SHARED_DATA.exists():
        return []
    return sorted(SHARED_DATA.glob("long/*.pdf")) + sorted(SHARED_DATA.glob("pdfs/**/*.pdf"))


@functools.lru_cache(maxsize=1)
def _small_pdfs(limit: int = 120_000) -> list[Path]:
    """One-page shared PDFs of at most ``limit`` bytes (fast to parse: the mutants' sources)."""
    small = []
    for path in shared_pdfs():
        if path.stat().st_size > limit:
            continue
        with pymupdf.open(path) as doc:
            if doc.page_count == 1:
                small.append(path)
    return small


@functools.lru_cache(maxsize=1)
def _prose_pool() -> str:
    """Running text taken from the body pages of the shared PDFs (latin-1 safe, one space apart)."""
    parts = []
    for rel, pno in _BODY_PAGES:
        path = SHARED_DATA / rel
        if not path.exists():
            continue
        with pymupdf.open(path) as doc:
            parts.append(doc[pno].get_text())
    text = " ".join(parts) or "The patient received 5 mg/kg once daily for twelve weeks without adverse events. " * 40
    text = text.encode("latin-1", "ignore").decode("latin-1")
    text = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
    return re.sub(r"\s+", " ", text).strip()


def _prose(rng: random.Random, chars: int) -> str:
    pool = _prose_pool()
    while len(pool) < chars + 1:
        pool = pool + " " + pool
    start = rng.randrange(0, len(pool) - chars)
    return pool[start : start + chars].strip()


def _text_page(doc: pymupdf.Document, rng: random.Random, width: float = 612, height: float = 792,
               chars: int = 1800, fontsize: float = 10) -> pymupdf.Page:
    """A page of plain body text (a short paragraph set with Helvetica)."""
    page = doc.new_page(width=width, height=height)
    margin = min(width, height) * 0.1
    rect = pymupdf.Rect(margin, margin, width - margin, height - margin)
    text = _prose(rng, chars)
    while page.insert_textbox(rect, text, fontsize=fontsize, fontname="helv") < 0 and len(text) > 20:
        text = text[: int(len(text) * 0.8)]
    return page


def _text_doc(rng: random.Random, pages: int = 1, **kw: float) -> pymupdf.Document:
    doc = pymupdf.open()
    for _ in range(pages):
        _text_page(doc, rng, **kw)  # type: ignore[arg-type]
    return doc


def _body_page_doc(index: int) -> pymupdf.Document:
    """One clean body page of a shared PDF (falls back to a generated text page)."""
    rel, pno = _BODY_PAGES[index % len(_BODY_PAGES)]
    doc = pymupdf.open()
    path = SHARED_DATA / rel
    if path.exists():
        with pymupdf.open(path) as src:
            doc.insert_pdf(src, from_page=pno, to_page=pno)
    else:
        _text_page(doc, random.Random(index))
    return doc


def _save(doc: pymupdf.Document, path: Path, **kw: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    kw.setdefault("no_new_id", True)  # no random /ID: the same seed gives the same bytes
    doc.save(path, **kw)
    doc.close()
    return path


def _pages_of(path: Path) -> int | None:
    """Pages MuPDF can load, None when it cannot open the file or needs a password."""
    try:
        with pymupdf.open(path) as doc:
            if doc.needs_pass:
                return None
            loadable = 0
            for index in range(doc.page_count):
                try:
                    doc.load_page(index)
                except Exception:  # MuPDF's own errors: the page object is missing or broken
                    continue
                loadable += 1
            return loadable
    except Exception:  # MuPDF's own errors (FileDataError, RuntimeError, ...)
        return None


def _has_text(path: Path) -> bool:
    try:
        with pymupdf.open(path) as doc:
            return any(ch.isalnum() for page in doc for ch in page.get_text())
    except Exception:  # MuPDF's own errors
        return False


# ---------------------------------------------------------------------------------------------
# one generator per kind: (folder, rng, n) -> cases
# ---------------------------------------------------------------------------------------------

Generator = Callable[[Path, random.Random, int], list[Case]]


def _cycle(n: int, variants: list[Callable[[int], Case]]) -> list[Case]:
    return [variants[i % len(variants)](i) for i in range(n)]


def gen_missing(folder: Path, rng: random.Random, n: int) -> list[Case]:
    names = ["does-not-exist.pdf", "no such folder/report.pdf", "gone.PDF"]
    return [
        Case("missing", f"missing-{i}", folder / names[i % len(names)], MUST_ERROR, "path does not exist")
        for i in range(n)
    ]


def gen_directory(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def make(i: int) -> Case:
        path = folder / ("folder.pdf" if i % 2 == 0 else f"plain-folder-{i}")
        path.mkdir(parents=True, exist_ok=True)
        (path / "inside.pdf").write_bytes(b"%PDF-1.4\n")
        return Case("directory", f"directory-{i}", path, MUST_ERROR, "a folder, not a file")

    return [make(i) for i in range(n)]


def gen_empty(folder: Path, rng: random.Random, n: int) -> list[Case]:
    contents = [b"", b"\n", b"   \r\n\t"]

    def make(i: int) -> Case:
        path = folder / f"empty-{i}.pdf"
        path.write_bytes(contents[i % len(contents)])
        return Case("empty", path.stem, path, MUST_ERROR, f"{len(contents[i % len(contents)])} bytes")

    return [make(i) for i in range(n)]


def gen_non_pdf(folder: Path, rng: random.Random, n: int) -> list[Case]:
    sources = _small_pdfs() or shared_pdfs()

    def text(i: int) -> Case:
        path = folder / f"notes-{i}.pdf"
        path.write_text("Dose: 5 mg/kg once daily\nThis is a plain text file named .pdf\n")
        return Case("non_pdf", path.stem, path, MUST_ERROR, "text file")

    def png(i: int) -> Case:
        path = folder / (f"scan-{i}.pdf" if i % 2 else f"scan-{i}.png")
        doc = pymupdf.open(sources[rng.randrange(len(sources))]) if sources else _text_doc(rng)
        path.write_bytes(doc[0].get_pixmap(dpi=30).tobytes("png"))
        doc.close()
        return Case("non_pdf", path.stem, path, MUST_ERROR, "PNG image")

    def zipped(i: int) -> Case:
        path = folder / f"archive-{i}.pdf"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            if sources:
                src = sources[rng.randrange(len(sources))]
                zf.write(src, arcname=src.name)
            else:
                zf.writestr("a.pdf", _text_doc(rng).tobytes(no_new_id=True))
        return Case("non_pdf", path.stem, path, MUST_ERROR, "zip archive holding a PDF")

    def html(i: int) -> Case:
        path = folder / f"page-{i}.pdf"
        path.write_text("<!DOCTYPE html><html><body><p>%PDF-1.7 is mentioned late, not as a header"
                        + " " * 2000 + "</p></body></html>\n")
        return Case("non_pdf", path.stem, path, MUST_ERROR, "HTML file")

    return _cycle(n, [text, png, zipped, html])


def gen_truncated(folder: Path, rng: random.Random, n: int) -> list[Case]:
    sources = _small_pdfs() or shared_pdfs()
    fractions = (0.1, 0.5, 0.9)

    def make(i: int) -> Case:
        frac = fractions[i % len(fractions)]
        if sources:
            src = sources[rng.randrange(len(sources))]
            data, label = src.read_bytes(), src.stem
        else:
            data, label = _text_doc(rng).tobytes(no_new_id=True), "generated"
        path = folder / f"truncated-{i}-{int(frac * 100)}.pdf"
        path.write_bytes(data[: int(len(data) * frac)])
        return Case("truncated", path.stem, path, MUST_ERROR, f"{label} cut at {frac:.0%}")

    return [make(i) for i in range(n)]


def gen_byte_flip(folder: Path, rng: random.Random, n: int) -> list[Case]:
    sources = _small_pdfs() or shared_pdfs()

    def make(i: int) -> Case:
        if sources:
            src = sources[rng.randrange(len(sources))]
            data, label, origin = bytearray(src.read_bytes()), src.name, str(src)
        else:
            data, label, origin = bytearray(_text_doc(rng).tobytes(no_new_id=True)), "generated", ""
        flips = rng.choice((1, 1, 2, 4, 8, 16, 64))
        for _ in range(flips):
            pos = rng.randrange(len(data))
            data[pos] ^= rng.randrange(1, 256)
        path = folder / f"mutant-{i:03d}.pdf"
        path.write_bytes(bytes(data))
        return Case("byte_flip", path.stem, path, MAY_BE_EMPTY, f"{label} with {flips} byte(s) flipped", source=origin)

    return [make(i) for i in range(n)]


def gen_encrypted_user(folder: Path, rng: random.Random, n: int) -> list[Case]:
    methods = ((pymupdf.PDF_ENCRYPT_AES_256, "AES-256"), (pymupdf.PDF_ENCRYPT_RC4_128, "RC4-128"),
               (pymupdf.PDF_ENCRYPT_AES_128, "AES-128"))

    def make(i: int) -> Case:
        method, label = methods[i % len(methods)]
        path = _save(_text_doc(rng), folder / f"locked-{i}.pdf", encryption=method, user_pw="secret", owner_pw="owner")
        return Case("encrypted_user", path.stem, path, MUST_ERROR, f"user password ({label})")

    return [make(i) for i in range(n)]


def gen_encrypted_owner(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def make(i: int) -> Case:
        doc = _text_doc(rng) if i % 2 == 0 else _body_page_doc(i)
        path = _save(doc, folder / f"owner-only-{i}.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256,
                     owner_pw="owner", permissions=pymupdf.PDF_PERM_PRINT)
        return Case("encrypted_owner", path.stem, path, MUST_HAVE_TEXT, "owner password only (opens without one)")

    return [make(i) for i in range(n)]


def gen_zero_pages(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def objects(catalog: str, pages: str) -> list[bytes]:
        text = re.sub(r"[()\\]", " ", _prose(rng, 90))
        stream = f"BT /F1 11 Tf 72 720 Td ({text}) Tj ET".encode()
        return [
            catalog.encode(),
            pages.encode(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]

    catalog = "<< /Type /Catalog /Pages 2 0 R >>"
    variants = [
        ("empty page tree (/Kids [] /Count 0)", catalog, "<< /Type /Pages /Kids [] /Count 0 >>"),
        ("/Count 0 with a page in /Kids", catalog, "<< /Type /Pages /Kids [3 0 R] /Count 0 >>"),
        ("page tree without /Kids", catalog, "<< /Type /Pages /Count 1 >>"),
        ("catalog without /Pages", "<< /Type /Catalog >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        ("/Pages is null", "<< /Type /Catalog /Pages null >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        ("/Kids [] but /Count 3", catalog, "<< /Type /Pages /Kids [] /Count 3 >>"),
        ("page tree that contains itself", catalog, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"),
        ("/Kids holds a font, not a page", catalog, "<< /Type /Pages /Kids [5 0 R] /Count 1 >>"),
        ("/Kids is a number", catalog, "<< /Type /Pages /Kids 7 /Count 1 >>"),
    ]

    def make(i: int) -> Case:
        label, cat, pages = variants[i % len(variants)]
        path = folder / f"zero-pages-{i}.pdf"
        path.write_bytes(raw_pdf(objects(cat, pages)))
        count = _pages_of(path)
        # what MuPDF sees decides: no page at all -> only an error is right; a page with text -> text
        expect = MUST_ERROR if not count else TEXT_OR_ERROR if _has_text(path) else MAY_BE_EMPTY
        return Case("zero_pages", path.stem, path, expect, f"{label}; MuPDF sees {count} page(s)")

    return [make(i) for i in range(n)]


def gen_image_only(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def scan(i: int) -> Case:
        src = _body_page_doc(i)
        doc = pymupdf.open()
        add_scanned_page(doc, src[0], dpi=50)
        src.close()
        path = _save(doc, folder / f"scan-{i}.pdf")
        return Case("image_only", path.stem, path, MAY_BE_EMPTY, "one scanned page, no text layer")

    def blank(i: int) -> Case:
        doc = pymupdf.open()
        doc.new_page()
        doc.new_page(width=300, height=300)
        path = _save(doc, folder / f"blank-{i}.pdf")
        return Case("image_only", path.stem, path, MAY_BE_EMPTY, "two blank pages")

    def mixed(i: int) -> Case:
        doc = _text_doc(rng)
        src = _body_page_doc(i)
        add_scanned_page(doc, src[0], dpi=50)
        src.close()
        _text_page(doc, rng)
        path = _save(doc, folder / f"mixed-scan-{i}.pdf")
        return Case("image_only", path.stem, path, MUST_HAVE_TEXT, "text, scanned, text pages")

    return _cycle(n, [scan, mixed, blank])


def gen_rotated(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def real(angle: int) -> Callable[[int], Case]:
        def make(i: int) -> Case:
            doc = _body_page_doc(i)
            doc[0].set_rotation(angle)
            path = _save(doc, folder / f"rotated-{angle}-{i}.pdf")
            return Case("rotated", path.stem, path, MUST_HAVE_TEXT, f"shared body page with /Rotate {angle}")

        return make

    def short(angle: int, chars: int) -> Callable[[int], Case]:
        # a paragraph or two on an otherwise empty page: the layout model, seeing it sideways,
        # took such text for page headers/footers (issue #14 item 1)
        def make(i: int) -> Case:
            doc = pymupdf.open()
            page = doc.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 300), _prose(rng, chars), fontsize=11)
            page.set_rotation(angle)
            path = _save(doc, folder / f"rotated-short-{angle}-{i}.pdf")
            return Case("rotated", path.stem, path, MUST_HAVE_TEXT, f"{chars} characters with /Rotate {angle}")

        return make

    def mixed(i: int) -> Case:
        doc = pymupdf.open()
        for k, angle in enumerate((0, 90, 180, 270)):
            page = doc.new_page()
            page.insert_text((72, 72), f"{k + 1}. Section heading", fontsize=14)
            page.insert_textbox(pymupdf.Rect(72, 90, 540, 400), _prose(rng, 700), fontsize=11)
            page.set_rotation(angle)
        path = _save(doc, folder / f"rotated-mixed-{i}.pdf")
        return Case("rotated", path.stem, path, MUST_HAVE_TEXT, "4 pages (heading + 700 characters), /Rotate 0/90/180/270")

    def landscape(i: int) -> Case:
        doc = _text_doc(rng, width=792, height=612)
        doc[0].set_rotation(90)
        path = _save(doc, folder / f"rotated-landscape-{i}.pdf")
        return Case("rotated", path.stem, path, MUST_HAVE_TEXT, "landscape text page with /Rotate 90")

    return _cycle(n, [short(90, 600), real(90), short(270, 300), real(180), mixed, real(270), landscape, short(90, 300)])


def _scaled_page_doc(i: int, width: float, height: float) -> pymupdf.Document:
    """A shared body page drawn scaled onto a ``width`` x ``height`` page."""
    src = _body_page_doc(i)
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    page.show_pdf_page(page.rect, src, 0)
    src.close()
    return doc


def gen_huge_page(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def scaled(i: int) -> Case:
        path = _save(_scaled_page_doc(i, 14400 * 612 / 792, 14400), folder / f"huge-scaled-{i}.pdf")
        return Case("huge_page", path.stem, path, MUST_HAVE_TEXT, "shared page scaled to 14400 pt high")

    def square(i: int) -> Case:
        doc = pymupdf.open()
        page = doc.new_page(width=14400, height=14400)
        page.insert_textbox(pymupdf.Rect(720, 720, 13680, 13680), _prose(rng, 6000), fontsize=180)
        path = _save(doc, folder / f"huge-square-{i}.pdf")
        return Case("huge_page", path.stem, path, MUST_HAVE_TEXT, "14400 x 14400 pt, 180 pt text")

    def strip(i: int) -> Case:
        path = _save(_text_doc(rng, width=14400, height=600, chars=3000, fontsize=11), folder / f"huge-strip-{i}.pdf")
        return Case("huge_page", path.stem, path, MUST_HAVE_TEXT, "14400 x 600 pt strip, 11 pt text")

    return _cycle(n, [scaled, square, strip])


def gen_tiny_page(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def scaled(size: float) -> Callable[[int], Case]:
        def make(i: int) -> Case:
            path = _save(_scaled_page_doc(i, size * 612 / 792, size), folder / f"tiny-scaled-{size:g}-{i}.pdf")
            return Case("tiny_page", path.stem, path, MUST_HAVE_TEXT, f"shared page scaled to {size:g} pt high")

        return make

    def words(size: float) -> Callable[[int], Case]:
        def make(i: int) -> Case:
            doc = pymupdf.open()
            page = doc.new_page(width=size, height=size)
            text = _prose(rng, 200)
            fs = size / 8
            while page.insert_textbox(page.rect, text, fontsize=fs) < 0 and len(text) > 8:
                text = text[: len(text) * 3 // 4]
            path = _save(doc, folder / f"tiny-{size:g}pt-{i}.pdf")
            return Case("tiny_page", path.stem, path, MUST_HAVE_TEXT, f"{size:g} x {size:g} pt page, {fs:g} pt text")

        return make

    return _cycle(n, [words(10), scaled(36), words(36), scaled(10), words(20), scaled(72), words(50), scaled(144)])


def gen_oversize_page(folder: Path, rng: random.Random, n: int) -> list[Case]:
    sizes = ((14401, 800), (20000, 20000), (600, 30000))

    def make(i: int) -> Case:
        w, h = sizes[i % len(sizes)]
        path = _save(_text_doc(rng, width=w, height=h, chars=500, fontsize=12), folder / f"oversize-{w}x{h}-{i}.pdf")
        return Case("oversize_page", path.stem, path, MUST_ERROR, f"{w} x {h} pt, beyond 14400 pt")

    return [make(i) for i in range(n)]


def gen_long_text(folder: Path, rng: random.Random, n: int) -> list[Case]:
    layouts = ((595, 842, 2.4), (1224, 1584, 5.0))

    def make(i: int) -> Case:
        width, height, fs = layouts[i % len(layouts)]
        margin = 18
        per_line = int((width - 2 * margin) / (0.6 * fs))
        lines_fit = int((height - 2 * margin) / (fs * 1.15))
        text = _prose(rng, 100_500)
        lines = [text[k : k + per_line] for k in range(0, len(text), per_line)][:lines_fit]
        doc = pymupdf.open()
        page = doc.new_page(width=width, height=height)
        page.insert_text((margin, margin + fs), lines, fontsize=fs, fontname="cour", lineheight=1.15)
        chars = sum(len(line) for line in lines)
        path = _save(doc, folder / f"long-text-{i}.pdf", deflate=True)
        return Case("long_text", path.stem, path, MUST_HAVE_TEXT, f"{chars} characters on one {width}x{height} page")

    return [make(i) for i in range(n)]


def gen_broken_xref(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def base(i: int) -> bytes:
        doc = _text_doc(rng, pages=2) if i % 2 == 0 else _body_page_doc(i)
        data = doc.tobytes(garbage=0, deflate=False, use_objstms=0, no_new_id=True)
        doc.close()
        return data

    def scramble(data: bytes) -> tuple[bytes, str]:
        out = re.sub(rb"\d{10} 00000 n", lambda m: f"{rng.randrange(10**9):010d} 00000 n".encode(), data)
        return out, "every xref offset wrong"

    def bad_startxref(data: bytes) -> tuple[bytes, str]:
        return re.sub(rb"startxref\s+\d+", b"startxref\n99999999", data), "startxref beyond the end"

    def no_xref(data: bytes) -> tuple[bytes, str]:
        start = data.rfind(b"\nxref")
        end = data.rfind(b"startxref")
        return data[:start] + b"\n" + data[end:], "xref table and trailer removed"

    def shifted(data: bytes) -> tuple[bytes, str]:
        cut = data.find(b"2 0 obj")
        return data[:cut] + b"% inserted junk that shifts every offset\n" * 7 + data[cut:], "offsets shifted by junk"

    edits = [scramble, bad_startxref, no_xref, shifted]

    def make(i: int) -> Case:
        data, label = edits[i % len(edits)](base(i))
        path = folder / f"broken-xref-{i}.pdf"
        path.write_bytes(data)
        expect = TEXT_OR_ERROR if _has_text(path) else MAY_BE_EMPTY
        return Case("broken_xref", path.stem, path, expect, label)

    return [make(i) for i in range(n)]


def gen_active_content(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def make(i: int) -> Case:
        doc = _text_doc(rng, pages=2) if i % 2 == 0 else _body_page_doc(i)
        catalog = doc.pdf_catalog()
        js = doc.get_new_xref()
        doc.update_object(js, "<< /S /JavaScript /JS (app.alert\\('hello'\\); this.print\\(\\);) >>")
        doc.xref_set_key(catalog, "OpenAction", f"{js} 0 R")
        doc.xref_set_key(doc[0].xref, "AA", f"<< /O {js} 0 R >>")
        doc.embfile_add("payload.txt", b"embedded file content that is not page text\n" * 20, filename="payload.txt")
        doc[0].add_file_annot(pymupdf.Point(20, 20), b"attached bytes", "attached.bin")
        path = _save(doc, folder / f"active-{i}.pdf")
        return Case("active_content", path.stem, path, MUST_HAVE_TEXT, "OpenAction JavaScript, page /AA, embedded + attached files")

    return [make(i) for i in range(n)]


_CJK = "临床指南推荐每日一次口服五毫克。患者在十二周内未出现不良反应。数据来源于多中心随机对照试验。"
_JAPANESE = "臨床試験の結果、有害事象は認められなかった。ひらがなとカタカナも含む。"
_HEBREW = "המטופל קיבל חמישה מיליגרם פעם ביום במשך שנים עשר שבועות."
_ARABIC = "تلقى المريض خمسة ملليغرامات مرة واحدة يوميا لمدة اثني عشر أسبوعا."
_LATIN = "Ærztliche Übersicht: naïve café, Œuvre, ß, ø, ğ, ş — “quotes” … 5 µg/kg ± 0.5"


def gen_unicode(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def cjk(i: int) -> Case:
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 400), (_CJK * 3) + "\n" + _JAPANESE * 2, fontname="china-s", fontsize=12)
        page.insert_textbox(pymupdf.Rect(72, 420, 540, 720), _prose(rng, 800), fontsize=10)
        path = _save(doc, folder / f"unicode-cjk-{i}.pdf")
        return Case("unicode", path.stem, path, MUST_HAVE_TEXT, "CJK (china-s) + Latin")

    def rtl(i: int) -> Case:
        doc = pymupdf.open()
        page = doc.new_page()
        if _RTL_FONT.exists():
            page.insert_font(fontname="dejavu", fontfile=str(_RTL_FONT))
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 400), (_HEBREW + "\n" + _ARABIC + "\n") * 3, fontname="dejavu", fontsize=12)
            note = "Hebrew + Arabic (DejaVu Sans) + Latin"
        else:  # no RTL-capable font on this machine: CJK stands in
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 400), _CJK * 3, fontname="china-s", fontsize=12)
            note = "no RTL font available here (DejaVu Sans missing): CJK + Latin"
        page.insert_textbox(pymupdf.Rect(72, 420, 540, 720), _prose(rng, 800), fontsize=10)
        path = _save(doc, folder / f"unicode-rtl-{i}.pdf")
        return Case("unicode", path.stem, path, MUST_HAVE_TEXT, note)

    def accents(i: int) -> Case:
        doc = pymupdf.open()
        page = doc.new_page()
        if _RTL_FONT.exists():  # DejaVu Sans has no CJK glyphs: Latin, Greek, Cyrillic, symbols
            page.insert_font(fontname="dejavu", fontfile=str(_RTL_FONT))
            font, text = "dejavu", _LATIN + " αβγ δ-Lactam, Ωmega, Щука, ∑ ≤ ≥ √ ∞ ‰ ℃"
        else:  # Droid Sans Fallback (china-s) covers Latin-1 and CJK
            font, text = "china-s", _LATIN + " " + _CJK[:20]
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 720), (text + "\n") * 8, fontname=font, fontsize=11)
        path = _save(doc, folder / f"unicode-mixed-{i}.pdf")
        return Case("unicode", path.stem, path, MUST_HAVE_TEXT, f"accents, Greek, Cyrillic, math symbols ({font})")

    return _cycle(n, [cjk, rtl, accents])


def _type3_doc(rng: random.Random, tounicode: bool, glyph_names: bool) -> pymupdf.Document:
    """A page set in a hand-built Type3 font (each glyph a filled shape), PyMuPDF low-level API."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    doc = pymupdf.open()
    page = doc.new_page()
    procs = {}
    for k, ch in enumerate(letters):
        xref = doc.get_new_xref()
        doc.update_object(xref, "<<>>")
        w = 300 + 15 * (k % 10)
        doc.update_stream(xref, f"600 0 0 0 {w + 100} 700 d1 50 0 {w} {300 + 15 * k} re f".encode())
        procs[ch] = xref
    space = doc.get_new_xref()
    doc.update_object(space, "<<>>")
    doc.update_stream(space, b"300 0 0 0 0 0 d1")
    names = {ch: (ch if glyph_names else f"g{k}") for k, ch in enumerate(letters)}
    charprocs = " ".join(f"/{names[ch]} {x} 0 R" for ch, x in procs.items()) + f" /space {space} 0 R"
    differences = "32 /space 97 " + " ".join(f"/{names[ch]}" for ch in letters)
    widths = " ".join(["300"] + ["0"] * 64 + ["600"] * 26)
    font = doc.get_new_xref()
    font_dict = (
        f"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [0.001 0 0 0.001 0 0] "
        f"/CharProcs << {charprocs} >> /Encoding << /Type /Encoding /Differences [{differences}] >> "
        f"/FirstChar 32 /LastChar 122 /Widths [{widths}] /Resources << >>"
    )
    if tounicode:
        cmap_xref = doc.get_new_xref()
        doc.update_object(cmap_xref, "<<>>")
        entries = "\n".join(f"<{ord(ch):02X}> <{ord(ch):04X}>" for ch in " " + letters)
        cmap = (
            "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T3 def "
            "1 begincodespacerange <00> <FF> endcodespacerange "
            f"{len(letters) + 1} beginbfchar\n{entries}\nendbfchar endcmap "
            "CMapName currentdict /CMap defineresource pop end end"
        )
        doc.update_stream(cmap_xref, cmap.encode())
        font_dict += f" /ToUnicode {cmap_xref} 0 R"
    doc.update_object(font, font_dict + " >>")
    words = re.sub(r"[^a-z ]+", " ", _prose(rng, 1500).lower())
    words = re.sub(r" +", " ", words).strip()
    lines = [words[k : k + 60] for k in range(0, len(words), 60)][:40]
    content = "BT /T3 11 Tf 14 TL 60 740 Td " + " ".join(f"({line}) Tj T*" for line in lines) + " ET"
    contents = doc.get_new_xref()
    doc.update_object(contents, "<<>>")
    doc.update_stream(contents, content.encode())
    doc.xref_set_key(page.xref, "Resources", f"<< /Font << /T3 {font} 0 R >> >>")
    doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
    return doc


def gen_type3(folder: Path, rng: random.Random, n: int) -> list[Case]:
    variants = ((True, True, "Type3 font with /ToUnicode"), (False, True, "Type3 font, glyph names only"),
                (False, False, "Type3 font, meaningless glyph names, no /ToUnicode"))

    def make(i: int) -> Case:
        tounicode, names, label = variants[i % len(variants)]
        path = _save(_type3_doc(rng, tounicode, names), folder / f"type3-{i}.pdf")
        expect = MUST_HAVE_TEXT if _has_text(path) else MAY_BE_EMPTY
        return Case("type3", path.stem, path, expect, label)

    return [make(i) for i in range(n)]


def gen_odd_name(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def long_stem() -> str:
        stem, k = "", 0
        while len((stem + "ü").encode()) + len(".pdf") <= _NAME_MAX:
            stem += "ü" if k % 3 == 0 else "long-name-"[k % 10]
            k += 1
        return stem

    names = [
        ("report final (copy 2).pdf", MUST_HAVE_TEXT, False, "spaces and parentheses"),
        ("résumé-临床-עברית-😀.pdf", MUST_HAVE_TEXT, False, "non-ASCII letters and an emoji"),
        (long_stem() + ".pdf", TEXT_OR_ERROR, False, "name of 255 bytes (outputs would be longer)"),
        ("-o.pdf", MUST_HAVE_TEXT, True, "leading dash (given after --)"),
        ("--help.pdf", MUST_HAVE_TEXT, True, "leading double dash (given after --)"),
        ("paper.PDF.pdf", MUST_HAVE_TEXT, False, "double extension"),
    ]

    def make(i: int) -> Case:
        filename, expect, relative, label = names[i % len(names)]
        sub = folder / f"odd-{i}"
        path = _save(_text_doc(rng), sub / filename)
        return Case("odd_name", f"odd-name-{i}", path, expect, label, cli_relative=relative)

    return [make(i) for i in range(n)]


def gen_thousand_pages(folder: Path, rng: random.Random, n: int) -> list[Case]:
    def make(i: int) -> Case:
        doc = pymupdf.open()
        text = _prose(rng, 20_000)
        for k in range(1000):
            page = doc.new_page(width=200, height=150)
            start = (k * 37) % (len(text) - 80)
            page.insert_text((12, 30), f"Page {k + 1}.", fontsize=9)
            page.insert_text((12, 50), text[start : start + 40], fontsize=7)
        path = _save(doc, folder / f"thousand-pages-{i}.pdf", garbage=1, deflate=True)
        return Case("thousand_pages", path.stem, path, MUST_HAVE_TEXT, "1000 pages of 200 x 150 pt, two short lines each")

    return [make(i) for i in range(n)]


def gen_image_bomb(folder: Path, rng: random.Random, n: int) -> list[Case]:
    """Issue #21.8: pages that make OCR slow and read garbage -- 1000 small noise images, one huge
    noise image, a huge 1-bit scan -- each under two lines of scanned text (no text layer)."""
    lines = [f"Bomb page {rng.randrange(1000)} keeps its lines", "Noise never becomes a table"]

    def many(i: int) -> Case:
        path = noise_images_pdf(folder / f"noise-images-{i}.pdf", 1000, seed=rng.randrange(2**31), lines=lines)
        return Case("image_bomb", path.stem, path, MAY_BE_EMPTY, "1000 noise images under 2 scanned lines")

    def huge(i: int) -> Case:
        path = noise_image_pdf(folder / f"noise-image-{i}.pdf", 4000, seed=rng.randrange(2**31), lines=lines)
        return Case("image_bomb", path.stem, path, MAY_BE_EMPTY, "one 4000 x 4000 noise image under 2 scanned lines")

    def bilevel(i: int) -> Case:
        path = bitmap_page_pdf(folder / f"bilevel-{i}.pdf", 5000, lines)
        return Case("image_bomb", path.stem, path, MAY_BE_EMPTY, "a 5000 x 5000 1-bit scan of 2 lines")

    return _cycle(n, [many, huge, bilevel])


GENERATORS: dict[str, Generator] = {kind: globals()[f"gen_{kind}"] for kind in KINDS}


def build_corpus(folder: str | Path, seed: int = 0, counts: Mapping[str, int] | None = None,
                 kinds: Iterable[str] | None = None) -> list[Case]:
    """Generate the cases into ``folder`` (one sub-folder per kind); deterministic for ``seed``."""
    folder = Path(folder)
    counts = dict(TEST_COUNTS if counts is None else counts)
    wanted = list(KINDS if kinds is None else kinds)
    unknown = set(wanted) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown kinds: {sorted(unknown)}")
    cases: list[Case] = []
    for index, kind in enumerate(KINDS):
        n = counts.get(kind, 0)
        if kind not in wanted or n <= 0:
            continue
        sub = folder / kind
        sub.mkdir(parents=True, exist_ok=True)
        rng = random.Random(seed * 7919 + index)
        cases.extend(GENERATORS[kind](sub, rng, n))
    return cases
