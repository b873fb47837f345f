"""grounded.metadata: chunk boxes as vector-store metadata (nested and flat), trees as strings."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounded.chunking import Chunker, document_text
from grounded.errors import SchemaError
from grounded.io.box_codec import (
    BOXES_KEY,
    TEXT_HASH_KEY,
    GroundingWarning,
    boxes_from_metadata,
    boxes_to_metadata,
    text_hash,
)
from grounded.io.chunk_codec import (
    LIST_KEYS,
    chunk_from_metadata,
    chunk_metadata,
    flatten_metadata,
    unflatten_metadata,
)
from grounded.io.pdf_info import PDF_METADATA_KEYS, SOURCE_INFO_KEY, pdf_metadata, recorded_info
from grounded.io.tree_payload import decode_tree, encode_tree, text_tree
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.parsers import get_parser
from tests.support.data import shared
from tests.support.shared_parses import SharedParses

SCALARS = (str, int, float, bool)


def line(page: int, left: float, top: float, right: float, bottom: float) -> ParsingBoundingBox:
    return ParsingBoundingBox(page, left, top, right, bottom)


def two_page_boxes() -> list[ParsingBoundingBox]:
    """A heading box and a body that runs from the foot of page 1 onto page 2."""
    heading = ParsingBoundingBox(1, 0.1, 0.1, 0.4, 0.12, spans=[line(1, 0.1, 0.1, 0.4, 0.12)], mode="exact",
                                 element_id="e1", is_heading=True)
    body1 = ParsingBoundingBox(1, 0.1, 0.8, 0.9, 0.85, spans=[line(1, 0.3, 0.8, 0.9, 0.82), line(1, 0.1, 0.83, 0.9, 0.85)],
                               mode="exact", element_id="e2")
    body2 = ParsingBoundingBox(
        2, 0.1, 0.05, 0.512345678, 0.07,
        spans=[ParsingBoundingBox(2, 0.1, 0.05, 0.512345678, 0.07, char_start=0, char_end=2, char_x=(0.1, 0.2, 0.2, 0.3))],
        mode="line", element_id="e2",
    )
    return [heading, body1, body2]


def test_nested_boxes_round_trip_keeps_pages_lines_modes_and_heading_flags():
    geom = two_page_boxes()
    meta = boxes_to_metadata(geom)
    assert isinstance(meta, list) and all(isinstance(d, dict) for d in meta)
    back = boxes_from_metadata(meta)
    assert [b.page for b in back] == [1, 1, 2]
    assert [b.mode for b in back] == ["exact", "exact", "line"]
    assert [b.element_id for b in back] == ["e1", "e2", "e2"]
    assert [b.is_heading for b in back] == [True, False, False]
    for original, restored in zip(geom, back, strict=True):
        for attr in ("left", "top", "right", "bottom"):
            assert getattr(restored, attr) == pytest.approx(getattr(original, attr), abs=6e-6)
    # a two-line box keeps its lines; a box that is its own single line stores none
    assert len(back[1].spans) == 2 and back[1].spans[0].left == pytest.approx(0.3)
    assert back[0].spans == [] and "s" not in meta[0]
    # character extents are not metadata
    assert all(s.char_x is None for b in back for s in b.spans)
    assert "char_x" not in json.dumps(meta)


def test_flat_boxes_are_one_compact_json_string_read_back_identically():
    geom = two_page_boxes()
    flat = boxes_to_metadata(geom, flat=True)
    assert isinstance(flat, str) and " " not in flat
    assert boxes_from_metadata(flat) == boxes_from_metadata(boxes_to_metadata(geom))
    assert boxes_from_metadata({BOXES_KEY: flat}) == boxes_from_metadata({BOXES_KEY: boxes_to_metadata(geom)})
    # coarse form: one box per page run, no lines
    coarse = boxes_from_metadata(boxes_to_metadata(geom, line_spans=False))
    assert all(b.spans == [] for b in coarse)


def test_reads_full_box_dicts_and_box_objects_too():
    geom = two_page_boxes()
    full = [b.to_dict() for b in geom]
    assert boxes_from_metadata(full) == geom
    assert boxes_from_metadata(json.dumps(full)) == geom
    assert boxes_from_metadata(geom) == geom
    assert boxes_from_metadata({"other": 1}) == []


@pytest.mark.parametrize(
    "bad",
    ["{not json", "[{\"p\": 1}]", "[{\"p\": 1, \"b\": [0, 0, 2.5, 1]}]", "[1, 2]", 42, {BOXES_KEY: "[[\"x\"]]"}],
)
def test_malformed_box_metadata_raises_schema_error(bad):
    with pytest.raises(SchemaError):
        boxes_from_metadata(bad)


def test_flatten_gives_scalars_and_unflatten_restores_lists():
    meta = {"pages": [1, 2], "heading_path": ["A", "B > C"], "element_ids": ["e1"], BOXES_KEY: boxes_to_metadata(two_page_boxes()),
            "section": "A > B > C", "token_count": 12, "keep": True}
    flat = flatten_metadata(meta)
    assert all(isinstance(v, SCALARS) for v in flat.values())
    assert unflatten_metadata(flat) == meta
    with pytest.raises(SchemaError):
        unflatten_metadata({"pages": "[1,"})


def test_text_tree_offsets_index_the_plain_text():
    text = "First paragraph about dosing.\n\nSecond paragraph, on adverse events and monitoring. " * 20
    root = text_tree(text)
    assert document_text(root).text == text
    chunks = Chunker("recursive", 32, tokenizer=None).chunk(root).chunks
    assert len(chunks) > 3
    for c in chunks:
        assert text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body
        assert c.geom == []
    assert text_tree("   \n").children == []


# -- with a real parse ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clinsci_tree(clinsci_pdf: Path, shared_parses: SharedParses) -> Iterator[ParsingResult]:
    root = shared_parses.tree(clinsci_pdf)
    yield root
    shared_parses.assert_unchanged(root)


@pytest.fixture(scope="module")
def clinsci_chunks(clinsci_tree):
    return Chunker("hierarchical", 256).chunk(clinsci_tree).chunks


def test_tree_string_round_trip_is_lossless_and_compressed(clinsci_tree):
    encoded = encode_tree(clinsci_tree)
    assert encoded.isascii()
    assert decode_tree(encoded) == clinsci_tree
    from grounded.serialization import dumps_parsing_result

    plain = dumps_parsing_result(clinsci_tree)
    assert decode_tree(plain) == clinsci_tree
    assert len(encoded) < len(plain) / 3
    for broken in (encoded[:-40] + "!!!!", encoded.split(".")[0], encoded[:200] + "." + encoded.split(".")[1]):
        with pytest.raises(SchemaError):
            decode_tree(broken)
    with pytest.raises(SchemaError):
        decode_tree(123)  # type: ignore[arg-type]


def test_chunk_metadata_survives_json_and_flat_forms(clinsci_chunks):
    multi_page = [c for c in clinsci_chunks if len(c.pages) > 1]
    assert multi_page, "the article has chunks across page breaks"
    for chunk in clinsci_chunks:
        nested = chunk_metadata(chunk, flat=False)
        assert json.loads(json.dumps(nested)) == nested
        assert nested["pages"] == chunk.pages
        assert nested["page_start"] == chunk.pages[0] and nested["page_end"] == chunk.pages[-1]
        assert nested["element_ids"] == chunk.metadata["element_ids"]
        flat = chunk_metadata(chunk, flat=True)
        assert all(isinstance(v, SCALARS) for v in flat.values())
        assert set(flat) == set(nested)
        assert unflatten_metadata(flat) == nested
        restored = boxes_from_metadata(flat)
        assert [(b.page, b.mode, b.element_id, b.is_heading) for b in restored] == [
            (b.page, b.mode, b.element_id, b.is_heading) for b in chunk.geom
        ]
        for a, b in zip(restored, chunk.geom, strict=True):
            assert abs(a.left - b.left) <= 6e-6 and abs(a.bottom - b.bottom) <= 6e-6
            assert len(a.spans) in (0, len(b.spans)) and (a.spans or len(b.spans) <= 1)


def test_chunk_metadata_stays_small(clinsci_chunks):
    sizes = sorted(len(chunk_metadata(c, flat=True)[BOXES_KEY]) for c in clinsci_chunks)
    # ~30 bytes per line box: a 256-token chunk's boxes fit in a few kB
    assert sizes[-1] < 8000, sizes[-5:]
    assert all(k in LIST_KEYS for k in ("pages", BOXES_KEY))


def test_chunk_from_metadata_gives_a_renderable_chunk(clinsci_chunks):
    from grounded.attribution import render

    chunk = next(c for c in clinsci_chunks if len(c.pages) > 1)
    back = chunk_from_metadata(chunk.content, chunk_metadata(chunk, flat=True))
    assert back.id == chunk.id and back.body == chunk.body and back.pages == chunk.pages
    assert back.metadata["heading_path"] == chunk.metadata["heading_path"]
    pngs = render(shared("long", "cermine_web_example3_clinsci.pdf"), back, dpi=40)
    assert len(pngs) == len(chunk.pages) and all(p.startswith(b"\x89PNG") for p in pngs)


def test_default_chunk_metadata_is_store_safe_and_records_the_text_hash(clinsci_chunks):
    for chunk in clinsci_chunks:
        meta = chunk_metadata(chunk)
        assert all(isinstance(v, SCALARS) for v in meta.values()), {k: type(v) for k, v in meta.items()}
        assert meta[TEXT_HASH_KEY] == text_hash(chunk.content)
        assert boxes_from_metadata(meta, text=chunk.content) == boxes_from_metadata(chunk_metadata(chunk, flat=False))
        # an adapter that stores another text (e.g. the body only) hashes that text
        assert chunk_metadata(chunk, text=chunk.body)[TEXT_HASH_KEY] == text_hash(chunk.body)


# -- stale boxes: a part of a re-split text must not get its parent's boxes -------------------------
@given(text=st.text(min_size=2, max_size=200), cut=st.integers(min_value=1, max_value=199))
def test_text_hash_tells_every_proper_part_from_the_whole(text, cut):
    part = text[: min(cut, len(text) - 1)]
    assert len(text_hash(text)) == 16 and text_hash(text) == text_hash(str(text))
    assert text_hash(part) != text_hash(text)


def test_boxes_made_for_another_text_are_withheld_with_one_warning():
    meta = {BOXES_KEY: boxes_to_metadata(two_page_boxes(), flat=True), TEXT_HASH_KEY: text_hash("the whole chunk text")}
    assert boxes_from_metadata(meta, text="the whole chunk text") == boxes_from_metadata(meta)
    assert len(boxes_from_metadata(meta)) == 3  # without text: unchecked
    with pytest.warns(GroundingWarning, match="re-split") as caught:
        assert boxes_from_metadata(meta, text="the whole chunk") == []
    assert len(caught) == 1
    # the default warning filter shows it once, however many parts are read
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        for i in range(20):
            boxes_from_metadata(meta, text=f"part {i}")
    assert len([w for w in seen if issubclass(w.category, GroundingWarning)]) == 1
    # metadata without a hash (older stores) is read unchecked; chunk_from_metadata checks its content
    assert len(boxes_from_metadata({BOXES_KEY: meta[BOXES_KEY]}, text="anything")) == 3
    with pytest.warns(GroundingWarning):
        assert chunk_from_metadata("another text", meta).geom == []


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("D:20131129110039Z00'00'", "2013-11-29T11:00:39+00:00"),
        ("D:20131018174505+05'30'", "2013-10-18T17:45:05+05:30"),
        ("D:20200101-0800", "2020-01-01T00:00:00-08:00"),
        ("D:2019", "2019-01-01T00:00:00"),
        ("yesterday", "yesterday"),
        ("D:20191341", "D:20191341"),
    ],
)
def test_pdf_dates_become_iso_8601(raw, iso):
    from grounded.io.pdf_info import _pdf_date

    assert _pdf_date(raw) == iso


def test_pdf_metadata_reads_the_document_information_like_pymupdfloader(tmp_path):
    path = tmp_path / "info.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Dosing table")
    doc.set_metadata({"title": " Oncology guideline ", "author": "Tumour board", "creationDate": "D:20240115093000+01'00'",
                      "modDate": "D:20240201120000Z", "producer": "unit test"})
    doc.save(path)
    doc.close()
    meta = pdf_metadata(path)
    assert set(meta) == set(PDF_METADATA_KEYS)
    assert meta["title"] == "Oncology guideline" and meta["author"] == "Tumour board" and meta["producer"] == "unit test"
    assert meta["creationdate"] == "2024-01-15T09:30:00+01:00"
    assert meta["moddate"] == "2024-02-01T12:00:00+00:00"
    assert meta["subject"] == ""
    assert pdf_metadata(path.read_bytes()) == meta
    assert pdf_metadata(tmp_path / "missing.pdf") == dict.fromkeys(PDF_METADATA_KEYS, "")


def _info_pdf(path):
    doc = pymupdf.open()
    text = "Dosing for renal impairment is adjusted by creatinine clearance and reviewed weekly. " * 6
    doc.new_page().insert_textbox(pymupdf.Rect(72, 200, 523, 400), text, fontsize=11)
    doc.set_metadata({"title": "Renal guide", "author": "Nephrology", "creationDate": "D:20240115093000Z"})
    doc.save(path)
    doc.close()
    return path


def test_pdf_metadata_reuses_the_information_the_parse_recorded(tmp_path):
    """With the parse tree at hand the PDF is not opened again (here: it is gone) when the parse
    recorded the document information; a tree without it falls back to reading the PDF."""
    path = _info_pdf(tmp_path / "renal.pdf")
    expected = pdf_metadata(path)
    root = get_parser("pymupdf").parse(path)
    with pymupdf.open(path) as doc:  # what the parse reads while it has the PDF open
        raw = dict(doc.metadata or {})
    root.metadata["source"] = {k: v for k, v in root.metadata["source"].items() if k != SOURCE_INFO_KEY}
    assert recorded_info(root) is None and pdf_metadata(path, root=root) == expected  # read from the PDF
    root.metadata["source"][SOURCE_INFO_KEY] = raw
    path.unlink()
    assert recorded_info(root) == pdf_metadata(path, root=root) == pdf_metadata(None, root=root) == expected
    assert expected["title"] == "Renal guide" and expected["creationdate"] == "2024-01-15T09:30:00+00:00"
    assert pdf_metadata(None) == dict.fromkeys(PDF_METADATA_KEYS, "")


def test_the_parse_records_the_document_information(tmp_path):
    path = _info_pdf(tmp_path / "renal.pdf")
    assert recorded_info(get_parser("pymupdf").parse(path)) == pdf_metadata(path)
