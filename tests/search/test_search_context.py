"""Issue 32 item 3: the heading path is part of what search reads (the full-text index and the
ingest embedding) while the stored chunk text stays the body."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from grounded.chunking.strategies.semantic import minilm_embedder
from grounded.ingest.lance_sink import SEARCH_COLUMN
from grounded.ingest.rows import embed_text, search_text
from grounded.ingest.worker import embed_window
from grounded.model.chunk_fields import search_keys
from grounded.search import SearchIndex, search
from tests.support.search_index import derived_index, guideline_index, table_rows

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "search-context")


def test_search_text_is_the_section_then_the_body() -> None:
    assert search_keys() == ("section",)  # the field table's `search` column
    assert search_text({"text": "Body text.", "body_start": 0, "section": "2. Staging > 2.1 Imaging"}) == \
        "2. Staging > 2.1 Imaging\nBody text."
    # a chunk with prepended headings (hierarchical): its body, after the section once
    assert search_text({"text": "2.1 Imaging\nBody text.", "body_start": 12, "section": "2.1 Imaging"}) == \
        "2.1 Imaging\nBody text."
    assert search_text({"text": "Body text.", "body_start": 0, "section": ""}) == "Body text."


def test_the_index_reads_the_heading_path_and_the_text_stays_the_body(out: Path, tmp_path: Path) -> None:
    table = table_rows(out)
    rows = table.to_pylist()
    assert SearchIndex(out).text_column() == SEARCH_COLUMN
    for r in rows:
        assert r[SEARCH_COLUMN] == search_text(r) and r["text"][r["body_start"]:] == r["body"]
    body_only = derived_index(tmp_path / "body-only", table.drop_columns([SEARCH_COLUMN]))  # the index before
    assert SearchIndex(body_only).text_column() == "text"

    def first_under_heading(index: Path) -> list[str]:
        """The leaf headings whose words, searched, give a chunk under that heading first."""
        found = []
        for heading in sorted({r["heading_path"][-1] for r in rows if r["heading_path"]}):
            words = re.sub(r"^[\d.]+\s+", "", heading)  # "2.2.2 Magnetic resonance imaging" -> its words
            hits = search(index, words, 1, mode="text")
            if hits and hits[0].heading_path[-1:] == (heading,):
                found.append(heading)
        return found

    with_context, without = first_under_heading(out), first_under_heading(body_only)
    assert len(with_context) >= len(without) + 3, (with_context, without)
    assert set(without) <= set(with_context)  # the heading path adds words, it takes none away
    # a chunk found first only through its heading path still shows its stored text, not the search text
    heading = sorted(set(with_context) - set(without))[0]
    (hit,) = search(out, re.sub(r"^[\d.]+\s+", "", heading), 1, mode="text")
    stored = next(r for r in rows if r["chunk_id"] == hit.chunk_id)
    assert hit.heading_path[-1:] == (heading,)
    assert hit.text == stored["text"] and hit.body == stored["body"] != stored[SEARCH_COLUMN]


def test_ingest_embeds_the_search_text_fitted_to_the_window(out: Path) -> None:
    """The vector is of the heading path + body (tests/ingest/test_embed_window.py: the path trimmed
    to the room the body leaves in MiniLM's window)."""
    count, window = embed_window("minilm")
    rows = table_rows(out).to_pylist()
    row = next(r for r in rows if r["section"] and embed_text(r, count, window) == (search_text(r), 0))
    stored = np.asarray(row["vector"], dtype=np.float32)
    with_context, body_only = minilm_embedder()([search_text(row), row["body"]])
    assert float(stored @ with_context) > 0.999 > float(stored @ body_only)
    for r in rows:  # every vector is of the fitted text (checked on the rows whose path was trimmed)
        fitted, _ = embed_text(r, count, window)
        if fitted != search_text(r):
            (vector,) = minilm_embedder()([fitted])
            assert float(np.asarray(r["vector"], dtype=np.float32) @ vector) > 0.999
