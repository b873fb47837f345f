"""Reading order across columns and footnotes (#13.1, #13.2): the page's layout boxes are
ordered from their geometry (:mod:`grounded.parsers.reading_order`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from grounded.chunking import document_text
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.reading_order import columns, reading_order, upright
from tests.support.columns import count_column_order
from tests.support.data import SHARED_DATA, shared
from tests.support.scanned import scanned_pdf


@dataclass
class B:
    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str = "text"


# -- the ordering function on synthetic boxes ----------------------------------------------------

LEFT, RIGHT = (50.0, 290.0), (310.0, 550.0)


def _col(col: tuple[float, float], y0: float, y1: float, cls: str = "text") -> B:
    return B(col[0], y0, col[1], y1, cls)


def test_columns_found_from_narrow_boxes():
    boxes = [_col(LEFT, 70, 300), _col(RIGHT, 70, 300), _col(LEFT, 310, 700), _col(RIGHT, 310, 700)]
    (gutter,) = columns(boxes)
    assert 290 < gutter < 310
    assert columns([B(50, 70, 550, 300), B(50, 310, 550, 700)]) == []  # one column


def test_column_one_before_column_two_within_a_band():
    # the model's stripe order: column-2 top before the end of column 1
    boxes = [
        _col(LEFT, 70, 240),  # 0
        _col(RIGHT, 70, 230),  # 1 continuation of 4
        _col(RIGHT, 245, 255, "section-header"),  # 2
        _col(LEFT, 258, 268, "section-header"),  # 3
        _col(LEFT, 280, 740),  # 4 ends mid-sentence
        _col(RIGHT, 270, 740),  # 5
    ]
    assert reading_order(boxes) == [0, 3, 4, 1, 2, 5]


def test_full_width_elements_split_bands():
    boxes = [
        B(50, 40, 550, 60, "title"),  # 0
        _col(RIGHT, 70, 200),  # 1
        _col(LEFT, 70, 200),  # 2
        B(60, 210, 540, 400, "picture"),  # 3 full-width figure
        B(60, 405, 540, 420, "caption"),  # 4
        _col(RIGHT, 430, 740),  # 5
        _col(LEFT, 430, 740),  # 6
    ]
    assert reading_order(boxes) == [0, 2, 1, 3, 4, 6, 5]


def test_an_empty_full_width_strip_splits_bands():
    # a figure the model did not box: both columns are interrupted at the same height
    boxes = [_col(LEFT, 70, 200), _col(RIGHT, 70, 200), _col(LEFT, 420, 740), _col(RIGHT, 420, 740)]
    assert reading_order(boxes) == [0, 1, 2, 3]


def test_footnotes_after_the_body_and_furniture_at_the_ends():
    boxes = [
        _col(LEFT, 70, 600),  # 0 sentence continues in 3
        B(60, 770, 540, 780, "page-footer"),  # 1
        _col(LEFT, 620, 640, "footnote"),  # 2
        _col(RIGHT, 70, 740),  # 3
        B(300, 30, 550, 40, "page-header"),  # 4
        _col(LEFT, 645, 660, "footnote"),  # 5
    ]
    assert reading_order(boxes) == [4, 0, 3, 2, 5, 1]


def test_small_print_closing_a_column_is_read_as_a_footnote():
    boxes = [
        _col(LEFT, 70, 600),  # 0 sentence continues in 2
        _col(LEFT, 620, 660),  # 1 affiliations in small print, labelled text
        _col(RIGHT, 70, 740),  # 2
        _col(RIGHT, 300, 320),  # 3 small print inside column 2's flow: stays
    ]
    assert reading_order(boxes, [False, True, False, True]) == [0, 2, 3, 1]
    assert reading_order(boxes, [False, False, False, False]) == [0, 1, 2, 3]
    # small print with body text below it in its column is not a footnote
    boxes.append(_col(LEFT, 670, 740))
    assert reading_order(boxes, [False, True, False, True, False]) == [0, 1, 4, 2, 3]


C1, C2, C3 = (45.0, 212.0), (222.0, 385.0), (399.0, 566.0)


def test_boxes_alone_in_their_band_do_not_hide_the_gutters_of_columns_below():
    # a scan: a figure's lines (list items, each alone in its band) over three columns, the
    # columns' text cut from two layout boxes stacked at y=599 (as on Federal Register p14)
    figure = [
        B(197, 59, 414, 70, "section-header"),  # 0 its title
        *(B(x0, y, x1, y + 10, "list-item") for x0, y, x1 in ((96, 159, 387), (118, 177, 411), (118, 399, 361))),
        B(117, 418, 379, 428, "list-item"),  # 4
    ]
    cols = [
        _col(C1, 476, 599),  # 5
        _col(C2, 476, 599),  # 6
        _col(C3, 476, 624),  # 7
        _col(C1, 599, 741),  # 8
        _col(C2, 599, 741),  # 9
        _col(C3, 624, 741),  # 10
    ]
    boxes = [*figure, *cols]
    left, right = columns(boxes)
    assert C1[1] < left < C2[0] and C2[1] < right < C3[0]
    assert reading_order(boxes) == [0, 1, 2, 3, 4, 5, 8, 6, 9, 7, 10]
    # without text side by side across a strip, boxes alone in their band still close it
    stacked = [*figure, _col(C1, 476, 599), _col(C2, 610, 650), _col(C3, 660, 741)]
    assert columns(stacked) == []


def test_small_print_over_the_columns_closing_them_is_read_with_the_notes():
    boxes = [
        _col(LEFT, 70, 600),  # 0
        _col(RIGHT, 70, 600),  # 1
        B(50, 640, 460, 650),  # 2 affiliations over both columns (small print)
        _col(LEFT, 652, 660),  # 3 their last line
        B(50, 670, 520, 690),  # 4 a note over both columns
    ]
    assert reading_order(boxes, [False, False, True, True, True]) == [0, 1, 2, 3, 4]


def _margin_page() -> list[B]:
    """A page with a narrow margin column left of the body (PeerJ's first page): a logo, then the
    article's history, editor and licence beside the lower half of the body."""
    main, margin = (185.0, 578.0), (35.0, 155.0)
    return [
        B(35, 66, 131, 156, "picture"),  # 0 logo
        _col(main, 65, 110, "section-header"),  # 1 title
        B(185, 126, 490, 137),  # 2 authors (short lines vote for the gutter, as does 7)
        _col(main, 146, 480),  # 3 abstract
        B(185, 510, 382, 520),  # 4 subjects
        _col(margin, 487, 516),  # 5 submitted, accepted
        _col(margin, 524, 552),  # 6 corresponding author
        B(185, 567, 291, 577, "section-header"),  # 7 introduction
        _col(margin, 589, 635),  # 8 additional information
        _col(main, 588, 717),  # 9
        _col(margin, 643, 663),  # 10 copyright
        _col(margin, 707, 714),  # 11 open access
    ]


def test_margin_column_text_is_read_after_the_body():
    boxes = _margin_page()
    body, notes = [0, 1, 2, 3, 4, 7, 9], [5, 6, 8, 10, 11]
    assert reading_order(boxes) == body + notes
    # whatever the boxes' print size says (OCR's sizes come from line heights and vary)
    for small in ([False] * 12, [i in (5, 8) for i in range(12)], [i in notes for i in range(12)]):
        assert reading_order(boxes, small) == body + notes


def test_a_column_as_wide_as_half_the_others_is_no_margin_column():
    # columns of 120 and 240 points: both body columns, read one after the other
    boxes = [B(50, 70, 170, 400), B(50, 420, 170, 740), B(190, 70, 430, 400), B(190, 420, 430, 740)]
    assert reading_order(boxes) == [0, 1, 2, 3]
    # three equal columns: none is a margin column
    thirds = [B(x, y, x + 150, y + 300) for y in (70, 400) for x in (50, 220, 390)]
    assert reading_order(thirds) == [0, 3, 1, 4, 2, 5]


def test_a_box_nested_at_the_top_of_a_later_box_is_read_first():
    # the layout model boxed the first lines of both columns, then each whole column; the small
    # boxes take their text first, so each column box holds the text below them
    boxes = [
        B(45.0, 122.4, 208.0, 183.2),  # 0 column 1, first lines
        B(222.1, 122.4, 387.3, 183.2),  # 1 column 2, first lines (a bullet list)
        B(45.4, 122.4, 212.0, 741.6),  # 2 column 1, the rest
        B(221.4, 122.4, 388.3, 741.6),  # 3 column 2, the rest (starts a little further left)
        B(399.2, 122.4, 565.9, 741.6),  # 4 column 3
    ]
    assert reading_order(boxes) == [0, 2, 1, 3, 4]
    # a box nested lower down, or one later in the model's order (it found its text taken), does
    # not move the box around it
    lower = [B(221.4, 122.4, 388.3, 741.6), B(222.1, 300.0, 387.3, 360.0), *boxes[2:3], *boxes[4:]]
    assert reading_order(lower) == [2, 0, 1, 3]
    later = [boxes[3], boxes[2], boxes[1], boxes[4]]
    assert reading_order(later) == [1, 0, 2, 3]


def test_single_column_keeps_the_model_order():
    boxes = [B(50, 300, 550, 400), B(50, 70, 550, 290), B(80, 420, 520, 600, "picture")]
    assert reading_order(boxes) == [0, 1, 2]


_box = st.builds(
    lambda x, w, y, h, c: B(x, y, x + w, y + h, c),
    st.floats(0, 500),
    st.floats(1, 500),
    st.floats(0, 700),
    st.floats(0, 100),
    st.sampled_from(["text", "title", "picture", "table", "footnote", "page-header", "page-footer", "caption"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_box, max_size=25))
def test_reading_order_is_a_permutation(boxes):
    order = reading_order(boxes)
    assert sorted(order) == list(range(len(boxes)))


# -- generated PDFs through the real layout model --------------------------------------------------

_L, _G, _R = 54, 306, 558
_C1, _C2 = (_L, _G - 9), (_G + 9, _R)


def _filler(tag: str, n: int) -> str:
    return " ".join(f"{tag} sentence {i} reports a measured value for the study group." for i in range(n))


def _block(page, col, y0: float, y1: float, text: str, size: float = 9.5) -> None:
    assert page.insert_textbox(pymupdf.Rect(col[0], y0, col[1], y1), text, fontsize=size) >= 0


def _crossing_pdf(path: Path) -> Path:
    """Two columns above a full-width figure; below it a paragraph crossing from column 1 into
    column 2, whose header sits higher than column 1's (the model's stripes break there)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((_L + 60, 58), "A Study of Reading Order in Two Columns", fontsize=16, fontname="hebo")
    _block(page, _C1, 80, 160, _filler("Alpha", 4))
    _block(page, _C2, 80, 160, _filler("Beta", 4))
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 400, 120), False)
    pix.clear_with(200)
    for x in range(0, 400, 3):
        for yy in range(120 - (x * 7 % 100), 120):
            pix.set_pixel(x, yy, (40, 90, 160))
    page.insert_image(pymupdf.Rect(_L, 175, _R, 300), pixmap=pix)
    page.insert_text((_L + 100, 312), "Figure 1. Readmission rates by month for both study groups.", fontsize=8.5)
    _block(page, _C1, 330, 430, _filler("Gamma", 4))
    page.insert_text((_C1[0], 455), "Methods", fontsize=11, fontname="hebo")
    _block(page, _C1, 465, 740, _filler("Delta", 6) + " The final finding is that readmission was strongly associated with")
    _block(page, _C2, 330, 420, "the number of prior admissions in the same year. " + _filler("Epsilon", 3))
    page.insert_text((_C2[0], 440), "Results", fontsize=11, fontname="hebo")
    _block(page, _C2, 450, 750, _filler("Zeta", 8))
    page.insert_text((300, 770), "2", fontsize=8)
    doc.save(path)
    return path


def _footnote_pdf(path: Path) -> Path:
    """A sentence crossing from column 1 into column 2 over a correspondence footnote."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((_L + 60, 58), "A Study of Footnotes in Two Columns", fontsize=16, fontname="hebo")
    _block(page, (_L, _R), 80, 200, _filler("Abstract", 7))
    page.insert_text((_C1[0], 235), "Background", fontsize=11, fontname="hebo")
    _block(page, _C1, 245, 680, _filler("Delta", 25) + " Patients were treated with low molecular")
    page.draw_line((_L, 694), (_L + 80, 694), width=0.5)
    note = "* Correspondence: author@example.org\n1 Department of Medicine, General Hospital, City, Country"
    _block(page, _C1, 698, 740, note, size=7)
    _block(page, _C2, 235, 750, "weight heparins before the operation. " + _filler("Zeta", 29))
    page.insert_text((300, 770), "2", fontsize=8)
    doc.save(path)
    return path


def _margin_notes_pdf(path: Path) -> Path:
    """One body column (11 pt) with a narrow margin column of notes (9 pt) beside its lower half,
    as on a PeerJ first page."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    body = (185, 578)
    page.insert_text((body[0], 80), "A Study of Margin Notes Beside the Body", fontsize=18, fontname="hebo")
    page.insert_text((body[0], 110), "Alice Author, Bob Writer and Carol Scholar", fontsize=11)
    page.insert_text((body[0], 140), "ABSTRACT", fontsize=13, fontname="hebo")
    _block(page, body, 150, 330, _filler("Alpha", 9), size=11)
    page.insert_text((body[0], 360), "INTRODUCTION", fontsize=13, fontname="hebo")
    _block(page, body, 370, 720, _filler("Beta", 17) + " The last body sentence ends here.", size=11)
    notes = [
        "Submitted 25 March 2016\nAccepted 9 May 2017\nPublished 5 June 2017",
        "Corresponding author\nAlice Author,\nalice@example.org",
        "Academic editor\nDan Editor",
        "Additional Information and\nDeclarations can be found on\npage 13",
        "Copyright\n2017 Author et al.",
        "Distributed under\nCreative Commons CC-BY 4.0",
    ]
    y = 420.0
    for note in notes:
        height = 12 * (note.count("\n") + 1) + 4
        _block(page, (35, 160), y, y + height, note, size=9)
        y += height + 12
    doc.save(path)
    return path


def _text(path: Path) -> str:
    return document_text(PyMuPDFParser().parse(path)).text


def test_generated_paragraph_crossing_columns_reads_on(tmp_path):
    text = _text(_crossing_pdf(tmp_path / "crossing.pdf"))
    assert "strongly associated with\n\nthe number of prior admissions" in text
    # the band above the figure is read first, column 1 then column 2
    assert text.index("Alpha sentence 3") < text.index("Beta sentence 0") < text.index("Gamma sentence 0")
    assert text.index("Zeta sentence 0") > text.index("the number of prior admissions")


def test_generated_footnote_comes_after_the_sentence_it_interrupts(tmp_path):
    text = _text(_footnote_pdf(tmp_path / "footnote.pdf"))
    assert "with low molecular\n\nweight heparins" in text
    assert text.index("Correspondence") > text.index("Zeta sentence 28")


@pytest.mark.slow
def test_generated_margin_notes_come_after_the_body_born_digital_and_scanned(tmp_path):
    # on the scan the notes' OCR sizes (from line heights) are not all small print: the rule is
    # the narrow column, not the print size
    path = _margin_notes_pdf(tmp_path / "margin.pdf")
    scan = PyMuPDFParser(ocr="always").parse(scanned_pdf(path, dpi=200), name="margin.pdf")
    for text in (_text(path), document_text(scan).text):
        at = [text.index(w) for w in ("Beta sentence 0", "last body sentence", "Submitted", "Distributed under")]
        assert at == sorted(at)


# -- the pages ---------------------------------------------------------------------------


def _page_text(path: Path, page: int, tmp_path: Path) -> str:
    out = tmp_path / f"{path.stem}-p{page}.pdf"
    with pymupdf.open(path) as src, pymupdf.open() as doc:
        doc.insert_pdf(src, from_page=page - 1, to_page=page - 1)
        doc.save(out)
    return _text(out)


def test_test2_page2_column_two_continues_column_one(tmp_path):
    text = _page_text(shared("pdfs", "cermine_medical", "test2.pdf"), 2, tmp_path)
    assert "raise issues important to\n\ntheir lives. The focus groups took place" in text


def test_web_example2_page3_column_one_ends_before_column_two(tmp_path):
    text = _page_text(shared("pdfs", "cermine_medical", "web_example2.pdf"), 3, tmp_path)
    end = text.index("The review was structured to")
    assert end < text.index("Results") or "Results" not in text
    tops = [p for p in text.split("\n\n") if p.strip()]
    assert any("The review was structured to" in p for p in tops)
    # everything of column 2 follows the end of column 1
    col2_first = text.index(tops[[i for i, p in enumerate(tops) if "The review was structured to" in p][0] + 1][:30])
    assert col2_first > end


def test_test1_page1_footnote_does_not_split_the_sentence(tmp_path):
    text = _page_text(shared("pdfs", "cermine_medical", "test1.pdf"), 1, tmp_path)
    assert "with low molecular\n\nweight heparins" in text
    assert text.index("Correspondence") > text.index("weight heparins")


#: scans as the OCR benchmark makes them; at this resolution the layout model boxes both pages
#: as described below (the margin notes' OCR sizes vary; Federal Register boxes nested at the top)
SCAN_DPI = 300


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "words"),
    [
        # margin notes beside the body: after it, as on the born-digital page
        ("cermine_test6_peerjcs118.pdf", ["Estimating selective", "Submitted 25 March", "Distributed under"]),
        # column 2's first lines (a list) boxed apart from, and before, the whole column's box
        ("federal-register-2020-17221.pdf", ["Federal eRulemaking", "Mail: U.S.", "For Boeing service"]),
    ],
)
def test_scanned_first_pages_read_as_born_digital(name, words, tmp_path):
    src = SHARED_DATA / "long" / name
    digital = _page_text(src, 1, tmp_path)
    scanned = document_text(PyMuPDFParser(ocr="always").parse(scanned_pdf(src, [1], dpi=SCAN_DPI), name=name)).text
    at = [scanned.index(w) for w in words]
    assert at == sorted(at)
    truth = "".join(digital.split())
    assert Levenshtein.distance("".join(scanned.split()), truth) / len(truth) <= 0.03


# -- the shared two-column PDFs -------------------------------------------------------------------

#: the shared PDFs whose pages the layout model reads across the columns (11 of their 33 pages, and
#: two table pages of 4): the bound below on them. Every shared PDF (336 pages, ~3 CPU-minutes of the
#: layout model; 17 pages out of order -> 1) is ``python benchmarks/reading_order_columns.py``
#: (docs/results/reading_order_columns.md), where this test's full-corpus run moved (issue #30.7)
TWO_COLUMN_PDFS = [
    ("pdfs", "cermine_medical", "test1.pdf"),
    ("pdfs", "cermine_medical", "test2.pdf"),
    ("pdfs", "cermine_medical", "web_example2.pdf"),
    ("long", "cermine_web_example3_clinsci.pdf"),
    ("pdfs", "icdar2013_tables", "competition-dataset-us", "us-001.pdf"),
    ("pdfs", "docling_groundtruth", "table_mislabeled_as_picture.pdf"),
]
#: pages out of order in the model's own order on those PDFs (13 measured): fewer means the layout
#: model changed and the test no longer measures what it should
MIN_OUT_OF_ORDER = 10


@pytest.mark.slow
def test_shared_two_column_pdfs_read_column_one_first():
    count = count_column_order([shared(*parts) for parts in TWO_COLUMN_PDFS])
    print(f"two-column order: pages with a column-2 box before a column-1 box of its band: {count.before} -> {count.after} of {count.pages}")
    print("still out of order:", ", ".join(count.remaining) or "none")
    assert count.before >= MIN_OUT_OF_ORDER  # the model's order does cross the columns on these pages
    assert count.after <= count.before // 4


@pytest.mark.parametrize("turn", [0, 90, 180, 270])
def test_turned_pages_are_ordered_as_the_reader_sees_them(turn):
    w, h = 600.0, 800.0  # the upright page; displayed turned back by ``turn``
    seen = [
        _col(LEFT, 70, 240),
        _col(RIGHT, 70, 230),
        _col(RIGHT, 245, 255, "section-header"),
        _col(LEFT, 258, 268, "section-header"),
        _col(LEFT, 280, 740),
        _col(RIGHT, 270, 740),
    ]

    def shown(b: B) -> B:  # upright -> displayed page
        if turn == 90:  # displayed is h x w
            return B(b.y0, w - b.x1, b.y1, w - b.x0, b.boxclass)
        if turn == 180:
            return B(w - b.x1, h - b.y1, w - b.x0, h - b.y0, b.boxclass)
        if turn == 270:
            return B(h - b.y1, b.x0, h - b.y0, b.x1, b.boxclass)
        return b

    displayed = [shown(b) for b in seen]
    dw, dh = (h, w) if turn in (90, 270) else (w, h)
    back = upright(displayed, turn, dw, dh)
    assert [(r.x0, r.y0, r.x1, r.y1) for r in back] == [(b.x0, b.y0, b.x1, b.y1) for b in seen]
    assert reading_order(back) == [0, 3, 4, 1, 2, 5]


@pytest.mark.slow
def test_scanned_federal_register_page_14_reads_column_by_column():
    # a figure's lines over three columns whose text the layout model boxed as two boxes each
    # spanning the columns, stacked at y=599: column 1 is read to its end before column 2
    src = SHARED_DATA / "long" / "federal-register-2020-17221.pdf"
    text = document_text(PyMuPDFParser(ocr="always").parse(scanned_pdf(src, [14], dpi=SCAN_DPI))).text
    words = ["Note 2 to paragraph", "Installation/Verification", "Horizontal Stabilizer Trim", "AOA Sensor System"]
    words += ["Operational Readiness Flight", "Special Flight Permits", "Credit for Previous Actions"]
    at = [text.index(w) for w in words]
    assert at == sorted(at)
