"""What the retrievers need of :mod:`grounded.search` (issue 31.3): the page filter of ``search``
(chunks touching the pages, applied in the query before the cut), its checks, and the whole-row
records of hits (``SearchIndex.rows`` / ``records``), over the run-once guideline index."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from grounded.cli.main import main
from grounded.errors import GroundedError
from grounded.io.chunk_codec import chunk_from_row
from grounded.search import PageFilterError, SearchIndex, page_numbers, pages_filter, parse_page_range, search
from tests.support.search_index import guideline_index, table_rows

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache

QUERY = "breast cancer therapy treatment patients"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    return SearchIndex(guideline_index(tmp_path_factory, "search-pages"))


def test_pages_keep_the_chunks_touching_them_before_the_cut(index: SearchIndex) -> None:
    # text mode: one list, so the filtered order is the unfiltered one restricted (hybrid normalises the
    # scores over the candidates it fused, which a filter changes)
    every = search(index, QUERY, 50, mode="text")
    assert any(len(h.pages) > 1 for h in every)
    for pages in ([2], [3, 4], range(1, 3)):
        hits = search(index, QUERY, 50, pages=pages, mode="text")
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in every if set(h.pages) & set(pages)], pages
        assert {p for h in search(index, QUERY, 50, pages=pages) for p in h.pages} & set(pages)  # the default (hybrid)
    (best,) = search(index, QUERY, 1, pages=[2], mode="text")
    assert 2 not in every[0].pages and 2 in best.pages  # filtered in the query, not after the top-1
    assert search(index, QUERY, 5, pages=[99]) == []


@pytest.mark.parametrize("pages", [[], [0], [-1], [True], ["2"], "12", [1.0]])
def test_bad_pages_are_refused(index: SearchIndex, pages: Any) -> None:
    with pytest.raises(ValueError, match="page"):
        search(index, QUERY, 3, pages=pages)
    with pytest.raises(ValueError, match="page"):
        pages_filter(pages)


def test_page_numbers_of_a_list_or_a_range() -> None:
    assert page_numbers() is None
    assert page_numbers([4, 2]) == [4, 2] and page_numbers(page_range=(2, 4)) == [2, 3, 4]
    assert pages_filter([4, 2, 4]) == "array_has_any(pages, [2, 4])"
    for bad in ({"page_range": (3, 2)}, {"page_range": (0, 1)}, {"page_range": (1,)}, {"page_range": (1, 2.0)},
                {"pages": [1], "page_range": (1, 2)}):
        with pytest.raises(ValueError, match="page"):
            page_numbers(**bad)


def test_records_read_every_field_of_the_rows(index: SearchIndex) -> None:
    hits = search(index, QUERY, 4)
    rows = {r["chunk_id"]: r for r in table_rows(Path(index.out)).to_pylist()}
    assert index.records(hits) == [chunk_from_row(rows[h.chunk_id]) for h in hits]
    assert set(index.rows([hits[0].chunk_id, "no-such-chunk"])) == {hits[0].chunk_id} and index.rows([]) == {}
    # a hit whose row is gone (a re-ingest published since) keeps the fields the hit carries
    gone = dataclasses.replace(hits[0], chunk_id="gone")
    (record,) = index.records([gone])
    assert record.id == "gone" and record.content == hits[0].text and tuple(record.pages) == hits[0].pages
    assert len(record.boxes) == len(hits[0].boxes) > 0


def test_page_range_is_the_retrievers_inclusive_range(index: SearchIndex) -> None:
    # issue 42 item 5: search(..., page_range=(3, 5)) raised TypeError
    for first, last in [(1, 2), (2, 4), (4, 4)]:
        expected = [h.chunk_id for h in search(index, QUERY, 20, mode="text", pages=range(first, last + 1))]
        hits = search(index, QUERY, 20, mode="text", page_range=(first, last))
        assert [h.chunk_id for h in hits] == expected and hits, (first, last)
        assert all(set(h.pages) & set(range(first, last + 1)) for h in hits)
    assert search(index, QUERY, 5, page_range=(90, 99)) == []


@pytest.mark.parametrize("bad", [
    {"page_range": (5, 3)}, {"page_range": (0, 2)}, {"page_range": (3,)}, {"page_range": 3}, {"page_range": "3-5"},
    {"page_range": (1, 2.0)}, {"page_range": (True, 2)}, {"pages": [1], "page_range": (1, 2)}, {"pages": 3},
])
def test_bad_page_ranges_are_a_typed_error(index: SearchIndex, bad: dict[str, Any]) -> None:
    with pytest.raises(PageFilterError, match="page"):
        search(index, QUERY, 3, **bad)
    with pytest.raises(PageFilterError, match="page"):
        page_numbers(**bad)
    assert issubclass(PageFilterError, ValueError) and issubclass(PageFilterError, GroundedError)


def test_parse_page_range_of_the_command_line() -> None:
    assert parse_page_range("3-5") == (3, 5) and parse_page_range("4") == (4, 4) and parse_page_range(" 2 - 3 ") == (2, 3)
    for bad in ["5-3", "0", "0-2", "x", "1-", "-2", "3-5-7", "", "1.5", "3,4"]:
        with pytest.raises(PageFilterError, match="FIRST-LAST"):
            parse_page_range(bad)


def test_cli_pages_filters_like_page_range(index: SearchIndex, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(index.out)
    for option, bounds in [("2-4", (2, 4)), ("4", (4, 4))]:
        capsys.readouterr()
        assert main(["search", out, QUERY, "-k", "20", "--mode", "text", "--pages", option, "--json"]) == 0
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        expected = [h.chunk_id for h in search(index, QUERY, 20, mode="text", page_range=bounds)]
        assert [x["chunk_id"] for x in lines] == expected and expected, option
    for bad in ["5-3", "0", "three"]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(["search", out, QUERY, "--pages", bad])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
        assert "--pages" in err and repr(bad) in err and "Traceback" not in err
