"""Hand-computed cases for the evaluation metrics: character spans, Chroma retrieval metrics,
edit distances, TEDS. (DLA F1 cases live in test_eval_dla.py.)"""

from __future__ import annotations

import math

import pytest

from grounded.evaluation.retrieval_metrics import ChunkRegion, precision_omega, score_question, summarize
from grounded.evaluation.spans import covered, intersection, overlaps, subtract, total, union
from grounded.evaluation.teds import (
    Cell,
    s_teds,
    split_markdown_row,
    table_from_cells,
    table_from_rows,
    table_to_html,
    tables_from_html,
    tables_from_markdown,
    teds,
)
from grounded.evaluation.text_metrics import edit_distance, n_gld, ned, normalize_text


# -- spans ----------------------------------------------------------------------------------------
def test_span_set_arithmetic():
    assert union([(5, 8), (0, 2), (2, 3), (7, 10), (4, 4)]) == [(0, 3), (5, 10)]
    assert total([(0, 10), (5, 15)]) == 20  # multiset: the overlap counts twice
    assert covered([(0, 10), (5, 15)]) == 15  # set
    assert intersection([(0, 10), (20, 30)], [(5, 25)]) == [(5, 10), (20, 25)]
    assert subtract([(0, 10)], [(2, 4), (6, 7)]) == [(0, 2), (4, 6), (7, 10)]
    assert subtract([(0, 10)], [(0, 10)]) == []
    assert overlaps((0, 5), (5, 9)) is False
    assert overlaps((0, 5), (5, 9), touching=True) is True


# -- Chroma retrieval metrics -------------------------------------------------------------------
def test_score_question_hand_computed():
    refs = [(10, 20), (40, 50)]  # 20 relevant characters
    retrieved = [ChunkRegion("a", ((0, 15),)), ChunkRegion("a", ((45, 60),))]
    s = score_question(refs, "a", retrieved)
    # hit = 5 (10..15) + 5 (45..50) = 10; retrieved = 15 + 15 = 30; missed = 5 + 5 = 10
    assert s.recall == pytest.approx(10 / 20)
    assert s.precision == pytest.approx(10 / 30)
    assert s.iou == pytest.approx(10 / (30 + 10))


def test_overlap_duplicates_count_against_precision_not_recall():
    refs = [(10, 20)]
    one = [ChunkRegion("a", ((0, 30),))]
    twice = [ChunkRegion("a", ((0, 30),)), ChunkRegion("a", ((5, 25),))]  # overlapping chunks
    s1, s2 = score_question(refs, "a", one), score_question(refs, "a", twice)
    assert s1.recall == s2.recall == 1.0
    assert s1.precision == pytest.approx(10 / 30)
    assert s2.precision == pytest.approx(10 / 50)  # 30 + 20 characters retrieved, 10 relevant
    assert s2.iou == pytest.approx(10 / (50 + 0))


def test_chunks_of_other_corpora_are_retrieved_noise():
    refs = [(0, 10)]
    retrieved = [ChunkRegion("a", ((0, 10),)), ChunkRegion("b", ((0, 10),))]  # same offsets, other corpus
    s = score_question(refs, "a", retrieved)
    assert s.recall == 1.0
    assert s.precision == pytest.approx(0.5)
    assert s.iou == pytest.approx(0.5)


def test_extra_chars_weigh_but_never_hit():
    refs = [(0, 10)]
    s = score_question(refs, "a", [ChunkRegion("a", ((0, 10),), extra_chars=10)])
    assert (s.recall, s.precision, s.iou) == (1.0, 0.5, 0.5)


def test_nothing_retrieved_scores_zero():
    s = score_question([(0, 10)], "a", [])
    assert (s.recall, s.precision, s.iou) == (0.0, 0.0, 0.0)


def test_precision_omega_uses_union_of_touching_chunks():
    refs = [(10, 20), (100, 110)]
    chunks = [
        ChunkRegion("a", ((0, 30),)),
        ChunkRegion("a", ((20, 50),)),  # abuts the first reference only
        ChunkRegion("a", ((15, 40),)),  # overlaps the first chunk
        ChunkRegion("a", ((60, 80),)),  # far away
        ChunkRegion("b", ((0, 200),)),  # other corpus
    ]
    # touching: chunks 0 and 2 -> union (0, 40) = 40 chars, hit 10; second reference uncovered (+10)
    om, n = precision_omega(refs, "a", chunks)
    assert n == 2
    assert om == pytest.approx(10 / (40 + 10))
    # Chroma's quirk: the abutting chunk (20, 50) counts as touching -> union (0, 50)
    om_c, n_c = precision_omega(refs, "a", chunks, touching=True)
    assert n_c == 3
    assert om_c == pytest.approx(10 / (50 + 10))


def test_precision_omega_zero_without_hits():
    assert precision_omega([(0, 5)], "a", [ChunkRegion("a", ((10, 20),))]) == (0.0, 0)


def test_summarize_population_std():
    s = summarize({"recall": [1.0, 0.0, 0.5, 0.5], "iou": [0.2, 0.2, 0.2, 0.2]})
    assert s.n_questions == 4
    assert s.mean["recall"] == pytest.approx(0.5)
    assert s.std["recall"] == pytest.approx(math.sqrt((0.25 + 0.25 + 0 + 0) / 4))
    assert s.std["iou"] == pytest.approx(0.0)
    with pytest.raises(ValueError):
        summarize({"a": [1.0], "b": [1.0, 2.0]})


def test_chunk_region_rejects_bad_spans():
    with pytest.raises(ValueError):
        ChunkRegion("a", ((5, 2),))
    with pytest.raises(ValueError):
        ChunkRegion("a", ((0, 2),), extra_chars=-1)


# -- edit distances ------------------------------------------------------------------------------
def test_edit_distances_hand_computed():
    assert edit_distance("kitten", "sitting") == 3
    assert ned("kitten", "sitting") == pytest.approx(3 / 7)
    assert n_gld("kitten", "sitting") == pytest.approx(2 * 3 / (6 + 7 + 3))
    assert ned("", "") == 0.0 and n_gld("", "") == 0.0
    assert ned("abc", "") == 1.0 and n_gld("abc", "") == 1.0
    # sequences (reading order): one transposition of two neighbours = 2 substitutions
    assert edit_distance([0, 1, 2, 3], [0, 2, 1, 3]) == 2
    assert ned([0, 1, 2, 3], [0, 2, 1, 3]) == pytest.approx(0.5)


def test_normalize_text_drops_markup_whitespace_and_punctuation():
    assert normalize_text("## The *big* [cat](http://x.y)!\n- item, two") == "Thebigcatitemtwo"
    assert normalize_text("<b>Ａ</b> 1.5") == "A15"  # NFKC folds the full-width letter


# -- TEDS ------------------------------------------------------------------------------------------
def test_teds_hand_computed():
    a = table_from_rows([["a", "b"]])  # table, tr, td, td = 4 nodes
    assert teds(a, a) == 1.0
    # one cell text differs completely: rename cost NED("b", "c") = 1 -> 1 - 1/4
    b = table_from_rows([["a", "c"]])
    assert teds(a, b) == pytest.approx(0.75)
    assert s_teds(a, b) == 1.0
    # half the characters of one cell differ: cost 0.5 -> 1 - 0.5/4
    c = table_from_rows([["a", "bx"]])
    d = table_from_rows([["a", "by"]])
    assert teds(c, d) == pytest.approx(1 - 0.5 / 4)
    # an extra cell: one insertion over max(4, 5) nodes
    e = table_from_rows([["a", "b", "x"]])
    assert teds(a, e) == pytest.approx(0.8)
    assert s_teds(a, e) == pytest.approx(0.8)
    # an extra row with one cell: two insertions over 6 nodes
    f = table_from_rows([["a", "b"], ["z"]])
    assert teds(a, f) == pytest.approx(1 - 2 / 6)


def test_teds_spans_matter_in_both_variants():
    spanned = table_from_cells([Cell(0, 0, "h", colspan=2), Cell(1, 0, "1"), Cell(1, 1, "2")])
    flat = table_from_rows([["h", ""], ["1", "2"]])
    # spanned: table, tr, td, tr, td, td = 6 nodes; flat has 7. Best edit: rename the spanned cell
    # (span differs: 1) and insert the empty cell (1) -> 1 - 2/7
    assert s_teds(spanned, flat) == pytest.approx(1 - 2 / 7)
    assert teds(spanned, flat) == pytest.approx(1 - 2 / 7)


def test_markdown_cells_are_plain_text():
    assert split_markdown_row("|**Total**|Other<br>trade, a \\| b|x\\_y|<b>z</b>|") == ["Total", "Other trade, a | b", "x_y", "z"]


def test_html_and_markdown_tables_read_alike():
    html = "<table><thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr><td>1</td><td>2<br/>3</td></tr></tbody></table>"
    md = "| A | B |\n|---|:-:|\n| 1 | 2 3 |\n"
    (h,) = tables_from_html(html)
    (m,) = tables_from_markdown(md)
    assert table_to_html(h) == table_to_html(m) == "<table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2 3</td></tr></table>"
    assert teds(h, m) == 1.0
