"""Figure text on OCR'd pages (issue 11): Tesseract reads the inside of raster figures too and
writes mostly garbage into the invisible text layer. That is a picture's OCR, not body text: the
layout fallback neither counts it as lost text nor re-adds it, and the page's metadata counts what
was left out (real Tesseract on constructed and shared pages)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pymupdf
import pytest

from grounded.chunking import document_text
from grounded.parsers.backends.pymupdf.ocr_text import (
    OCR_LEFT_OUT_KEY,
    OCR_TEXT_MIN_WORD_SHARE,
    reads_as_text,
    word_share,
)
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.pymupdf.tree import _TreeBuilder
from grounded.parsers.ocr.engine import ocr_copy, tessdata_dir
from grounded.parsers.textlayer import TextLayer
from tests.support.data import shared
from tests.support.scanned import born_digital_words, draw_molecule_figure, scanned_pdf

DPI = 300
TOP = (
    "Rivers carry water from the mountains to the sea, and along the way they shape the land. "
    "Over many years a river cuts a valley, builds a plain and leaves sand where it slows down."
)
CAPTION = "Figure 1 A sketch of the shapes that a river leaves behind in a wide valley."
BOTTOM = (
    "Farmers have always settled near rivers because the soil is rich and the water is close. "
    "Towns grew at the places where a river could be crossed, and trade followed the roads."
)
#: the raster figure: bonds, rings and atom labels, as in a chemistry figure (points)
FIGURE = (110.0, 220.0, 500.0, 520.0)


def _figure_page(path: Path) -> Path:
    """One letter page: a paragraph, a figure of molecule-like shapes, its caption, a paragraph."""
    rng = random.Random(7)
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 200), TOP, fontsize=12, fontname="helv")
    fig = pymupdf.Rect(*FIGURE)
    draw_molecule_figure(
        page, fig, rng, bonds=120, labels=["N", "OH", "H", "O", "NH2", "R1", "S", "~", "Y3", "Cl"], label_count=40
    )
    page.draw_rect(fig, width=1)
    page.insert_textbox(pymupdf.Rect(72, 530, 540, 560), CAPTION, fontsize=10, fontname="helv")
    page.insert_textbox(pymupdf.Rect(72, 575, 540, 700), BOTTOM, fontsize=12, fontname="helv")
    doc.save(path)
    return path


def _solid(text: str) -> str:
    return "".join(text.split())


@pytest.fixture(scope="module")
def scan(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ocr_figures")
    path = folder / "scan.pdf"
    path.write_bytes(scanned_pdf(_figure_page(folder / "source.pdf"), dpi=DPI))
    return path


@pytest.fixture(scope="module")
def ocred(scan) -> Path:
    """The scan with Tesseract's text layer (as the parser's private copy)."""
    target = scan.with_name("ocr.pdf")
    ocr_copy(scan, [0], target, dpi=DPI, tessdata=tessdata_dir())
    return target


def _figure_ocr(path: Path) -> str:
    """What Tesseract wrote inside the figure (the garbage this is about)."""
    with pymupdf.open(path) as doc:
        return doc[0].get_textbox(pymupdf.Rect(*FIGURE))


def test_the_figure_is_read_as_garbage(ocred):
    # the premise: Tesseract writes text inside the raster figure, and it does not read as text
    garbage = _figure_ocr(ocred)
    assert len(_solid(garbage)) >= 40
    assert word_share(garbage) < OCR_TEXT_MIN_WORD_SHARE and not reads_as_text(garbage, True)
    assert all(reads_as_text(t) for t in (TOP, CAPTION, BOTTOM))


#: Tesseract's text layer of the scanned Clinical Science pages (300 dpi): figure OCR ...
FIGURE_OCR = [
    "a i F490 pame EP V sa96 a AL H331 369 ae> m= (Gye \u201ctsae a Ha91 a3re NOR BARN",
    "498 \\\\ wea AT? 2s A Y50! i\u201d Y \\S Y498 RSI y~T/ _l 28 Wes kaso \\",
    "$z 2.5 \u00a3= 20 os oc ef 15 ee \u00a3 = 1.0: oS os a3",
    "nd ak no Sy 2D oy 2 \u2018a yy oP ies eePELLheSSS PPP LP ELE CELLLOO MP O\u2019\u201cE LS 0 2IL aaa |",
]
#: ... and text (body, a reference list, a caption the layout model put in a picture box)
OCR_TEXT = [
    "The co-crystal structure of N-domain ACE was solved at 2.2 A in complex with compound 33RE",
    "lung with silicosis. PLoS ONE 7, e40301 24 Zhang, L., Xu, L. M., Chen, Y. W., Ni, Q. W., Zhou, M.",
    "Figure 2 Fragment suggested to have complementary interactions with the protein in the same region",
]


@pytest.mark.parametrize("text", FIGURE_OCR)
def test_figure_ocr_does_not_read_as_text(text):
    assert not reads_as_text(text) and not reads_as_text(text, in_picture=True)


@pytest.mark.parametrize("text", OCR_TEXT)
def test_ocr_text_reads_as_text(text):
    assert reads_as_text(text) and reads_as_text(text, in_picture=True)


def test_short_legible_labels_in_a_picture_are_the_figure_s():
    # a flowchart's boxes (PeerJ p5): words, but labels, not a caption or body text
    assert reads_as_text("Homology Searching") and not reads_as_text("Homology Searching", in_picture=True)


def test_scanned_figure_page_keeps_the_body_and_counts_the_figure_text(scan, ocred):
    root = PyMuPDFParser(ocr="always", ocr_dpi=DPI).parse(scan)
    text = _solid(document_text(root).text)
    for words in ("Riverscarrywater", "Figure1Asketch", "Farmershavealwayssettled", "tradefollowedtheroads"):
        assert words in text
    for token in re.findall(r"\S{3,}", _figure_ocr(ocred)):
        assert _solid(token) not in text, token
    (entry,) = root.metadata["pages"]
    left_out = entry[OCR_LEFT_OUT_KEY]
    assert left_out["in_pictures"] >= 40 and left_out["unreadable_chars"] >= 40 and left_out["unreadable_blocks"] >= 1


def test_worker_processes_know_the_ocr_pages_and_report_what_was_left_out(scan):
    # with workers the pages' elements are built in other processes: they get the OCR'd pages too,
    # and the counts come back with the layouts
    two = scan.with_name("two.pdf")
    two.write_bytes(scanned_pdf(scan.with_name("source.pdf"), [1, 1], dpi=DPI))
    with PyMuPDFParser(ocr="always", ocr_dpi=DPI, workers=2, batch_pages=1) as parser:
        root = parser.parse(two)
    for entry in root.metadata["pages"]:
        assert entry[OCR_LEFT_OUT_KEY]["unreadable_chars"] >= 40
    assert _solid(document_text(root).text).count("Farmershavealwayssettled") == 2


def _layout(boxes: list[tuple[str, tuple[float, float, float, float]]]):
    from pymupdf4llm.helpers.document_layout import LayoutBox, PageLayout

    return PageLayout(1, 612.0, 792.0, [LayoutBox(*rect, boxclass=label) for label, rect in boxes])


#: the layout model's failure on the scanned Clinical Science p6: one picture box swallows the
#: figure, its caption and the body text below it (only the first paragraph got a text box)
SWALLOWED = [("text", (72.0, 72.0, 520.0, 125.0)), ("picture", (105.0, 215.0, 545.0, 715.0))]


def _build(path: Path, boxes, ocr_pages: frozenset[int]):
    builder = _TreeBuilder(path, ocr_pages=ocr_pages)
    page = _layout(boxes)
    with TextLayer(path) as layer:
        builder.add_page(page, layer.page(1), layer)
    return builder.elements, page


def test_fallback_on_an_ocr_page_takes_the_lost_body_not_the_figure(ocred):
    elements, page = _build(ocred, SWALLOWED, frozenset({1}))
    # taken back from the picture box as text in it (tests/parse/test_ocr_pictures.py), else by the fallback
    fallback = [e for e in elements if e.metadata.get("layout_fallback") or e.metadata.get("from_picture")]
    text = _solid(" ".join(e.content for e in elements))
    assert "Figure1Asketch" in text and "Farmershavealwayssettled" in text  # lost text, taken back
    assert fallback and all(reads_as_text(e.content) for e in fallback)
    for e in fallback:  # nothing from inside the figure
        box = e.geom[0].to_points(612.0, 792.0)
        assert box[1] >= FIGURE[3] - 5, e.content
    left_out = getattr(page, OCR_LEFT_OUT_KEY)
    assert left_out["chars"] == left_out["unreadable_chars"] >= 40 and left_out["in_pictures"] >= 40


#: two columns of two paragraphs each: (left, top, right, bottom) -> text
COLUMNS = {
    (72.0, 72.0, 296.0, 300.0): "First the left column tells how the river rises in the hills " * 4,
    (72.0, 320.0, 296.0, 600.0): "Then the left column follows the river down into the plain " * 4,
    (316.0, 72.0, 540.0, 300.0): "Next the right column shows the towns that grew along the banks " * 4,
    (316.0, 320.0, 540.0, 600.0): "Last the right column reaches the sea where the river ends " * 4,
}


def test_fallback_text_on_an_ocr_page_is_read_in_reading_order(tmp_path):
    # the layout model lost the right column's first paragraph: taken back, it is read where it
    # stands (after the left column, before the paragraph under it), not after the whole page.
    # The builder only needs a text layer here, so a born-digital page stands in for the OCR'd one
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for rect, text in COLUMNS.items():
        page.insert_textbox(pymupdf.Rect(*rect), text, fontsize=11, fontname="helv")
    doc.save(tmp_path / "columns.pdf")
    lost = list(COLUMNS)[2]
    boxes = [("text", rect) for rect in COLUMNS if rect != lost]
    elements, _ = _build(tmp_path / "columns.pdf", boxes, frozenset({1}))
    assert [e.content.split()[0] for e in elements] == ["First", "Then", "Next", "Last"]
    assert elements[2].metadata.get("layout_fallback")


def test_fallback_on_an_ocr_page_without_any_box_takes_only_text(ocred):
    elements, page = _build(ocred, [], frozenset({1}))
    text = _solid(" ".join(e.content for e in elements))
    for words in ("Riverscarrywater", "Figure1Asketch", "Farmershavealwayssettled"):
        assert words in text
    assert all(reads_as_text(e.content) for e in elements)
    assert getattr(page, OCR_LEFT_OUT_KEY)["unreadable_chars"] >= 40


def test_born_digital_pages_keep_the_old_rule(ocred):
    # the same text layer, not marked OCR'd: text in the picture counts (a vector table the model
    # called a picture is real text), every block is taken, and no OCR counts are written
    elements, page = _build(ocred, SWALLOWED, frozenset())
    fallback = [e for e in elements if e.metadata.get("layout_fallback")]
    assert any(e.geom[0].to_points(612.0, 792.0)[1] < FIGURE[3] - 5 for e in fallback)
    assert not hasattr(page, OCR_LEFT_OUT_KEY)


def test_scanned_clinsci_figure_page_has_no_figure_garbage():
    # Clinical Science p6: raster figures (a protein cartoon, residue labels) whose OCR is garbage
    # ("S N-ter =~ VN ~<A GS", "Y50! 498 \\ wea"); scanned alone, the layout model puts the right
    # column (Table 5 and the body text under it) in one picture box with figure 5. The body text
    # is taken back by the fallback; the figure OCR is not (and is counted)
    src = shared("long", "cermine_web_example3_clinsci.pdf")
    root = PyMuPDFParser(ocr="always", ocr_dpi=DPI).parse(scanned_pdf(src, [6], dpi=DPI))
    text = document_text(root).text
    for words in ("Crystal structure of N-domain ACE", "Binding of compound 33RE", "acidic side-chain",
                  "ACE inhibitors remain an effective therapeutic strategy"):
        assert words in text
    known = {w.lower() for *_, w in born_digital_words(src, 6) for w in re.findall(r"[A-Za-z]{3,}", w)}
    fallback = " ".join(n.content for n in root.walk() if n.metadata.get("layout_fallback"))
    words = re.findall(r"[A-Za-z]{3,}", fallback)
    assert words and sum(w.lower() in known for w in words) >= 0.9 * len(words)
    (entry,) = root.metadata["pages"]
    assert entry[OCR_LEFT_OUT_KEY]["unreadable_chars"] >= 100
