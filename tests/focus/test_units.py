"""The candidate units of a focus and their choice, on constructed texts (no PDF): sentences with
abbreviations, table rows and their header, list items, headings, a sentence interrupted by a caption,
and the queries a user may type (empty, one word, 500 words, CJK), lexical and semantic."""

from __future__ import annotations

import numpy as np
import pytest

from grounded.focus import FocusSettings, focus_texts
from grounded.focus.lexical import query_terms, words
from grounded.focus.units import units

PROSE = ("Adjuvant therapy was well tolerated. Smith et al. reported 12 grade 3 events in Fig. 2, e.g. neutropenia. "
         "Trastuzumab did not improve overall survival in node-negative disease. "
         "Overall survival improved with pertuzumab in node-positive disease.")
TABLE = ("Regimens by subtype\n\nSubtype | Regimen | Duration\nHER2+ | Paclitaxel + trastuzumab | 3 months + 1 year\n"
         "Triple-negative | Pembrolizumab with chemotherapy | 6 months + 1 year")
LIST = "Follow-up includes:\n\n1. clinical review every 3-6 months;\n2. annual mammography;\n3. bone density\nmeasurement before AI therapy."


def spans_text(text: str, spans: tuple[tuple[int, int], ...]) -> list[str]:
    return [text[a:b] for a, b in spans]


def test_sentences_are_not_cut_after_abbreviations() -> None:
    got = [PROSE[u.start:u.end] for u in units(PROSE)]
    assert got == [
        "Adjuvant therapy was well tolerated.",
        "Smith et al. reported 12 grade 3 events in Fig. 2, e.g. neutropenia.",
        "Trastuzumab did not improve overall survival in node-negative disease.",
        "Overall survival improved with pertuzumab in node-positive disease.",
    ]


def test_table_rows_list_items_and_headings() -> None:
    kinds = [(u.kind, TABLE[u.start:u.end].split(" | ")[0]) for u in units(TABLE)]
    assert kinds == [("heading", "Regimens by subtype"), ("header", "Subtype"), ("row", "HER2+"), ("row", "Triple-negative")]
    items = [(u.kind, LIST[u.start:u.end]) for u in units(LIST)]
    assert items[1:] == [("item", "1. clinical review every 3-6 months;"), ("item", "2. annual mammography;"),
                         ("item", "3. bone density\nmeasurement before AI therapy.")]
    # a chunk that begins inside a table: its first row is data, not a header
    assert {u.kind for u in units(TABLE.split("\n\n", 1)[1])} == {"row"}


def test_prepended_headings_are_context_never_focus() -> None:
    text = "Treatment > Adjuvant\n\nTrastuzumab is given for 1 year."
    body_start = text.index("Trastuzumab")
    assert [u.kind for u in units(text, body_start)] == ["heading", "sentence"]
    (choice,) = focus_texts([(text, body_start)], "adjuvant treatment", embed=None)
    assert spans_text(text, choice.spans) == ["Trastuzumab is given for 1 year."]  # the one sentence, never the heading
    only_heading = "Adjuvant treatment\n\n"
    assert focus_texts([(only_heading, len(only_heading))], "adjuvant treatment", embed=None)[0].spans == ()


def test_a_sentence_interrupted_by_a_caption_is_one_unit() -> None:
    text = ("The N-selective inhibitors could be\n\nFigure 7 Binding of compound 33RE.\n\n"
            "a possible approach against tissue fibrosis.")
    sentence = next(u for u in units(text) if u.rest)
    assert sentence.text(text) == "The N-selective inhibitors could be a possible approach against tissue fibrosis."
    (choice,) = focus_texts([(text, 0)], "approach against tissue fibrosis", embed=None)
    assert spans_text(text, choice.spans) == ["The N-selective inhibitors could be", "a possible approach against tissue fibrosis."]


def test_lexical_focus_numbers_negation_rows_and_items() -> None:
    def focus(text: str, query: str) -> list[str]:
        return spans_text(text, focus_texts([(text, 0)], query, embed=None)[0].spans)

    assert focus(PROSE, "How many grade 3 events were reported?") == [
        "Smith et al. reported 12 grade 3 events in Fig. 2, e.g. neutropenia."]
    assert focus(PROSE, "Did trastuzumab not improve survival?") == [
        "Trastuzumab did not improve overall survival in node-negative disease."]
    assert focus(TABLE, "How long is pembrolizumab given for triple-negative disease?") == [
        "Subtype | Regimen | Duration", "Triple-negative | Pembrolizumab with chemotherapy | 6 months + 1 year"]  # with its header
    assert focus(LIST, "when is bone density measured") == ["3. bone density\nmeasurement before AI therapy."]
    assert "not" in query_terms("did not improve").weights and words("Patients treated") == ["patient", "treat"]


@pytest.mark.parametrize("query", ["", "   \t\n"])
def test_an_empty_query_gives_no_focus_never_an_error(query: str) -> None:
    assert focus_texts([(PROSE, 0)], query, embed=None)[0].spans == ()
    assert focus_texts([(PROSE, 0)], query)[0].method == "none"


def test_odd_queries_one_word_500_words_cjk() -> None:
    (one,) = focus_texts([(PROSE, 0)], "pertuzumab", embed=None)
    assert spans_text(PROSE, one.spans) == ["Overall survival improved with pertuzumab in node-positive disease."]
    long_query = " ".join(["survival"] * 250 + ["pertuzumab", "node-positive"] * 125)
    (long,) = focus_texts([(PROSE, 0)], long_query)
    assert long.method == "semantic" and spans_text(PROSE, long.spans)[0].startswith("Overall survival improved")
    (cjk,) = focus_texts([(PROSE, 0)], "乳腺癌的治疗")  # no lexical evidence: the semantic score alone chooses
    assert cjk.method == "semantic" and 1 <= len(cjk.spans) <= FocusSettings().max_units
    assert focus_texts([(PROSE, 0)], "乳腺癌的治疗", embed=None)[0].spans == ()  # lexical: no evidence, no focus


def test_one_sentence_chunk_is_its_own_focus_and_the_choice_follows_the_scores() -> None:
    one = "Trastuzumab is given for 1 year."
    assert focus_texts([(one, 0)], "anything at all", embed=None)[0].spans == ((0, len(one)),)

    def embed(texts: list[str]) -> np.ndarray:  # a constructed embedder: the query is close to sentence 2 and 3
        table = {"q": [1.0, 0.0], PROSE.split(". ")[0] + ".": [0.0, 1.0]}
        rows = [table.get(t, [0.95, 0.31] if "did not" in t else [0.9, 0.44] if "survival" in t else [0.2, 0.98])
                for t in texts]
        return np.asarray(rows, dtype=np.float32)

    (choice,) = focus_texts([(PROSE, 0)], "q", embed=embed)
    assert spans_text(PROSE, choice.spans) == [  # the two best, one span (one line: only a space between them)
        "Trastuzumab did not improve overall survival in node-negative disease. "
        "Overall survival improved with pertuzumab in node-positive disease."]
    (tight,) = focus_texts([(PROSE, 0)], "q", embed=embed, settings=FocusSettings(gap=0.0))
    assert spans_text(PROSE, tight.spans) == ["Trastuzumab did not improve overall survival in node-negative disease."]
