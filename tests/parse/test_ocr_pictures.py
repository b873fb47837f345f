"""Text in picture boxes on OCR'd pages (issue 11): on scans the layout model's picture boxes also
swallow real text -- a caption set tight against its figure, a body column beside it. Such text
(it reads as text, whole blocks at the picture's edge or across most of its width) becomes an
element of its own, read in the page's order, and the picture shrinks to what is left; a
figure's OCR and its short labels stay in the picture (real Tesseract on constructed and shared
pages). Born-digital pages keep their behaviour."""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf
import pytest

from grounded.chunking import document_text
from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.ocr_text import OCR_FROM_PICTURES_KEY, reads_as_text, text_in_picture
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.pymupdf.tree import _TreeBuilder
from grounded.parsers.ocr.engine import ocr_copy, tessdata_dir
from grounded.parsers.textlayer import TextLayer
from tests.support.data import shared
from tests.support.scanned import draw_molecule_figure, scanned_pdf

DPI = 300
W, H = 612.0, 792.0
TOP = (
    "Rivers carry water from the mountains to the sea, and along the way they shape the land. "
    "Over many years a river cuts a valley, builds a plain and leaves sand where it slows down."
)
#: the figure, its caption set tight under it, and the body text below (points)
FIGURE = (110.0, 220.0, 500.0, 500.0)
CAPTION = "Figure 3 The bends a slow river cuts into the soft ground of a wide and flat valley floor."
CAPTION_BOX = (72.0, 503.0, 540.0, 530.0)
BOTTOM = (
    "Farmers have always settled near rivers because the soil is rich and the water is close. "
    "Towns grew at the places where a river could be crossed, and trade followed the roads."
)
BOTTOM_BOX = (72.0, 560.0, 540.0, 700.0)


def _figure_page(path: Path) -> Path:
    """One letter page: a paragraph, a figure of molecule-like shapes with short labels, its
    caption 3 pt under it, a paragraph."""
    rng = random.Random(11)
    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 200), TOP, fontsize=12, fontname="helv")
    fig = pymupdf.Rect(*FIGURE)
    draw_molecule_figure(
        page,
        fig,
        rng,
        bonds=100,
        labels=["N", "OH", "H", "O", "NH2", "R1", "S", "Y3", "Cl"],
        label_count=30,
        label_size=8,
        label_bottom_margin=4,
    )
    page.draw_rect(fig, width=1)
    page.insert_textbox(pymupdf.Rect(*CAPTION_BOX), CAPTION, fontsize=10, fontname="helv")
    page.insert_textbox(pymupdf.Rect(*BOTTOM_BOX), BOTTOM, fontsize=12, fontname="helv")
    doc.save(path)
    return path


def _solid(text: str) -> str:
    return "".join(text.split())


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(born-digital source, its scan, the scan with Tesseract's text layer)."""
    folder = tmp_path_factory.mktemp("ocr_pictures")
    source = _figure_page(folder / "source.pdf")
    scan = folder / "scan.pdf"
    scan.write_bytes(scanned_pdf(source, dpi=DPI))
    ocred = folder / "ocr.pdf"
    ocr_copy(scan, [0], ocred, dpi=DPI, tessdata=tessdata_dir())
    return source, scan, ocred


def _build(path: Path, boxes, ocr_pages: frozenset[int]):
    from pymupdf4llm.helpers.document_layout import LayoutBox, PageLayout

    builder = _TreeBuilder(path, ocr_pages=ocr_pages)
    page = PageLayout(1, W, H, [LayoutBox(*rect, boxclass=label) for label, rect in boxes])
    with TextLayer(path) as layer:
        builder.add_page(page, layer.page(1), layer)
    return builder.elements, page


#: the layout model's failure on scans: the picture box swallows the caption set tight under it
SWALLOWED = [
    ("text", (72.0, 72.0, 540.0, 130.0)),
    ("picture", (FIGURE[0] - 4, FIGURE[1] - 4, FIGURE[2] + 4, CAPTION_BOX[3])),
    ("text", BOTTOM_BOX),
]


def test_a_caption_swallowed_by_a_picture_box_is_taken_out_as_a_caption(pages):
    _, _, ocred = pages
    elements, page = _build(ocred, SWALLOWED, frozenset({1}))
    kinds = [e.type for e in elements]
    captions = [e for e in elements if e.type == T.CAPTION]
    assert len(captions) == 1 and captions[0].metadata.get("from_picture")
    assert _solid(captions[0].content).startswith("Figure3Thebends")
    assert _solid(captions[0].content).endswith("valleyfloor.")
    # read in the page's order: body, figure, its caption, body
    assert kinds.index(T.FIGURE) < kinds.index(T.CAPTION) < len(kinds) - 1
    assert "Farmers" in elements[-1].content
    # the picture shrinks to what is left: the figure above the caption
    (figure,) = [e for e in elements if e.type == T.FIGURE]
    fx0, fy0, fx1, fy1 = figure.geom[0].to_points(W, H)
    cap_top = captions[0].geom[0].to_points(W, H)[1]
    assert fy1 <= cap_top + 0.5 and fy1 > FIGURE[3] - 10 and figure.metadata["text_taken_out"] == 1
    # the figure's own OCR (labels, garbage) stays in it
    assert not any(e.metadata.get("from_picture") for e in elements if e.type != T.CAPTION)
    taken = getattr(page, OCR_FROM_PICTURES_KEY)
    assert taken["elements"] == 1 and taken["chars"] == len(_solid(captions[0].content))


def test_a_layout_box_over_a_piece_of_the_caption_line_joins_it(pages):
    # the model boxed the caption's first words as text and the picture swallowed the rest of
    # its line (Clinical Science p12: "Figure S1 Query fragment that" + "was used to define ...")
    _, _, ocred = pages
    piece = ("text", (CAPTION_BOX[0], CAPTION_BOX[1], 160.0, 519.0))
    elements, _ = _build(ocred, [SWALLOWED[0], piece, *SWALLOWED[1:]], frozenset({1}))
    with_caption = [e for e in elements if "Figure" in e.content]
    assert len(with_caption) == 1 and with_caption[0].type == T.CAPTION
    assert _solid(with_caption[0].content).startswith("Figure3Thebends")
    assert _solid(with_caption[0].content).endswith("valleyfloor.")


def test_born_digital_pages_keep_the_picture_as_it_was(pages):
    source, _, _ = pages
    elements, page = _build(source, SWALLOWED, frozenset())
    assert not any(e.metadata.get("from_picture") for e in elements)
    (figure,) = [e for e in elements if e.type == T.FIGURE]
    assert figure.geom[0].to_points(W, H)[3] == pytest.approx(CAPTION_BOX[3], abs=0.5)
    assert not hasattr(page, OCR_FROM_PICTURES_KEY)


def test_a_picture_of_nothing_but_text_is_no_figure(pages):
    # the model saw the body below as a picture: all of it reads as text, no figure is left
    _, _, ocred = pages
    tight = (BOTTOM_BOX[0], BOTTOM_BOX[1], BOTTOM_BOX[2], 600.0)  # around the paragraph's two lines
    boxes = [("text", (72.0, 72.0, 540.0, 130.0)), ("picture", SWALLOWED[1][1]), ("picture", tight)]
    elements, _ = _build(ocred, boxes, frozenset({1}))
    assert sum(e.type == T.FIGURE for e in elements) == 1
    last = elements[-1]
    assert last.type == T.PARAGRAPH and last.metadata.get("from_picture") and "tradefollowedtheroads" in _solid(
        last.content
    )


def test_short_legible_labels_stay_in_the_picture():
    assert not reads_as_text("Homology Searching", in_picture=True)


def test_scanned_page_parsed_for_real_has_the_caption_as_caption_text(pages):
    _, scan, _ = pages
    root = PyMuPDFParser(ocr="always", ocr_dpi=DPI).parse(scan)
    captions = [n for n in root.walk() if n.type == T.CAPTION]
    assert any(_solid(n.content).startswith("Figure3Thebends") for n in captions), [n.content for n in captions]
    text = _solid(document_text(root).text)
    assert text.index("Riverscarrywater") < text.index("Figure3Thebends") < text.index("Farmershavealways")
    (entry,) = root.metadata["pages"]
    assert OCR_FROM_PICTURES_KEY in entry


@pytest.mark.slow
def test_clinical_science_p5_figure_caption_comes_back(tmp_path):
    # the scanned page: "Figure 2 ..." lay in the layout's picture box and was dropped
    scan = tmp_path / "p5.pdf"
    scan.write_bytes(scanned_pdf(shared("long", "cermine_web_example3_clinsci.pdf"), [5], dpi=DPI))
    root = PyMuPDFParser(ocr="always", ocr_dpi=DPI).parse(scan)
    captions = [_solid(n.content) for n in root.walk() if n.type == T.CAPTION]
    assert any(c.startswith("Figure2") and "Fragmentsuggested" in c and c.endswith("3NXQ[34]") for c in captions)


def _chars(lines: list[tuple[float, float, str]]):
    """A PageChars of text lines (left x, top y, text), 5 pt wide and 10 pt high glyphs, one
    MuPDF line each."""
    import numpy as np

    from grounded.parsers.textlayer import PageChars

    chars, x0, y0, line = [], [], [], []
    for k, (left, top, text) in enumerate(lines):
        for i, c in enumerate(text):
            chars.append(c)
            x0.append(left + 5.0 * i)
            y0.append(top)
            line.append(k)
    xs, ys = np.array(x0), np.array(y0)
    return PageChars(1, W, H, chars, xs, ys, xs + 5.0, ys + 10.0, np.array(line), np.full(len(chars), 10.0),
                     np.zeros(len(chars), dtype=bool), [0] * len(lines))


def test_a_column_at_the_top_of_a_picture_and_a_heading_beside_it_come_out():
    # Clinical Science p6: a picture box over the gutter holds the left column's last lines, the
    # right column's heading beside them, and the figure below
    import numpy as np

    prose = ["the model also binds the zinc ion in the", "pocket and a water molecule holds it in",
             "place so that the ring turns away from", "the side chain of the residue next to it"]
    lines = [(50.0, 100.0 + 12 * k, text) for k, text in enumerate(prose)]
    lines.append((300.0, 124.0, "DISCUSSION"))
    lines += [(60.0 + 40 * k, 200.0 + 15 * (k % 3), token) for k, token in
              enumerate(["OH", "N~", "H3C", "=~", "Ha91", "a3re", "BARN", "Y50!", "\\S"])]
    pc = _chars(lines)
    rects = [(50.0, 100.0, 360.0, 146.0), (60.0, 200.0, 440.0, 240.0)]
    found, left = text_in_picture(pc, np.zeros(len(pc), dtype=bool), (45.0, 95.0, 450.0, 260.0), rects)
    texts = ["".join(pc.chars[i] for i in sel) for sel, _ in found]
    assert [t.startswith("the model") for t in texts] == [True, False] and texts[1] == "DISCUSSION"
    assert all(before for _, before in found)
    assert left is not None and left[1] == pytest.approx(146.0) and left[3] == 260.0  # the figure below
