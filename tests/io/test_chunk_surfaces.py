"""One chunk through every surface and back: chunks.jsonl, chunks.json, an ingest Parquet row, a
LanceDB row, a LlamaIndex node (flat and nested metadata), a LangChain document -> the same record,
field by field (issue 22)."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grounded.errors import SchemaError
from grounded.io.codec import load_chunking_result, save_chunking_result, write_chunks_jsonl
from grounded.metadata import (
    boxes_from_metadata,
    boxes_to_metadata,
    chunk_from_metadata,
    chunk_metadata,
    chunk_of,
    part_fields,
    text_hash,
)
from grounded.model import Chunk, ChunkingResult, ParsingBoundingBox
from grounded.model.chunk_fields import FIELDS, LIST_KEYS, embed_hidden_keys, llm_hidden_keys


def _box(page: int, top: float, lines: int, element: str, *, heading: bool = False) -> ParsingBoundingBox:
    spans = [ParsingBoundingBox(page, 0.1, round(top + 0.02 * i, 5), 0.9, round(top + 0.02 * i + 0.015, 5)) for i in range(lines)]
    bottom = spans[-1].bottom if spans else round(top + 0.015, 5)
    return ParsingBoundingBox(page, 0.1, top, 0.9, bottom, spans=spans if lines > 1 else [], mode="line",
                              element_id=element, is_heading=heading)


def text_chunk() -> Chunk:
    """A chunk of the chunker with a heading prepended, boxes on pages 3 and 4 with line spans, and
    two keys of the caller's own (kept in the record's ``extra``)."""
    heading = "2 Methods"
    body = "Patients were randomised.\nDosing followed the protocol on the next page."
    content = f"{heading}\n\n{body}"
    return Chunk(
        id="258c0905aecb-3f1c9a02d4-1024-1097",
        content=content,
        metadata={
            "token_count": 17, "strategy": "hierarchical", "start_char": 1024, "end_char": 1024 + len(body),
            "body_start": len(heading) + 2, "pages": [3, 4], "element_ids": ["e-12", "e-13"],
            "element_spans": [["e-12", 0, 25], ["e-13", 0, 48]], "heading_path": ["Study", "2 Methods"],
            "heading_ids": ["h-2"], "index": 7, "strategy_params": {"max_tokens": 128},
            "reviewed_by": "dr. a", "tags": ["dose", "protocol"],
        },
        geom=[_box(3, 0.2, 1, "h-2", heading=True), _box(3, 0.8, 3, "e-12"), _box(4, 0.05, 2, "e-13")],
    )


def vision_chunk() -> Chunk:
    """A vision chunk grounded with furniture boxes (page text outside the parse tree)."""
    content = "Table 2 continues: doses by weight."
    return Chunk(
        id="258c0905aecb-77aa00bb11-0-0~text-1a2b3c4d",
        content=content,
        metadata={
            "token_count": 9, "strategy": "vision", "start_char": 2000, "end_char": 2000 + len(content), "body_start": 0,
            "pages": [5], "element_ids": ["t-1"], "heading_path": [], "grounded": True, "grounding_status": "furniture",
            "grounding_score": 0.875, "grounding_reason": "running header", "grounding_spans": [[2000, 2035]],
            "grounding_furniture_boxes": [[5, 0.1, 0.01, 0.9, 0.03], [6, 0.1, 0.01, 0.9, 0.03]],
            "vision_continues": "Partial", "vision_batch": 2, "vision_pages": [5, 6], "vision_merged": 2,
            "vision_issues": "found on page(s) [7]", "vision_text": "Table 2 continues - doses by weight", "index": 3,
        },
        geom=[_box(5, 0.4, 2, "t-1")],
    )


def expected(chunk: Chunk) -> Chunk:
    """The record as every surface stores it: boxes at 5 decimals without character extents."""
    return chunk.replace(boxes=boxes_from_metadata(boxes_to_metadata(chunk.boxes)))


def _jsonl(chunk: Chunk, tmp: Path) -> Any:
    path = write_chunks_jsonl(ChunkingResult(chunks=[chunk]), tmp / "chunks.jsonl")
    return load_chunking_result(path).chunks[0]


def _json(chunk: Chunk, tmp: Path) -> Any:
    path = save_chunking_result(ChunkingResult(chunks=[chunk]), tmp / "chunks.json")
    return load_chunking_result(path).chunks[0]


def _parquet(chunk: Chunk, tmp: Path) -> Any:
    import pyarrow.parquet as pq

    from grounded.ingest.rows import chunk_rows

    pq.write_table(chunk_rows([chunk], source_path="a.pdf", source_sha256="ab" * 32, config_fingerprint="cfg"), tmp / "part.parquet")
    return pq.read_table(tmp / "part.parquet").to_pylist()[0]


def _lancedb(chunk: Chunk, tmp: Path) -> Any:
    import lancedb

    from grounded.ingest.rows import chunk_rows

    table = chunk_rows([chunk], source_path="a.pdf", source_sha256="ab" * 32, config_fingerprint="cfg")
    db = lancedb.connect(str(tmp / "lance"))
    return db.create_table("chunks", data=table.drop(["embedding"])).to_arrow().to_pylist()[0]


def _llama(flat: bool) -> Callable[[Chunk, Path], Any]:
    def make(chunk: Chunk, tmp: Path) -> Any:
        from llama_index.core.schema import NodeWithScore, TextNode

        node = TextNode(id_=chunk.id, text=chunk.content, metadata=chunk_metadata(chunk, flat=flat))
        return NodeWithScore(node=node, score=0.5)

    return make


def _langchain(flat: bool) -> Callable[[Chunk, Path], Any]:
    def make(chunk: Chunk, tmp: Path) -> Any:
        from langchain_core.documents import Document

        return Document(page_content=chunk.content, metadata=chunk_metadata(chunk, flat=flat), id=chunk.id)

    return make


SURFACES: dict[str, Callable[[Chunk, Path], Any]] = {
    "chunks.jsonl": _jsonl,
    "chunks.json": _json,
    "parquet row": _parquet,
    "lancedb row": _lancedb,
    "llama_index node (flat)": _llama(True),
    "llama_index node (nested)": _llama(False),
    "langchain document (flat)": _langchain(True),
    "langchain document (nested)": _langchain(False),
}


def _assert_same(got: Chunk, want: Chunk, surface: str) -> None:
    for f in dataclasses.fields(Chunk):
        assert getattr(got, f.name) == getattr(want, f.name), f"{surface}: field {f.name} differs"
    assert got == want


@pytest.mark.parametrize("make", [text_chunk, vision_chunk], ids=["text chunk", "vision chunk"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_every_surface_gives_the_same_chunk_back(surface: str, make: Callable[[], Chunk], tmp_path: Path) -> None:
    chunk = make()
    stored = SURFACES[surface](chunk, tmp_path)
    want = expected(chunk)
    _assert_same(chunk_of(stored), want, surface)
    back = chunk_of(stored)  # the one call from a row / node / document to the chunk
    assert back.geom == want.boxes and back.id == chunk.id
    assert back.metadata.get("grounding_furniture_boxes") == chunk.metadata.get("grounding_furniture_boxes")


def test_a_copy_is_the_same_chunk_with_its_derived_fields() -> None:
    for chunk in (text_chunk(), vision_chunk()):
        assert chunk.replace() == chunk
        record = chunk.replace()
        assert record.strategy_params == {"max_tokens": 128} or chunk.metadata["strategy"] == "vision"
        assert record.extra == {"reviewed_by": "dr. a", "tags": ["dose", "protocol"]} or chunk.metadata["strategy"] == "vision"
        assert record.text_hash == text_hash(chunk.content)
        assert (record.page_start, record.page_end) == (min(chunk.metadata["pages"]), max(chunk.metadata["pages"]))


def test_metadata_is_a_read_only_view_of_the_fields() -> None:
    """Writes go through the fields: the mapping refuses every write, and shows a field once it is set."""
    chunk = text_chunk()
    for write in (lambda m: m.__setitem__("index", 9), lambda m: m.update(index=9), lambda m: m.pop("pages"),
                  lambda m: m.setdefault("x", 1), lambda m: m.__delitem__("strategy"), lambda m: m.clear()):
        with pytest.raises(TypeError, match="read-only"):
            write(chunk.metadata)
    chunk.index = 9
    chunk.extra["reviewer"] = "pharmacy"
    assert chunk.metadata["index"] == 9 and chunk.metadata["reviewer"] == "pharmacy"
    assert pickle.loads(pickle.dumps(chunk.metadata)) == dict(chunk.metadata)


def test_stored_values_are_read_and_checked_by_the_type_column() -> None:
    """The field table's ``type`` column decides how a stored value is read (numpy / float ints of a
    store row) and what chunks JSON must hold (``count``: an int >= 0; ``list[...]``: its items)."""
    import numpy as np

    from grounded.model.chunk_fields import check_metadata, coerce

    assert {f.type for f in FIELDS} >= {"str", "count", "int", "float", "bool", "list[int]", "list[str]", "dict", "boxes"}
    assert coerce("vision_batch", "vision_batch", np.int32(3)) == 3 and coerce("pages", "pages", np.array([2.0, 3])) == [2, 3]
    assert coerce("grounded", "grounded", np.bool_(True)) is True
    with pytest.raises(SchemaError, match="'token_count'"):
        coerce("token_count", "token_count", "many")
    for meta, message in (({"token_count": -1}, "integer >= 0"), ({"vision_pages": ["2"]}, "array of integers"),
                          ({"heading_ids": [1]}, "array of strings"), ({"body_start": 9}, "beyond the content")):
        with pytest.raises(SchemaError, match=message):
            check_metadata(meta, 4, "chunk 'c'")


def test_flat_metadata_is_scalars_and_filterable_pages() -> None:
    meta = chunk_metadata(text_chunk(), flat=True)
    assert all(isinstance(v, (str, int, float, bool)) for v in meta.values())
    assert (meta["page_start"], meta["page_end"]) == (3, 4)
    assert isinstance(meta["page_start"], int)
    assert set(LIST_KEYS) >= {"pages", "boxes", "grounding_furniture_boxes"}


def test_field_table_decides_visibility_and_every_record_field_has_a_row() -> None:
    keys = {f.key for f in FIELDS}
    assert {"chunk_id", "text", "page_start", "page_end", "section", "grounding_furniture_boxes"} <= keys
    assert "boxes" in embed_hidden_keys() and "boxes" in llm_hidden_keys()
    assert "pages" not in embed_hidden_keys() and "section" not in llm_hidden_keys()
    assert {f.key: f.implied_by for f in FIELDS if f.implied_by} == {"heading_path": "section"}


@pytest.mark.parametrize("flat", [True, False], ids=["flat", "nested"])
def test_adapter_parts_write_every_field_their_record_holds(flat: bool) -> None:
    """The adapters' parts (GroundingNodeParser, GroundingSplitter, a re-split part) take their chunk
    fields from the record: every field with a value reaches them, and reads back as the record."""
    for chunk in (text_chunk(), vision_chunk()):
        record = expected(chunk)
        fields = part_fields(record, flat)
        if record.heading_path:
            assert fields == chunk_metadata(record, flat)
        else:  # no heading path known: no empty section (a part may keep its parent's)
            assert fields == {k: v for k, v in chunk_metadata(record, flat).items() if k != "section"}
        _assert_same(chunk_from_metadata(record.content, fields), record, f"part_fields(flat={flat})")


def test_a_part_not_located_gets_no_place_fields() -> None:
    record = expected(vision_chunk()).replace(start_char=None, end_char=None, boxes=[], pages=[], element_ids=[])
    fields = part_fields(record, flat=True)
    place = {"start_char", "end_char", "body_start", "pages", "page_start", "page_end", "boxes", "element_ids", "element_spans"}
    assert not place & set(fields)
    assert fields["chunk_id"] == record.id and fields["text_hash"] == text_hash(record.content)
    assert fields["grounding_status"] == "furniture" and fields["vision_pages"] == "[5,6]"  # the rest is kept


def test_a_chunk_of_boxes_takes_their_pages_and_body_elements() -> None:
    boxes = text_chunk().geom
    record = Chunk.of_boxes("c", "text", [boxes[2], *boxes[:2], boxes[2]], token_count=3)
    assert record.pages == [3, 4] and record.element_ids == ["e-13", "e-12"]  # headings left out, first seen first
    assert record.token_count == 3 and len(record.boxes) == 4
    assert Chunk.of_boxes("c", "text", []).pages == []


def test_the_librarys_own_parquet_box_schema_is_read() -> None:
    """chunk_from_metadata used to raise SchemaError on the Parquet box struct (issue 22, 1)."""
    row = {"page": 2, "left": 0.1, "top": 0.2, "right": 0.5, "bottom": 0.3, "mode": "line", "heading": False,
           "element_id": "e-1", "spans": [{"left": 0.1, "top": 0.2, "right": 0.5, "bottom": 0.25}]}
    chunk = chunk_from_metadata("text", {"chunk_id": "x", "boxes": [row]})
    assert chunk.geom[0].page == 2 and chunk.geom[0].spans[0].bottom == 0.25 and chunk.geom[0].element_id == "e-1"


def test_a_malformed_store_value_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="token_count"):
        chunk_from_metadata("text", {"chunk_id": "x", "token_count": "many"})
    with pytest.raises(SchemaError, match="not a stored chunk"):
        chunk_of(42)


def test_chunks_json_version_1_is_still_read(tmp_path: Path) -> None:
    import json

    chunk = text_chunk()
    old = {"schema": "grounded.chunking_result", "version": 1, "result": {"metadata": {}, "chunks": [chunk.to_dict()]}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "old.jsonl").write_text(
        json.dumps({"schema": "grounded.chunking_result", "version": 1, "result": {"metadata": {}}}) + "\n" + json.dumps(chunk.to_dict()) + "\n"
    )
    for name in ("old.json", "old.jsonl"):
        assert load_chunking_result(tmp_path / name).chunks == [chunk]
    new = json.loads(save_chunking_result(ChunkingResult(chunks=[chunk]), tmp_path / "new.json").read_text())
    assert new["version"] == 2
    assert new["result"]["chunks"][0]["metadata"]["strategy_params"] == {"max_tokens": 128}


def test_a_key_that_is_no_json_value_is_refused_at_write_time(tmp_path: Path) -> None:
    chunk = text_chunk()
    chunk.extra["opened_at"] = object()
    with pytest.raises(SchemaError, match="'opened_at'"):
        save_chunking_result(ChunkingResult(chunks=[chunk]), tmp_path / "chunks.json")
    assert not (tmp_path / "chunks.json").exists()


def test_a_chunk_edited_after_writing_is_refused(tmp_path: Path) -> None:
    path = save_chunking_result(ChunkingResult(chunks=[text_chunk()]), tmp_path / "chunks.json")
    path.write_text(path.read_text().replace("Patients were", "Nobody was"))
    with pytest.raises(SchemaError, match="text_hash"):
        load_chunking_result(path)
