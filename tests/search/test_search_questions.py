"""The development question set of issues 32 and 40 (``benchmarks/data/search_questions.jsonl``): every
excerpt occurs where its answer says on the real PDF (on its page, or across its page break), the set has
the promised shape (table, list and multi-page answers included), and the benchmark's coverage rule and
multi-page excerpt rule (``benchmarks/search_questions.py``) hold on real text and on a constructed PDF."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pymupdf
import pytest

from grounded.model.boxes import ParsingBoundingBox
from tests.support.data import REPO, shared


def _bench() -> ModuleType:
    """``benchmarks/search_questions.py`` (the benchmarks folder is no package)."""
    name = "search_questions_bench"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "search_questions.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_every_excerpt_is_where_its_answer_says() -> None:
    """On its page as one run of the page's words; a multi-page answer's head closing a text block of its
    first page and its tail opening one on the next (both parts non-empty)."""
    bench = _bench()
    missing = []
    for pdf, group in _by_pdf(bench.load_questions()).items():
        with pymupdf.open(str(shared(*pdf.split("/")))) as doc:
            pages: dict[int, list] = {}
            for q in group:
                for a in q.answers:
                    assert a.page >= 1 and a.pages[-1] <= doc.page_count, (q.id, a.page, a.end_page)
                    found = bench.answer_word_ids(doc, a, pages)
                    if found is None or sorted(found) != list(a.pages) or not all(found.values()):
                        missing.append((q.id, a.page, a.end_page, a.excerpt))
    assert not missing, missing


def test_the_set_has_table_list_and_multipage_answers() -> None:
    """Issue 40 item 4: answers in a table row, a list item and a sentence across a page break, marked by
    ``kind``; a multi-page answer (and only it) names the page after its first as ``end_page``."""
    bench = _bench()
    answers = [a for q in bench.load_questions() for a in q.answers]
    kinds = Counter(a.kind for a in answers)
    assert kinds["table"] >= 8 and kinds["list"] >= 6 and kinds["multipage"] >= 6, kinds
    assert set(kinds) <= set(bench.KINDS), kinds
    assert all((a.kind == "multipage") == (a.end_page is not None) for a in answers)
    assert all(a.end_page == a.page + 1 for a in answers if a.end_page is not None)


def test_the_question_set_lines_load_as_written(tmp_path: Path) -> None:
    """A line without ``kind``/``end_page`` is running text on one page; a wrong kind or an end page
    that is not the next page is refused, naming the file and line."""
    bench = _bench()
    plain = {"id": "x-01", "pdf": "long/a.pdf", "question": "Q?", "answers": [{"page": 2, "excerpt": "e"}]}
    multi = {"id": "x-02", "pdf": "long/a.pdf", "question": "Q?",
             "answers": [{"page": 2, "end_page": 3, "excerpt": "e f", "kind": "multipage"}]}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(plain) + "\n\n" + json.dumps(multi) + "\n", encoding="utf-8")
    first, second = bench.load_questions(path)
    assert first.answers == (bench.Answer(2, "e"),) and first.answers[0].kind == "text"
    assert list(first.answers[0].pages) == [2]
    assert second.answers == (bench.Answer(2, "e f", end_page=3, kind="multipage"),)
    assert list(second.answers[0].pages) == [2, 3]
    for answer, cause in (({"page": 2, "excerpt": "e", "kind": "figure"}, "answer kind 'figure'"),
                          ({"page": 2, "end_page": 4, "excerpt": "e", "kind": "multipage"}, "end_page 4"),
                          ({"page": 2, "end_page": 2, "excerpt": "e", "kind": "multipage"}, "end_page 2")):
        path.write_text(json.dumps(plain) + "\n" + json.dumps({**plain, "answers": [answer]}) + "\n", encoding="utf-8")
        with pytest.raises(bench.QuestionSetError, match=f"q.jsonl:2: {cause}"):
            bench.load_questions(path)


def test_the_set_has_the_promised_shape() -> None:
    questions = _bench().load_questions()
    assert len(questions) >= 60
    assert len({q.id for q in questions}) == len(questions)
    per_pdf = Counter(q.pdf for q in questions)
    assert len(per_pdf) >= 6 and sum(p.startswith("long/") for p in per_pdf) >= 2, per_pdf
    for q in questions:  # a question, never the excerpt copied
        assert q.question.endswith("?") and q.answers, q.id
        assert all(q.question.lower() not in a.excerpt.lower() for a in q.answers), q.id


def test_at_least_half_the_questions_use_other_words() -> None:
    """"Other words": under half of the question's content words (4+ letters) occur in the excerpt."""
    bench = _bench()
    reworded = 0
    questions = bench.load_questions()
    for q in questions:
        asked = {w for w in bench.words(q.question) if len(w) >= 4}
        said = {w for a in q.answers for w in bench.words(a.excerpt)}
        reworded += bool(asked) and len(asked & said) < len(asked) / 2
    assert reworded >= len(questions) / 2, reworded


def test_the_coverage_rule_on_real_text() -> None:
    bench = _bench()
    answer = bench.Answer(2, "Indonesia, resulting in 189 fatalities")
    body = "Hatta International Airport in Jakarta,\nIndonesia, resulting in 189 fatalities. Investigation"
    assert bench.covers(body, [2], answer)
    assert not bench.covers(body, [3], answer)  # another page
    assert bench.covers("Jakarta, Indonesia, resulting in", [2], answer)  # 3 of 5 words: half, at least 3
    assert not bench.covers("resulting in 189", [1, 3], answer)
    assert not bench.covers("Indonesia, resulting", [2], answer)  # 2 words: under the floor of 3
    across = bench.Answer(1, "after takeoff from Soekarno- Hatta International Airport in Jakarta, Indonesia",
                          end_page=2, kind="multipage")  # fedreg-21: "Soekarno-" ends page 1's last column
    assert bench.covers(body, [2], across)  # the page-2 part holds 6 of its 10 words
    assert not bench.covers("accident after takeoff from Soekarno-", [1], across)  # its page-1 part: 4 of 10, under half
    assert bench.covers("takeoff from Soekarno- Hatta International", [1, 2], across)  # a chunk across the break: 5 of 10
    assert not bench.covers(body, [3], across)


@pytest.mark.parametrize("excerpt, found", [("The FAA must receive comments on this proposed AD by September 21, 2020.", True),
                                            ("The FAA must receive comments by September 21", False)])
def test_excerpt_search_is_exact_in_order(excerpt: str, found: bool) -> None:
    bench = _bench()
    with pymupdf.open(str(shared("long", "federal-register-2020-17221.pdf"))) as doc:
        assert (bench.excerpt_word_ids(bench.page_words(doc, 1), excerpt) is not None) is found


_SENTENCE = "When the infusion is stopped early, the nurse records the time and the reason in the chart before the next dose."


def _sentence_across_pages_pdf(path: Path) -> Path:
    """Two pages: page 1 a paragraph, then a paragraph whose last sentence (:data:`_SENTENCE`) stops at
    the foot of the page after "and the", a running foot; page 2 a running head, then the sentence's end
    opening the page's text, then more text in the same paragraph."""
    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_textbox(pymupdf.Rect(72, 80, 520, 200), "Renal dosing. Patients with reduced clearance need care. "
                         "Halve the dose when clearance falls below thirty; the trough level is checked daily.", fontsize=11)
    first.insert_textbox(pymupdf.Rect(72, 640, 520, 760), "Monitoring is part of every plan. " + _SENTENCE.split(" reason")[0],
                         fontsize=11)
    first.insert_text((72, 810), "Page 1 of 2 Renal guide", fontsize=8)
    second = doc.new_page()
    second.insert_text((72, 40), "Renal guide continued", fontsize=8)
    second.insert_textbox(pymupdf.Rect(72, 80, 520, 200), "reason" + _SENTENCE.split(" reason")[1] + " Other notes follow here.",
                          fontsize=11)
    doc.save(path)
    doc.close()
    return path


def test_a_sentence_across_a_page_break_is_one_run(tmp_path: Path) -> None:
    """The multi-page rule on a constructed PDF: the sentence's head closes page 1's last text block, its
    tail opens page 2's text -- found, each page's part where it is; the running foot and head between
    them are no part of it (the two pages' words simply concatenated do not hold the sentence)."""
    bench = _bench()
    pdf = _sentence_across_pages_pdf(tmp_path / "across.pdf")
    answer = bench.Answer(1, _SENTENCE, end_page=2, kind="multipage")
    with pymupdf.open(str(pdf)) as doc:
        first, second = bench.page_words(doc, 1), bench.page_words(doc, 2)
        found = bench.answer_word_ids(doc, answer)
        assert found is not None and sorted(found) == [1, 2]
        assert [t for i in sorted(found[1]) for t in first[i][2]] == bench.words(_SENTENCE.split(" reason")[0])
        assert [t for i in sorted(found[2]) for t in second[i][2]] == bench.words("reason" + _SENTENCE.split(" reason")[1])
        assert bench.excerpt_word_ids(first + second, _SENTENCE) is None  # "Page 1 of 2 Renal guide ..." between
        page_two = ParsingBoundingBox(2, 0.0, 0.0, 1.0, 1.0)  # a hit highlighting all of page 2
        assert bench.highlight_precision(doc, [page_two], [answer], {}) == pytest.approx(8 / 15)  # 8 of its 15 words


@pytest.mark.parametrize("excerpt, end_page, why", [
    (_SENTENCE, None, "one page holds only part of it"),
    ("Halve the dose when clearance falls reason in the chart before the next dose.", 2,
     "its head stops inside page 1's first paragraph, which closes no block"),
    ("When the infusion is stopped early, the nurse records the time and the chart before the next dose.", 2,
     "its tail starts inside page 2's paragraph, not where the page's text opens"),
    ("reason in the chart before the next dose. When the infusion is stopped early, the nurse records the time and the", 2,
     "the two parts in the wrong order"),
    ("When the infusion is stopped early, the nurse records the date and the reason in the chart before the next dose.", 2,
     "a word that is not the PDF's"),
    ("Halve the dose when clearance falls below thirty; the trough level is checked daily.", 2,
     "a sentence that ends on page 1 does not run on to page 2"),
])
def test_what_is_not_a_sentence_across_the_page_break(tmp_path: Path, excerpt: str, end_page: int | None, why: str) -> None:
    bench = _bench()
    pdf = _sentence_across_pages_pdf(tmp_path / "across.pdf")
    with pymupdf.open(str(pdf)) as doc:
        assert bench.answer_word_ids(doc, bench.Answer(1, excerpt, end_page=end_page)) is None, why


def test_block_edges_follow_the_page_words() -> None:
    """One ``(opens, closes)`` per page word, hyphen-joined words included (a real two-column page with
    line-end hyphens), and as many block starts as block ends."""
    bench = _bench()
    with pymupdf.open(str(shared("long", "cermine_web_example3_clinsci.pdf"))) as doc:
        edges, pwords = bench.block_edges(doc, 6), bench.page_words(doc, 6)
        raw = doc[5].get_text("words")
    assert len(edges) == len(pwords) < len(raw)  # "reorienta-" + "tion", "anti-" + "fibrotic", ... joined
    assert sum(o for o, _ in edges) == sum(c for _, c in edges) == len({w[5] for w in raw})
    assert edges[0][0] and edges[-1][1]


def _by_pdf(questions: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for q in questions:
        out.setdefault(q.pdf, []).append(q)
    return out
