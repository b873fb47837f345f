"""``focus_of`` on PDFs: the focus's boxes come from the chunk box assembly, lie inside the chunk's own
boxes, and follow a sentence across a column and a page break; a table row, a list item, numbers and
units, a negated sentence on the constructed sample guideline and real shared PDFs; a 1,000-token chunk."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

import grounded
from grounded.focus import Focus, FocusWarning, focus_of
from grounded.model import Chunk, ParsingResult
from grounded.samples import write_sample_pdf
from tests.support.shared_parses import SharedParses

CLINSCI = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "long" / "cermine_web_example3_clinsci.pdf"

LEFT = ("Dosing of the study drug was adjusted to renal function in every cohort of the trial. "
        "Patients with severe renal impairment were excluded from the dose escalation phase. " * 3
        + "The maximum tolerated dose of the study drug in the expansion cohort was")
RIGHT = ("established at 40 mg per square metre given once weekly for six cycles. "
         "Neutropenia was the most common adverse event in all cohorts of the trial. " * 3
         + "Grade 4 neutropenia was reported in patients with prior radiotherapy and")
NEXT = ("resolved within two weeks without growth factor support in every case. "
        "Follow-up imaging was performed every three months for two years. " * 3)


def _break_pdf(path: Path) -> Path:
    """Two columns on page 1, then page 2: one sentence runs from the left column into the right,
    another from the right column onto page 2."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(56, 72, 290, 760), LEFT, fontsize=10)
    page.insert_textbox(pymupdf.Rect(310, 72, 544, 760), RIGHT, fontsize=10)
    doc.new_page().insert_textbox(pymupdf.Rect(56, 72, 544, 760), NEXT, fontsize=10)
    doc.save(path)
    doc.close()
    return path


def _inside(focus: Focus, chunk: Chunk, slack: float = 0.004) -> bool:
    """Every focus line span lies within one of the chunk's boxes on its page."""
    for box in focus.boxes:
        for s in box.spans or [box]:
            if not any(c.page == box.page and c.left - slack <= s.left and s.right <= c.right + slack
                       and c.top - slack <= s.top and s.bottom <= c.bottom + slack for c in chunk.boxes):
                return False
    return True


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ParsingResult, list[Chunk]]:
    pdf = write_sample_pdf(tmp_path_factory.mktemp("focus") / "guideline.pdf")
    root = grounded.parse(pdf)
    return pdf, root, list(grounded.chunk(root).chunks)


def _chunk_with(chunks: list[Chunk], words: str) -> Chunk:
    return next(c for c in chunks if words in " ".join(c.content.split()))


def test_a_sentence_across_a_column_and_a_page_break(tmp_path: Path) -> None:
    pdf = _break_pdf(tmp_path / "breaks.pdf")
    root = grounded.parse(pdf)
    chunks = list(grounded.chunk(root, max_tokens=512).chunks)
    col = _chunk_with(chunks, "maximum tolerated dose")
    focus = focus_of(col, "What was the maximum tolerated dose in the expansion cohort?", root=root)
    text = " ".join(" ".join(focus.texts()).split())
    assert "maximum tolerated dose" in text and "40 mg per square metre" in text, focus.texts()
    lefts = {s.left for b in focus.boxes for s in b.spans or [b]}
    assert min(lefts) < 0.3 and max(lefts) > 0.45, focus.boxes  # both columns
    page = _chunk_with(chunks, "resolved within two weeks")
    across = focus_of(page, "Did grade 4 neutropenia resolve without growth factor support?", root=root)
    assert {b.page for b in across.boxes} == {1, 2}, across.texts()
    assert _inside(focus, col) and _inside(across, page)


def test_table_row_list_item_numbers_and_negation_on_the_sample(sample: tuple[Path, ParsingResult, list[Chunk]]) -> None:
    pdf, root, chunks = sample
    row_chunk = _chunk_with(chunks, "Neoadjuvant chemotherapy + pembrolizumab")
    row = focus_of(row_chunk, "How long are neoadjuvant chemotherapy and pembrolizumab given?", root=root)
    assert any("6 months + 1 year" in t and "pembrolizumab" in t for t in row.texts()), row.texts()
    item_chunk = _chunk_with(chunks, "clinical review every")
    item = focus_of(item_chunk, "How often is the clinical review during the first three years?", pdf=pdf)
    assert item.texts()[0].startswith("clinical review every 3") or "clinical review every 3" in item.texts()[0]
    negated = focus_of(_chunk_with(chunks, "Breast MRI is not required"), "Is breast MRI required for every patient?",
                       root=root)
    assert "Breast MRI is not required for every patient." in negated.texts()
    for f, c in ((row, row_chunk), (item, item_chunk)):
        assert f.boxes and _inside(f, c) and f.method == "semantic"


def test_real_pdf_number_and_two_page_answer(shared_parses: SharedParses) -> None:
    root = shared_parses.tree(CLINSCI)
    chunks = list(grounded.chunk(root).chunks)
    hit = _chunk_with(chunks, "927-fold more selective")
    f = focus_of(hit, "How much more selective for the N-domain than the C-domain was compound 33RE?", root=root)
    assert any("927-fold more selective for the N-domain" in t for t in f.texts()) and _inside(f, hit)
    two = _chunk_with(chunks, "under 4 psi")
    g = focus_of(two, "Under what hydrogen pressure, and for how long, was the Cbz group removed?", root=root)
    assert "of hydrogen for 4-6 h" in " ".join(g.texts()) and {b.page for b in g.boxes} == {11, 12}
    assert _inside(g, two)
    shared_parses.assert_unchanged(root)


def test_a_1000_token_chunk_and_a_one_sentence_chunk(sample: tuple[Path, ParsingResult, list[Chunk]]) -> None:
    _, root, _ = sample
    big = max(grounded.chunk(root, max_tokens=1000).chunks, key=lambda c: len(c.content))
    assert len(big.content.split()) > 500
    f = focus_of(big, "sentinel lymph node biopsy", root=root)
    assert len(f.spans) >= 1 and sum(b - a for a, b in f.spans) < len(big.content) / 3 and _inside(f, big)
    one = Chunk("one", "Trastuzumab is given for 1 year.", body_start=0)
    with pytest.warns(FocusWarning, match="give root= or pdf="):  # no tree, no PDF: spans, no boxes, said so
        alone = focus_of(one, "how long is trastuzumab given", embed=None)
    assert alone.spans == ((0, len(one.content)),) and alone.method == "single" and alone.boxes == ()
    assert focus_of(big, "   ", root=root) == Focus((), (), "none", big.content)
