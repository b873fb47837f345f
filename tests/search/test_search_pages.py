"""What the retrievers need of :mod:`grounded.search` (issue 31.3): the page filter of ``search``
(chunks touching the pages, applied in the query before the cut), its checks, and the whole-row
records of hits (``SearchIndex.rows`` / ``records``), over the run-once guideline index."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from grounded.io.chunk_codec import chunk_from_row
from grounded.search import SearchIndex, page_numbers, pages_filter, search
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
