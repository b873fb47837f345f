"""Issue #14 items 1-3: no silent empty results, no damaged input passed off as good.

Every PDF here is built with PyMuPDF in ``tmp_path`` (plus one shared page, rotated): rotated
pages (90/180/270, mixed, sideways content), tiny and huge pages, a long page, active content,
damaged content streams and broken page trees. The contract: the text MuPDF reads from a page is
in the result (and on rotated pages the boxes sit on that text), an empty page says why in
``root.metadata["pages"]``, a damaged page is flagged with MuPDF's messages, and what cannot be
read is a typed error naming the file.
"""

from __future__ import annotations

import unicodedata
import warnings
import zlib
from collections import Counter
from pathlib import Path

import pymupdf
import pytest

from grounded.cli.main import main as cli_main
from grounded.errors import CorruptPDFError, EmptyDocumentError
from grounded.model import TEXT_TYPES, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import postprocess
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.pdf_input import NoTextLayerWarning, PDFDamageWarning, inspect_pdf
from tests.support.data import shared
from tests.support.pdf_builders import raw_pdf

HEADING = "Dosing of the adjuvant therapy"
LINES = [f"Line {i}: patients received {i + 2} mg/kg once daily for twelve weeks." for i in range(12)]


@pytest.fixture(scope="module")
def parser() -> PyMuPDFParser:
    return PyMuPDFParser()


def _text_page(doc: pymupdf.Document, width: float = 595, height: float = 842, rotation: int = 0,
               scale: float = 1.0, heading: str = HEADING) -> pymupdf.Page:
    """A heading and body lines set upright in the page's own (unrotated) space."""
    page = doc.new_page(width=width, height=height)
    x, y = 60 * scale, 60 * scale
    page.insert_text((x, y), heading, fontsize=16 * scale, fontname="hebo")
    y += 30 * scale
    for line in LINES:
        page.insert_text((x, y), line, fontsize=10 * scale)
        y += 14 * scale
    if rotation:
        page.set_rotation(rotation)
    return page


def _save(doc: pymupdf.Document, path: Path) -> Path:
    doc.save(path)
    doc.close()
    return path


def _solid(text: str) -> Counter[str]:
    return Counter(c for c in unicodedata.normalize("NFKC", text) if not c.isspace())


def _result_text(root: ParsingResult, page: int | None = None) -> str:
    parts = []
    for n in root.walk():
        if n.type in TEXT_TYPES and n.content and (page is None or (n.geom and n.geom[0].page == page)):
            parts.append(n.content)
    return " ".join(parts)


def _coverage(root: ParsingResult, path: Path, page: int | None = None) -> float:
    """Share of the non-space characters of PyMuPDF's ``page.get_text()`` found in the result."""
    with pymupdf.open(path) as doc:
        pages = [doc[page - 1]] if page else list(doc)
        ref = sum((_solid(p.get_text()) for p in pages), Counter())
    got = _solid(_result_text(root, page))
    return sum(min(n, got[c]) for c, n in ref.items()) / max(1, sum(ref.values()))


def _words_on_boxes(root: ParsingResult, path: Path, page: int = 1, tol: float = 2.0) -> float:
    """Share of PyMuPDF's words of the *displayed* page that lie in the box of a result element
    whose content contains the word (boxes on the right text)."""
    with pymupdf.open(path) as doc:
        p = doc[page - 1]
        m = p.rotation_matrix
        w, h = p.rect.width, p.rect.height
        words = [((pymupdf.Rect(wd[:4]) * m).normalize(), wd[4]) for wd in p.get_text("words")]
    elements = []
    for n in root.walk():
        if n.type in TEXT_TYPES and n.content:
            for b in n.geom:
                if b.page == page:
                    x0, y0, x1, y1 = b.to_points(w, h)
                    elements.append((pymupdf.Rect(x0 - tol, y0 - tol, x1 + tol, y1 + tol), _solid(n.content)))
    hits = 0
    for rect, word in words:
        letters = _solid(word)
        # MuPDF's word boxes span the font's whole ascender-descender height, element boxes are
        # tight to the glyphs: the word's centre must be inside and most of the word covered
        centre = pymupdf.Point((rect.x0 + rect.x1) / 2, (rect.y0 + rect.y1) / 2)
        if any(
            box.contains(centre) and abs(box & rect) >= 0.6 * abs(rect) and not (letters - content)
            for box, content in elements
        ):
            hits += 1
    return hits / max(1, len(words))


def _quiet_parse(parser: PyMuPDFParser, path: Path) -> ParsingResult:
    with warnings.catch_warnings():
        # no damage / furniture warning on clean generated files (one page of an article keeps its
        # running header as text, #21.5, without a warning: an ordinary PDF asks nothing of the user)
        warnings.simplefilter("error")
        return parser.parse(path)


# ---------------------------------------------------------------------------------------------
# 1. rotated pages are laid out upright, boxes land on the displayed page's text
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotated_page_keeps_its_text_and_boxes(parser, tmp_path, rotation):
    doc = pymupdf.open()
    _text_page(doc, rotation=rotation)
    path = _save(doc, tmp_path / f"rot{rotation}.pdf")
    root = _quiet_parse(parser, path)
    assert _coverage(root, path) >= 0.95
    assert _words_on_boxes(root, path) >= 0.95
    page = root.metadata["pages"][0]
    assert page["status"] == "ok" and page["layout_turn"] == (360 - rotation) % 360
    assert (page["width"], page["height"]) == ((842, 595) if rotation % 180 else (595, 842))
    headers = [n for n in root.walk() if n.type == T.SECTION_HEADER]
    assert [n.content for n in headers] == [HEADING]  # not dropped as page furniture
    for n in root.walk():
        for b in n.geom:
            assert 0 <= b.left < b.right <= 1 and 0 <= b.top < b.bottom <= 1


def test_mixed_rotation_file_keeps_every_page(parser, tmp_path):
    doc = pymupdf.open()
    for k, rotation in enumerate((0, 90, 0, 270, 180)):
        _text_page(doc, rotation=rotation, heading=f"Section {k + 1}: dosing")
    path = _save(doc, tmp_path / "mixed.pdf")
    root = _quiet_parse(parser, path)
    for page in range(1, 6):
        assert _coverage(root, path, page) >= 0.95, page
        assert _words_on_boxes(root, path, page) >= 0.95, page
        assert root.metadata["pages"][page - 1]["status"] == "ok"
    assert [n.content for n in root.walk() if n.type == T.SECTION_HEADER] == [f"Section {k}: dosing" for k in range(1, 6)]


def test_sideways_content_without_rotate_is_laid_out_upright(parser, tmp_path):
    """A landscape table set sideways on a portrait page (no /Rotate): text runs bottom-up."""
    doc = pymupdf.open()
    page = doc.new_page()
    text = "\n".join([HEADING, *LINES])
    assert page.insert_textbox(pymupdf.Rect(60, 60, 400, 780), text, fontsize=10, rotate=90) >= 0
    path = _save(doc, tmp_path / "sideways.pdf")
    root = _quiet_parse(parser, path)
    assert root.metadata["pages"][0]["layout_turn"] == 90
    assert _coverage(root, path) >= 0.95
    assert _words_on_boxes(root, path) >= 0.95


@pytest.mark.parametrize("rotation", [90, 270])
def test_shared_page_rotated_parses_like_the_upright_page(parser, tmp_path, rotation):
    src = pymupdf.open(shared("long", "cermine_test6_peerjcs118.pdf"))
    upright, turned = pymupdf.open(), pymupdf.open()
    upright.insert_pdf(src, from_page=1, to_page=1)
    turned.insert_pdf(src, from_page=1, to_page=1)
    turned[0].set_rotation(rotation)
    a = _quiet_parse(parser, _save(upright, tmp_path / "upright.pdf"))
    path = _save(turned, tmp_path / "turned.pdf")
    b = _quiet_parse(parser, path)
    assert _coverage(b, path) >= 0.95
    assert _words_on_boxes(b, path) >= 0.95
    # the same reading: the same paragraphs, in the same order
    paragraphs = [n.content for n in a.walk() if n.type == T.PARAGRAPH]
    assert [n.content for n in b.walk() if n.type == T.PARAGRAPH] == paragraphs and len(paragraphs) >= 3


# ---------------------------------------------------------------------------------------------
# 2. tiny, huge and long pages, active content
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", [10, 20, 50, 100])
def test_tiny_page_text_is_extracted(parser, tmp_path, side):
    doc = pymupdf.open()
    _text_page(doc, width=side, height=side * 1.4, scale=side / 595)
    path = _save(doc, tmp_path / f"tiny{side}.pdf")
    root = _quiet_parse(parser, path)
    assert _coverage(root, path) >= 0.95
    assert root.metadata["pages"][0]["layout_scale"] > 1


@pytest.mark.parametrize(
    ("width", "height", "scale"), [(14400, 14400, 1.0), (14400, 14400, 20.0), (14400, 600, 1.0)]
)
def test_huge_page_text_is_extracted(parser, tmp_path, width, height, scale):
    doc = pymupdf.open()
    _text_page(doc, width=width, height=height, scale=scale)
    path = _save(doc, tmp_path / "huge.pdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = parser.parse(path)
    assert _coverage(root, path) >= 0.95
    assert _words_on_boxes(root, path) >= 0.95


def _long_page(path: Path, chars: int) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    body = " ".join(LINES)
    text = (body * (chars // len(body) + 1))[:chars]
    fontsize = 6.0
    while page.insert_textbox(pymupdf.Rect(10, 10, 585, 832), text, fontsize=fontsize) < 0:
        fontsize *= 0.9
    return _save(doc, path)


def test_page_with_many_characters_is_extracted(parser, tmp_path):
    path = _long_page(tmp_path / "long.pdf", 20_000)
    root = _quiet_parse(parser, path)
    assert _coverage(root, path) >= 0.95


@pytest.mark.slow
def test_page_with_100k_characters_is_extracted(parser, tmp_path):
    path = _long_page(tmp_path / "long100k.pdf", 100_000)
    root = _quiet_parse(parser, path)
    assert _coverage(root, path) >= 0.95


def test_active_content_does_not_hide_text(parser, tmp_path):
    doc = pymupdf.open()
    page = _text_page(doc)
    doc.embfile_add("payload.txt", b"embedded file")
    doc.xref_set_key(doc.pdf_catalog(), "OpenAction", "<< /S /JavaScript /JS (app.alert\\('x'\\);) >>")
    page.insert_link({"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(60, 40, 200, 64), "uri": "javascript:alert(1)"})
    path = _save(doc, tmp_path / "active.pdf")
    root = _quiet_parse(parser, path)
    assert _coverage(root, path) >= 0.95


# ---------------------------------------------------------------------------------------------
# 3. emptiness after filtering, per-page status, the furniture filter never eats a page
# ---------------------------------------------------------------------------------------------


def test_empty_after_filtering_is_a_typed_error(tmp_path):
    doc = pymupdf.open()
    _text_page(doc)
    path = _save(doc, tmp_path / "all-dropped.pdf")
    text_types = {t for t in TEXT_TYPES} | {T.LIST, T.TABLE}
    with pytest.raises(EmptyDocumentError) as info:
        PyMuPDFParser(drop_types=text_types).parse(path)
    assert str(path) in str(info.value) and "no text left" in str(info.value)


def test_pages_without_text_say_why(parser, tmp_path):
    doc = pymupdf.open()
    _text_page(doc)
    doc.new_page()  # blank
    path = _save(doc, tmp_path / "blank-second.pdf")
    with pytest.warns(NoTextLayerWarning, match="pages 2"):
        root = parser.parse(path)
    first, second = root.metadata["pages"]
    assert first["status"] == "ok" and first["chars"] > 500 and first["warnings"] == []
    assert second["status"] == "no_text_layer" and "no text layer" in second["reason"] and second["chars"] == 0


def _furniture_tree(furniture_chars: int, body_chars: int, pages: int = 1) -> ParsingResult:
    """``pages`` pages, each with a header of ``furniture_chars`` and a body of ``body_chars`` on
    page 1 (later pages: a 500-character body): with pages > 1 the header is a running header."""
    from grounded.model import ParsingBoundingBox

    root = ParsingResult("root", T.ROOT)
    for page in range(1, pages + 1):
        box = ParsingBoundingBox(page, 0.1, 0.02, 0.9, 0.06)
        root.add_child(ParsingResult("", T.PAGE_HEADER, content="x" * furniture_chars, geom=[box],
                                     metadata={"native_label": "page-header"}))
        chars = body_chars if page == 1 else 500
        if chars:
            body = ParsingBoundingBox(page, 0.1, 0.1, 0.9, 0.9)
            root.add_child(ParsingResult("", T.PARAGRAPH, content="y" * chars, geom=[body]))
    return root


def test_furniture_that_is_the_page_body_is_kept_and_reported():
    root = _furniture_tree(600, 0)
    with pytest.warns(postprocess.FurnitureKeptWarning, match=r"page\(s\) \[1\]"):
        kept = postprocess.keep_body_furniture(root, {T.PAGE_HEADER, T.PAGE_FOOTER}, "doc.pdf")
    assert kept == {1: 600}
    node = root.children[0]
    assert node.type == T.PARAGRAPH and node.metadata == {"native_label": "page-header", "relabeled_from": "PAGE_HEADER"}


@pytest.mark.parametrize(("furniture", "body"), [(80, 0), (150, 2000), (600, 3000)])
def test_real_running_headers_are_still_dropped(furniture, body):
    root = _furniture_tree(furniture, body, pages=2)  # the header repeats on page 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert postprocess.keep_body_furniture(root, {T.PAGE_HEADER, T.PAGE_FOOTER}) == {}
    assert root.children[0].type == T.PAGE_HEADER


def test_page_the_layout_model_finds_no_text_on_falls_back_to_text_blocks(parser, tmp_path):
    """A 14400 pt page with 11 pt text in one corner: scaled for the model the text is too small
    to see; the text layer's blocks carry it."""
    doc = pymupdf.open()
    page = doc.new_page(width=14400, height=14400)
    page.insert_textbox(pymupdf.Rect(72, 72, 2000, 2000), " ".join(LINES), fontsize=11)
    path = _save(doc, tmp_path / "corner.pdf")
    root = parser.parse(path)
    assert _coverage(root, path) >= 0.95
    assert _words_on_boxes(root, path) >= 0.95


# ---------------------------------------------------------------------------------------------
# 4. MuPDF's warnings: damaged pages are flagged, a wholly damaged file is an error
# ---------------------------------------------------------------------------------------------


def _raw_pdf(streams: list[bytes], filters: list[str | None]) -> bytes:
    """A PDF with one page per content stream (Helvetica), correct xref."""
    n = len(streams)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    font = 3 + 2 * n
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode()]
    for i, (stream, flt) in enumerate(zip(streams, filters, strict=True)):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        extra = f" /Filter /{flt}" if flt else ""
        objects.append(f"<< /Length {len(stream)}{extra} >>\nstream\n".encode() + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return raw_pdf(objects)


def _content(lines: list[str]) -> bytes:
    ops = ["BT /F1 11 Tf 14 TL 72 740 Td"] + [f"({line}) Tj T*" for line in lines] + ["ET"]
    return "\n".join(ops).encode()


def _flipped(data: bytes, at: float = 0.5) -> bytes:
    out = bytearray(data)
    out[int(len(out) * at)] ^= 0x5A
    return bytes(out)


GOOD = _content(LINES)
DAMAGED = {
    "zlib": (_flipped(zlib.compress(GOOD)), "FlateDecode"),
    "syntax": (GOOD[: len(GOOD) // 2] + b" ] >> ) 1 2 3 Qx ]] BT ET " * 60 + GOOD[len(GOOD) // 2 :], None),
}


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_damaged_page_is_flagged_with_mupdf_warnings(parser, tmp_path, kind, capfd):
    stream, flt = DAMAGED[kind]
    path = tmp_path / f"damaged-{kind}.pdf"
    path.write_bytes(_raw_pdf([zlib.compress(GOOD), stream], ["FlateDecode", flt]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        root = parser.parse(path)
    damage = [w for w in caught if issubclass(w.category, PDFDamageWarning)]
    assert len(damage) == 1 and "1 of 2 page(s) may be incomplete (pages 2" in str(damage[0].message)
    first, second = root.metadata["pages"]
    assert first["status"] == "ok" and first["warnings"] == []
    assert second["status"] == "damaged" and second["warnings"] and "MuPDF" in second["reason"]
    assert all(isinstance(m, str) for m in second["warnings"])
    assert _coverage(root, path, 1) >= 0.95
    assert "error" not in capfd.readouterr().err.lower()  # MuPDF's messages are in the result, not on stderr


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_every_page_damaged_is_corrupt(tmp_path, kind):
    stream, flt = DAMAGED[kind]
    path = tmp_path / f"all-damaged-{kind}.pdf"
    path.write_bytes(_raw_pdf([stream], [flt]))
    with pytest.raises(CorruptPDFError) as info:
        PyMuPDFParser().parse(path)
    assert str(path) in str(info.value) and "every page" in str(info.value)


def test_clean_files_have_no_damage(tmp_path):
    path = tmp_path / "clean.pdf"
    path.write_bytes(_raw_pdf([zlib.compress(GOOD), GOOD], ["FlateDecode", None]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        info = inspect_pdf(path, require_text=True)
    assert info.damaged_pages == [] and info.page_warnings == {} and not info.repaired


def test_shared_pdf_pages_are_not_flagged():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PDFDamageWarning)
        info = inspect_pdf(shared("long", "cermine_web_example3_clinsci.pdf"), require_text=True)
    assert info.damaged_pages == [] and len(info.page_chars) == info.page_count == 13


# ---------------------------------------------------------------------------------------------
# 5. page trees MuPDF cannot count: typed errors, from the API and the CLI
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", ["-1", "1000000000"])
def test_uncountable_page_tree_is_corrupt(tmp_path, count, capsys):
    data = _raw_pdf([GOOD], [None]).replace(b"/Count 1 ", f"/Count {count} ".encode())
    # keep the xref offsets right: pad the replaced number back to its length is not needed when
    # MuPDF repairs, but the tree's /Count is what it refuses
    path = tmp_path / f"count{count}.pdf"
    path.write_bytes(data)
    with pytest.raises(CorruptPDFError) as info:
        PyMuPDFParser().parse(path)
    assert str(path) in str(info.value) and "page tree" in str(info.value)
    code = cli_main(["parse", str(path), "-o", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and str(path) in err


# ---------------------------------------------------------------------------------------------
# 3b. a page's first-line heading is not page furniture; running headers still are
# ---------------------------------------------------------------------------------------------


def _builder_node(builder, type_: T, text: str, page: int, top: float, style: list | None = None) -> ParsingResult:
    from grounded.model import ParsingBoundingBox
    from grounded.parsers.backends.pymupdf.tree import Pending

    box = ParsingBoundingBox(page, 0.1, top, 0.9, top + 0.02)
    box.spans = [ParsingBoundingBox(page, 0.1, top, 0.9, top + 0.02)]
    node = ParsingResult("", type_, content=text, geom=[box], metadata={"native_label": type_.value.lower()})
    if style is not None:  # the style scratch lives in the builder, never in the element's metadata
        builder.hold(node, Pending(style=tuple(style)))
    return node


def test_first_line_heading_becomes_a_section_header_but_running_headers_stay():
    from grounded.parsers.backends.pymupdf.tree import _TreeBuilder

    builder = _TreeBuilder(Path("doc.pdf"))
    builder.body_sizes.update({10.0: 5000})
    b = builder
    heading = _builder_node(b, T.PAGE_HEADER, "Dosing and monitoring", 1, 0.05, [14.0, False, True])
    running = [
        _builder_node(b, T.PAGE_HEADER, f"Journal of Clinical Things {p}", p, 0.03, [14.0, False, True]) for p in (2, 3)
    ]
    small = _builder_node(b, T.PAGE_HEADER, "Guideline draft for consultation", 4, 0.03, [8.0, False, False])
    far = _builder_node(b, T.PAGE_HEADER, "Annex", 5, 0.03, [14.0, False, True])
    builder.elements = [
        heading, _builder_node(b, T.PARAGRAPH, "Give 5 mg/kg once daily.", 1, 0.075),
        running[0], _builder_node(b, T.PARAGRAPH, "Body of page two.", 2, 0.055),
        running[1], _builder_node(b, T.PARAGRAPH, "Body of page three.", 3, 0.055),
        small, _builder_node(b, T.PARAGRAPH, "Body of page four.", 4, 0.055),
        far, _builder_node(b, T.PARAGRAPH, "Body far below the header.", 5, 0.5),
    ]
    out = builder.finish()
    assert heading.type == T.SECTION_HEADER and heading.metadata["relabeled_from"] == "PAGE_HEADER"
    # its style is the evidence post-processing decides its level from (hierarchy.assign_heading_levels)
    assert heading.metadata["native_label"] == "page_header" and heading.metadata["font_size"] == 14.0
    assert [n.type for n in (*running, small, far)] == [T.PAGE_HEADER] * 4
    assert all(not k.startswith("_") for n in out for k in n.metadata)


def test_generated_page_keeps_its_first_line_heading(parser, tmp_path):
    """Laid out scaled, this page's bold first line is labelled page-header by the model."""
    doc = pymupdf.open()
    page = doc.new_page(width=14400, height=14400)
    y = 72.0
    for i, line in enumerate(["Results of the adjuvant therapy trial", *LINES[:10]]):
        size = 220 if i == 0 else 150
        page.insert_text((72, y), line, fontsize=size, fontname="hebo" if i == 0 else "helv")
        y += size * 1.6
    path = _save(doc, tmp_path / "heading.pdf")
    root = _quiet_parse(parser, path)
    assert [n.content for n in root.walk() if n.type == T.SECTION_HEADER] == ["Results of the adjuvant therapy trial"]
    assert _coverage(root, path) >= 0.95


@pytest.mark.slow
def test_worker_processes_lay_out_rotated_pages_upright_too(tmp_path):
    doc = pymupdf.open()
    for rotation in (0, 90, 180, 270):
        _text_page(doc, rotation=rotation)
    path = _save(doc, tmp_path / "mixed-workers.pdf")
    with PyMuPDFParser(workers=2, batch_pages=1) as parser:
        root = _quiet_parse(parser, path)
    assert [p.get("layout_turn", 0) for p in root.metadata["pages"]] == [0, 270, 180, 90]
    for page in range(1, 5):
        assert _coverage(root, path, page) >= 0.95
        assert _words_on_boxes(root, path, page) >= 0.95


def test_page_left_empty_by_the_filter_names_what_was_dropped():
    from grounded.model import ParsingBoundingBox

    root = ParsingResult("root", T.ROOT)
    root.add_child(ParsingResult("", T.PARAGRAPH, content="Body text of page one.", geom=[ParsingBoundingBox(1, 0.1, 0.1, 0.9, 0.2)]))
    root.add_child(ParsingResult("", T.PAGE_HEADER, content="Running header 12", geom=[ParsingBoundingBox(2, 0.1, 0.02, 0.9, 0.04)]))
    drop = {T.PAGE_HEADER, T.PAGE_FOOTER}
    dropped = postprocess.dropped_text(root, drop)
    postprocess.filter_elements(root, drop)
    report, total = postprocess.page_report(root, 3, [1, 2], dropped=dropped)
    assert total == len("Bodytextofpageone.")
    assert report[1]["status"] == "ok"
    assert report[2]["status"] == "empty" and report[2]["dropped"] == {"PAGE_HEADER": 15}
    assert "PAGE_HEADER (15 chars)" in report[2]["reason"]
    assert report[3]["status"] == "no_text_layer"
