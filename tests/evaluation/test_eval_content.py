"""Content-extraction evaluation: Markdown element extraction, adjacency matching that makes
paragraph boundaries irrelevant, reading order, reference readers (Docling JSON, ICDAR cells)."""

from __future__ import annotations

import pytest

from grounded.evaluation.content_data import (
    DocumentContent,
    extract_markdown,
    read_docling_content,
    read_icdar_tables,
)
from grounded.evaluation.content_eval import aggregate, match_blocks, score_document
from grounded.evaluation.teds import table_to_html, teds
from tests.support.data import shared

PARAS = [
    "The committee reviewed the oncology guideline in March and approved the new dosing table.",
    "Patients older than seventy years need a reduced starting dose of the drug.",
    "Renal function must be checked before every cycle of chemotherapy.",
]


def test_extract_markdown_separates_element_types():
    md = (
        "# Title\n\nFirst paragraph\nstill first.\n\n- item one\n- item two\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```\n\n$$E = mc^2$$\n\n"
        "<table><tr><td>h</td></tr></table>\n\n![fig](img.png)\n\n## Next\nText after heading\n"
    )
    c = extract_markdown(md)
    assert c.text_blocks == ["# Title", "First paragraph\nstill first.", "- item one", "- item two", "## Next",
                             "Text after heading"]
    assert [table_to_html(t) for t in c.tables] == [
        "<table><tr><td>h</td></tr></table>",
        "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>",
    ]
    assert c.code == ["```python\nx = 1\n```"] and c.formulas == ["$$E = mc^2$$"]


def test_identical_blocks_match_one_to_one():
    ms = match_blocks(PARAS, list(PARAS))
    assert sorted((m.gt, m.pred) for m in ms) == [((0,), (0,)), ((1,), (1,)), ((2,), (2,))]
    assert all(m.ned == 0 for m in ms)


def test_paragraph_boundaries_do_not_matter():
    # the prediction cuts the first reference paragraph in two and merges the last two
    pred = [
        "The committee reviewed the oncology guideline in March",
        "and approved the new dosing table.",
        PARAS[1] + " " + PARAS[2],
    ]
    ms = match_blocks(PARAS, pred)
    pairs = sorted((m.gt, m.pred) for m in ms if m.gt and m.pred)
    assert pairs == [((0,), (0, 1)), ((1, 2), (2,))]
    assert all(m.ned == 0 for m in ms)
    s = score_document("d", DocumentContent(text_blocks=PARAS), DocumentContent(text_blocks=pred), tables=False)
    assert s.text_edit == 0.0 and s.reading_order_edit == 0.0


def test_text_edit_is_length_weighted_and_counts_misses():
    ref = DocumentContent(text_blocks=["abcdefghij", "klmnopqrst"])
    pred = DocumentContent(text_blocks=["abcdefghiX"])  # 1 substitution; second block missing
    s = score_document("d", ref, pred, tables=False)
    assert s.text_distance == 1 + 10 and s.text_length == 20
    assert s.text_edit == pytest.approx(11 / 20)
    assert s.unit_neds == [pytest.approx(0.1), 1.0]


def test_reading_order_edit_distance():
    ref = DocumentContent(text_blocks=PARAS)
    swapped = DocumentContent(text_blocks=[PARAS[1], PARAS[0], PARAS[2]])
    s = score_document("d", ref, swapped, tables=False)
    assert s.text_edit == 0.0
    assert s.reading_order_edit == pytest.approx(2 / 3)  # [0,1,2] vs [1,0,2]: two substitutions


def test_repeated_identical_blocks_keep_their_order():
    ref = DocumentContent(text_blocks=["Question one about dosing?", "Yes", "No", "Question two about renal function?",
                                       "Yes", "No"])
    s = score_document("d", ref, DocumentContent(text_blocks=list(ref.text_blocks)), tables=False)
    assert s.reading_order_edit == 0.0 and s.text_edit == 0.0


def test_tables_pair_by_content_and_missing_tables_score_zero():
    ref = extract_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\ntext\n\n| x | y |\n|---|---|\n| 7 | 8 |\n")
    pred = extract_markdown("| x | y |\n|---|---|\n| 7 | 8 |\n")
    s = score_document("d", ref, pred, text=False)
    assert s.table_teds == [0.0, 1.0] and s.table_s_teds == [0.0, 1.0]
    agg = aggregate([s])
    assert agg["teds"] == 0.5 and agg["gt_tables"] == 2 and agg["pred_tables"] == 1


def test_docling_reference_against_its_own_markdown():
    """Docling's .md export of the same document must score (almost) perfectly: a pipeline check."""
    folder = shared("pdfs", "docling_groundtruth")
    scores = []
    for js in sorted(folder.glob("*.json")):
        if js.name.endswith(".pages.meta.json"):
            continue
        ref = read_docling_content(js)
        pred = extract_markdown(js.with_suffix(".md").read_text(encoding="utf-8"))
        scores.append(score_document(js.stem, ref, pred))
    agg = aggregate(scores)
    assert agg["documents"] == 8
    assert agg["text_edit"] < 0.02
    assert agg["reading_order_edit"] == 0.0
    # Markdown cannot express cell spans, so TEDS stays below 1 where the reference table has spans
    assert 0.85 < agg["teds"] < 1.0


def test_icdar_structure_reader():
    path = shared("pdfs", "icdar2013_tables", "competition-dataset-eu", "eu-002-str.xml")
    (page, table), = read_icdar_tables(path)
    assert page == 1
    html = table_to_html(table)
    assert html.startswith("<table><tr><td></td><td>Q1</td><td>Q2</td><td>Q3</td><td>Q4</td><td>Total</td></tr><tr><td>2004</td>")
    assert teds(table, table) == 1.0


# -- display formulas (thesis Fig. A.1: display_formula Edit_dist) ----------------------------------
def test_formulas_are_normalized_paired_and_length_weighted():
    from grounded.evaluation.formulas import normalize_formula, score_formulas

    assert normalize_formula("$$\n E = m c^2 \n$$") == "E=mc^2" == normalize_formula("\\[E = mc^2\\]")
    ref = ["E = mc^2", "\\frac{a}{b}", "x_1 + x_2"]
    pred = ["$$x_1 + x_3$$", "$$E=mc^2$$", "$$\\sum_i y_i$$"]  # reordered, one typo, one extra, one missing
    s = score_formulas(ref, pred)
    assert (s.n_gt, s.n_pred, s.n_matched, s.n_gt_without_text) == (3, 3, 2, 0)
    # E=mc^2 exact; x_1+x_2 vs x_1+x_3 one substitution; \frac{a}{b} missing (11); \sum_iy_i extra (9)
    assert s.distance == 0 + 1 + 11 + 9 and s.length == 6 + 7 + 11 + 9
    assert s.edit == pytest.approx(21 / 33)
    assert sorted(s.neds) == [0.0, pytest.approx(1 / 7), 1.0, 1.0]


def test_formula_without_reference_text_is_counted_not_scored():
    from grounded.evaluation.formulas import score_formulas

    s = score_formulas([""], ["$$a+b$$"])
    assert s.edit is None and not s.scored and (s.n_gt, s.n_gt_without_text, s.n_pred) == (1, 1, 1)
    assert score_formulas([], ["$$a$$"]).edit is None  # no reference formula: nothing to score
    # one reference with text, one without: only the first is compared; the extra prediction counts
    s = score_formulas(["", "a+b"], ["$$a+b$$", "$$c$$"])
    assert s.scored and s.n_matched == 1 and s.distance == 1 and s.length == 4


def test_document_scores_and_aggregate_carry_the_formula_edit():
    ref = DocumentContent(text_blocks=PARAS[:1], formulas=["E = mc^2"])
    pred = extract_markdown(PARAS[0] + "\n\n$$\nE = mc^3\n$$\n")
    s = score_document("d", ref, pred, tables=False)
    assert s.text_edit == 0.0  # the formula is no text block
    assert s.to_dict()["formula_edit"] == pytest.approx(1 / 6) and s.to_dict()["n_pred_formulas"] == 1
    empty = score_document("e", DocumentContent(text_blocks=PARAS[:1], formulas=[""]), pred, tables=False)
    agg = aggregate([s, empty])
    assert agg["formula_edit"] == pytest.approx(1 / 6)  # the unscorable document adds nothing
    assert (agg["gt_formulas"], agg["gt_formulas_without_text"], agg["pred_formulas"]) == (2, 1, 2)


def test_docling_code_and_formula_reference_has_one_formula_without_text():
    """The shared reference's only display formula is `formula-not-decoded` (no LaTeX): counted, not scored."""
    ref = read_docling_content(shared("pdfs", "docling_groundtruth", "code_and_formula.json"))
    assert ref.formulas == [""]
