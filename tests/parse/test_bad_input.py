"""Every way an input can be unusable gives a typed GroundedError naming the file and the cause,
from the library and from ``grounded parse`` (exit 1, one line, nothing written)."""

from __future__ import annotations

import unicodedata
import warnings

import pymupdf
import pytest

from grounded.cli.main import main as cli_main
from grounded.errors import (
    CorruptPDFError,
    EmptyDocumentError,
    EncryptedPDFError,
    GroundedError,
    InputError,
    InputNotFoundError,
    NotAPDFError,
    NoTextLayerError,
    PageTooLargeError,
)
from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.pdf_input import NoTextLayerWarning, inspect_pdf
from tests.support.data import shared
from tests.support.pdf_builders import add_scanned_page, raw_pdf, save_pdf


@pytest.fixture(scope="module")
def source_pdf():
    return shared("long", "cermine_web_example3_clinsci.pdf")


def _zero_page_pdf(path):
    """A syntactically valid PDF whose page tree is empty (PyMuPDF refuses to write one)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    path.write_bytes(raw_pdf(objects))
    return path


def _image_only_pdf(path, source, pages=(0,), text_pages=()):
    """Pages rendered to pixmaps and inserted as images (a scan: no text layer); ``text_pages``
    are copied as real text pages."""
    src = pymupdf.open(source)
    doc = pymupdf.open()
    for pno in sorted(set(pages) | set(text_pages)):
        if pno in text_pages:
            doc.insert_pdf(src, from_page=pno, to_page=pno)
            continue
        add_scanned_page(doc, src[pno], dpi=72)
    doc.save(path)
    return path


def _bad_files(tmp_path, source):
    """name -> (path, expected error class, words the message must contain)."""
    data = source.read_bytes()
    txt = tmp_path / "notes.pdf"
    txt.write_text("Dose: 5 mg/kg once daily\n")
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40)
    encrypted = tmp_path / "encrypted.pdf"
    save_pdf(pymupdf.open(source), encrypted, user_pw="secret", owner_pw="owner")
    huge = tmp_path / "huge.pdf"
    doc = pymupdf.open()
    doc.new_page(width=20000, height=600).insert_text((72, 72), "a very wide page")
    doc.save(huge)
    return {
        "missing": (tmp_path / "does-not-exist.pdf", InputNotFoundError, ["no such file"]),
        "directory": (tmp_path, InputNotFoundError, ["not a regular file"]),
        "text file": (txt, NotAPDFError, ["not a PDF", "text/plain"]),
        "empty file": (empty, NotAPDFError, ["0 bytes"]),
        "truncated": (truncated, CorruptPDFError, ["truncated"]),
        "garbage": (garbage, CorruptPDFError, ["damaged"]),
        "encrypted": (encrypted, EncryptedPDFError, ["password"]),
        "zero pages": (_zero_page_pdf(tmp_path / "zero.pdf"), EmptyDocumentError, ["0 pages"]),
        "image only": (_image_only_pdf(tmp_path / "scan.pdf", source), NoTextLayerError, ["text layer", "OCR"]),
        "huge page": (huge, PageTooLargeError, ["page 1", "20000", "14400"]),
    }


CASES = ["missing", "directory", "text file", "empty file", "truncated", "garbage", "encrypted", "zero pages",
         "image only", "huge page"]


@pytest.mark.parametrize("case", CASES)
def test_library_raises_typed_error_naming_file_and_cause(case, tmp_path, source_pdf):
    path, error, words = _bad_files(tmp_path, source_pdf)[case]
    with pytest.raises(error) as info:
        PyMuPDFParser(ocr="never").run(path)  # the refusals without OCR
    err = info.value
    assert isinstance(err, InputError) and isinstance(err, GroundedError)
    assert err.path == str(path) and str(path) in str(err)
    for word in words:
        assert word in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("case", CASES)
def test_cli_exits_1_with_one_line_and_writes_nothing(case, tmp_path, source_pdf, capsys):
    path, _, words = _bad_files(tmp_path, source_pdf)[case]
    out_dir = tmp_path / "out"
    code = cli_main(["parse", str(path), "-o", str(out_dir), "--ocr", "never", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("grounded parse: error: ") and str(path) in lines[0]
    assert "Traceback" not in captured.err
    for word in words:
        assert word in lines[0]
    assert not out_dir.exists() or not any(out_dir.iterdir())


def test_image_only_pages_are_fine_without_a_text_layer_requirement(tmp_path, source_pdf):
    scan = _image_only_pdf(tmp_path / "scan.pdf", source_pdf, pages=(0, 1))
    info = inspect_pdf(scan, require_text=False)
    assert info.page_count == 2 and info.text_pages == [] and info.image_only_pages == [1, 2]


def test_some_image_only_pages_warn_and_parse_the_rest(tmp_path, source_pdf):
    mixed = _image_only_pdf(tmp_path / "mixed.pdf", source_pdf, pages=(1,), text_pages=(0,))
    with pytest.warns(NoTextLayerWarning, match=r"1 of 2 page\(s\) have no text layer.*pages 2"):
        root = PyMuPDFParser(ocr="never").parse(mixed)
    texts = [n for n in root.walk() if n.content.strip() and n.type != T.ROOT]
    assert texts and all(b.page == 1 for n in texts for b in n.geom)


def test_rotated_and_cropped_pages_parse_into_the_displayed_page(tmp_path, source_pdf):
    src = pymupdf.open(source_pdf)
    doc = pymupdf.open()
    doc.insert_pdf(src, from_page=1, to_page=2)
    doc[0].set_rotation(180)
    doc[1].set_cropbox(pymupdf.Rect(40, 60, 560, 760))
    path = tmp_path / "rotated.pdf"
    doc.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # two pages of an article: their (odd/even) running headers repeat on no other page here,
        # so they are kept as text (#21.5), without a warning -- this test is about the page geometry
        root = PyMuPDFParser().parse(path)
    sizes = [(p["width"], p["height"]) for p in root.metadata["pages"]]
    assert sizes[0] == pytest.approx((595.28, 788.03), abs=0.01) and sizes[1] == pytest.approx((520, 700))
    check = pymupdf.open(path)
    checked = 0
    for n in root.walk():
        if n.type != T.PARAGRAPH or len(n.content) < 200 or "relabeled_from" in n.metadata:
            continue  # body paragraphs (a kept footer's lines read in the model's order, not MuPDF's)
        box = n.geom[0]
        page = check[box.page - 1]
        w, h = page.rect.width, page.rect.height
        rect = pymupdf.Rect(box.to_points(w, h)) * page.derotation_matrix  # displayed -> stored
        found = _letters(page.get_text("text", clip=rect))
        assert _letters(n.content)[:20] in found, (n.id, n.content[:40], found[:60])
        checked += 1
    assert checked >= 8


def _letters(text: str) -> str:
    """Letters and digits only (ligatures expanded), to compare text across extraction flags."""
    return "".join(c for c in unicodedata.normalize("NFKC", text) if c.isalnum())


def test_failed_file_in_a_batch_does_not_stop_the_others(tmp_path, source_pdf, capsys):
    bad = tmp_path / "bad.pdf"
    bad.write_text("not a pdf")
    good = shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")
    out_dir = tmp_path / "out"
    code = cli_main(["parse", str(bad), str(good), "-o", str(out_dir), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1
    assert sorted(p.name for p in out_dir.iterdir()) == ["2305.03393v1-pg9.json", "2305.03393v1-pg9.md"]
    err_lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert any(str(bad) in ln and "not a PDF" in ln for ln in err_lines)
    assert err_lines[-1].startswith("grounded parse: error: 1 of 2 file(s) failed")
    assert "2305.03393v1-pg9.json" in captured.out


def test_cli_parse_writes_both_files(tmp_path, capsys):
    pdf = shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")
    code = cli_main(["parse", str(pdf), "-o", str(tmp_path), "--keep", "PAGE_HEADER,page_footer", "--no-progress"])
    assert code == 0
    assert (tmp_path / "2305.03393v1-pg9.json").stat().st_size > 1000
    assert (tmp_path / "2305.03393v1-pg9.md").read_text().strip()
    assert "1 pages" in capsys.readouterr().out


def test_cli_rejects_unknown_keep_type(tmp_path, capsys):
    pdf = shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")
    code = cli_main(["parse", str(pdf), "-o", str(tmp_path), "--keep", "HEADERS"])
    assert code == 1 and "unknown element type 'HEADERS'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        cli_main(["parse", str(pdf), "--parser", "nope"])
    assert info.value.code == 2  # argparse usage error
