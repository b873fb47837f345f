"""The development question set of issue 32 (``benchmarks/data/search_questions.jsonl``): every
excerpt occurs on its page of the real PDF, the set has the promised shape, and the benchmark's
coverage rule (``benchmarks/search_questions.py``) holds on real text."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from types import ModuleType

import pymupdf
import pytest

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


def test_every_excerpt_is_on_its_page() -> None:
    bench = _bench()
    missing = []
    for pdf, group in _by_pdf(bench.load_questions()).items():
        with pymupdf.open(str(shared(*pdf.split("/")))) as doc:
            pages: dict[int, list] = {}
            for q in group:
                for a in q.answers:
                    assert 1 <= a.page <= doc.page_count, (q.id, a.page)
                    if a.page not in pages:
                        pages[a.page] = bench.page_words(doc, a.page)
                    if bench.excerpt_word_ids(pages[a.page], a.excerpt) is None:
                        missing.append((q.id, a.page, a.excerpt))
    assert not missing, missing


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


@pytest.mark.parametrize("excerpt, found", [("The FAA must receive comments on this proposed AD by September 21, 2020.", True),
                                            ("The FAA must receive comments by September 21", False)])
def test_excerpt_search_is_exact_in_order(excerpt: str, found: bool) -> None:
    bench = _bench()
    with pymupdf.open(str(shared("long", "federal-register-2020-17221.pdf"))) as doc:
        assert (bench.excerpt_word_ids(bench.page_words(doc, 1), excerpt) is not None) is found


def _by_pdf(questions: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for q in questions:
        out.setdefault(q.pdf, []).append(q)
    return out
