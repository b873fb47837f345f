"""Data model: box validation, geometry helpers, character boxes, tree helpers, lossless JSON."""

from __future__ import annotations

import json

import pytest

from grounded.errors import InvalidBoxError, SchemaError
from grounded.io.codec import (
    _dumps_tree,
    _loads_deep,
    dumps_chunking_result,
    dumps_parsing_result,
    load_parsing_result,
    loads_chunking_result,
    loads_parsing_result,
    read_chunks_jsonl,
    save_parsing_result,
    write_chunks_jsonl,
)
from grounded.model import (
    Chunk,
    ChunkingResult,
    ParsingBoundingBox,
    ParsingResult,
    ParsingResultType,
    RichToken,
)

T = ParsingResultType
Box = ParsingBoundingBox


def test_enum_is_table_a1():
    assert {t.value for t in T} == {
        "ROOT", "TITLE", "PARAGRAPH", "SECTION_HEADER", "FOOTNOTE", "LIST", "LIST_ITEM", "REFERENCE_LIST",
        "REFERENCE_ITEM", "CAPTION", "FIGURE", "TABLE", "DOC_INDEX", "TABLE_ROW", "TABLE_CELL", "PAGE_FOOTER",
        "KEY_VALUE", "PAGE_HEADER", "KEY_VALUE_AREA", "FORM_AREA", "FORMULA", "WATERMARK", "UNKNOWN", "MISSING",
    }
    assert str(T.SECTION_HEADER) == "SECTION_HEADER"


def test_box_clamps_float_overshoot_and_rejects_nonsense():
    b = Box(1, -0.001, 0.0, 1.004, 1.0)
    assert (b.left, b.right) == (0.0, 1.0)
    with pytest.raises(InvalidBoxError):
        Box(1, 0.0, 0.0, 1.5, 1.0)
    with pytest.raises(InvalidBoxError):
        Box(1, 0.6, 0.1, 0.2, 0.3)  # right < left
    with pytest.raises(InvalidBoxError):
        Box(0, 0.1, 0.1, 0.2, 0.2)  # pages are 1-based
    with pytest.raises(InvalidBoxError):
        Box(1, float("nan"), 0.1, 0.2, 0.2)
    with pytest.raises(InvalidBoxError):
        Box(1, 0.1, 0.1, 0.2, 0.2, char_start=0, char_end=2, char_x=(0.1, 0.12))  # 1 pair for 2 chars


def test_box_points_round_trip_and_geometry():
    b = Box.from_points(3, 61.2, 79.2, 306.0, 158.4, 612.0, 792.0)
    assert (b.page, b.left, b.top, b.right, b.bottom) == (3, pytest.approx(0.1), pytest.approx(0.1), 0.5, 0.2)
    assert b.to_points(612.0, 792.0) == pytest.approx((61.2, 79.2, 306.0, 158.4))
    a = Box(1, 0.0, 0.0, 0.5, 0.5)
    c = Box(1, 0.25, 0.25, 0.75, 0.75)
    assert a.intersection_area(c) == pytest.approx(0.0625)
    assert a.iou(c) == pytest.approx(0.0625 / (0.25 + 0.25 - 0.0625))
    assert a.union(c) == Box(1, 0.0, 0.0, 0.75, 0.75)
    assert Box.enclosing([a, c]) == Box(1, 0.0, 0.0, 0.75, 0.75)
    assert a.iou(Box(2, 0.0, 0.0, 0.5, 0.5)) == 0.0
    with pytest.raises(InvalidBoxError):
        a.union(Box(2, 0.0, 0.0, 0.5, 0.5))
    with pytest.raises(InvalidBoxError):
        Box.from_points(1, 0, 0, 1, 1, 0.0, 100.0)


def test_char_box_selects_the_characters_extent():
    # "ab cd" on one line, 5 chars, the space spans the gap between b and c
    xs = (0.10, 0.12, 0.12, 0.14, 0.14, 0.16, 0.16, 0.18, 0.18, 0.20)
    line = Box(1, 0.10, 0.30, 0.20, 0.32, char_start=10, char_end=15, char_x=xs)
    cd = line.char_box(13, 15)
    assert (cd.left, cd.right, cd.top, cd.bottom) == (pytest.approx(0.16, abs=1e-4), pytest.approx(0.20, abs=1e-4), 0.30, 0.32)
    assert line.char_box(0, 5) is None  # outside the line's range
    partial = line.char_box(8, 12)  # starts before the line: clipped to the line's first chars
    assert partial.left == pytest.approx(0.10, abs=1e-4) and partial.right == pytest.approx(0.14, abs=1e-4)
    assert Box(1, 0, 0, 1, 1).char_box(0, 1) is None  # no char info


def _sample_tree() -> ParsingResult:
    root = ParsingResult("root", T.ROOT, metadata={"pages": [{"page": 1, "width": 612.0, "height": 792.0}]})
    sec = root.add_child(ParsingResult("e1", T.SECTION_HEADER, "1 Methods", [Box(1, 0.1, 0.1, 0.4, 0.12)], metadata={"level": 1}))
    line = Box(1, 0.1, 0.2, 0.3, 0.22, char_start=0, char_end=3, char_x=(0.1, 0.11, 0.11, 0.12, 0.12, 0.13))
    para = ParsingResult("e2", T.PARAGRAPH, "Dose 5 mg", [Box(1, 0.1, 0.2, 0.9, 0.3, spans=[line])])
    sec.add_child(para)
    table = root.add_child(ParsingResult("e3", T.TABLE, "| a |", [Box(2, 0.1, 0.1, 0.9, 0.5)]))
    row = table.add_child(ParsingResult("e4", T.TABLE_ROW))
    row.add_child(ParsingResult("e5", T.TABLE_CELL, "a", [Box(2, 0.1, 0.1, 0.5, 0.2)], metadata={"row": 0, "col": 0}))
    root.add_child(ParsingResult("e6", T.FIGURE, image="fig.png"))
    return root


def test_tree_helpers():
    root = _sample_tree()
    assert [n.id for n in root.walk()] == ["root", "e1", "e2", "e3", "e4", "e5", "e6"]
    cell = root.find("e5")
    assert [a.id for a in cell.ancestors()] == ["e4", "e3", "root"]
    assert root.index()["e2"].content == "Dose 5 mg"
    assert root.find("e1").level == 1 and root.find("e2").level is None
    assert cell.page_size(1) == (612.0, 792.0)
    with pytest.raises(KeyError):
        cell.page_size(9)
    assert root.find("e3").pages == [2]


def test_parsing_result_json_round_trip_is_lossless():
    root = _sample_tree()
    text = dumps_parsing_result(root)
    again = loads_parsing_result(text)
    assert again == root
    assert dumps_parsing_result(again) == text
    # parents are rebuilt
    assert again.find("e5").parent.id == "e4"
    # char_x survives exactly (quantized on construction, base64 in JSON)
    assert again.find("e2").geom[0].spans[0].char_x == root.find("e2").geom[0].spans[0].char_x
    data = json.loads(text)
    assert data["schema"] == "grounded.parsing_result" and data["version"] == 1


def test_unreadable_schema_is_refused():
    with pytest.raises(SchemaError):
        loads_parsing_result('{"schema": "grounded.parsing_result", "version": 99, "root": {}}')
    with pytest.raises(SchemaError):
        loads_parsing_result("not json")
    with pytest.raises(SchemaError):
        loads_parsing_result('{"root": {}}')


def _chain(depth: int) -> ParsingResult:
    """ROOT -> n0 -> n1 -> ... (depth levels), with boxes, metadata, images and a few side leaves."""
    root = ParsingResult("root", T.ROOT, metadata={"pages": [{"page": 1, "width": 612.0, "height": 792.0}]})
    node = root
    for i in range(depth):
        node = node.add_child(
            ParsingResult(f"n{i}", T.SECTION_HEADER, f"h{i} ä\n\"q\"", [Box(1, 0.1, 0.2, 0.3, 0.4)], metadata={"level": i + 1})
        )
        if i % 97 == 0:
            node.add_child(ParsingResult(f"leaf{i}", T.FIGURE, image=f"img{i}.png"))
    return root


def _recursive_to_dict(node: ParsingResult) -> dict:
    """The former recursive ParsingResult.to_dict (reference for key order)."""
    d: dict = {"id": node.id, "type": node.type.value, "content": node.content}
    if node.geom:
        d["geom"] = [b.to_dict() for b in node.geom]
    if node.metadata:
        d["metadata"] = node.metadata
    if node.image is not None:
        d["image"] = node.image
    if node.children:
        d["children"] = [_recursive_to_dict(c) for c in node.children]
    return d


def test_to_dict_matches_the_recursive_layout():
    for root in (_sample_tree(), _chain(150)):
        d = root.to_dict()
        assert json.dumps(d) == json.dumps(_recursive_to_dict(root))  # same keys in the same order
        assert ParsingResult.from_dict(d) == root


def test_equality_is_structural():
    a, b = _chain(3000), _chain(3000)
    assert a == b
    deepest = b.find("n2999")
    deepest.metadata["level"] = 0
    assert a != b
    deepest.metadata["level"] = 3000
    deepest.add_child(ParsingResult("extra", T.PARAGRAPH))
    assert a != b and b != a
    assert a != "root"


def test_deep_tree_round_trip(tmp_path):
    """Malformed backend output can nest far deeper than json/recursion allow: save/load still work."""
    root = _chain(5000)
    path = save_parsing_result(root, tmp_path / "deep.json")
    text = path.read_text(encoding="utf-8")
    again = load_parsing_result(path)
    assert again == root
    assert dumps_parsing_result(again) == text
    assert len(list(again.walk())) == len(list(root.walk())) == 5000 + 1 + 52
    deepest = again.find("n4999")
    assert deepest.content == "h4999 ä\n\"q\"" and len(deepest.ancestors()) == 5000
    assert deepest.geom == [Box(1, 0.1, 0.2, 0.3, 0.4)] and deepest.metadata == {"level": 5000}
    assert again.find("leaf4947").image == "img4947.png" and again.find("leaf4947").parent.id == "n4947"
    medium = _chain(600)  # still too deep for json; indented text grows with depth squared
    for indent in (0, 2):
        assert loads_parsing_result(dumps_parsing_result(medium, indent=indent)) == medium
    assert ParsingResult.from_dict(root.to_dict()) == root


@pytest.mark.parametrize("indent", [None, 0, 2, "\t"])
def test_deep_tree_writer_and_reader_match_json(indent):
    """The recursion-free writer/reader used for deep trees give exactly json.dumps'/json.loads' results."""
    for root in (_sample_tree(), _chain(120)):
        assert _dumps_tree(root, indent) == json.dumps(root.to_dict(), ensure_ascii=False, indent=indent)
        text = dumps_parsing_result(root, indent=indent)
        assert json.dumps(_loads_deep(text)) == json.dumps(json.loads(text))
    values = ['{"a": [1, -2.5e-3, 1E+2, true, false, null, NaN, -Infinity], "b": {}, "c": [], "\\u00e4": "\\"x\\n"}']
    for v in values:
        assert json.dumps(_loads_deep(v)) == json.dumps(json.loads(v))
    for bad in ("", "[1,]", '{"a" 1}', "[1 2]", "{1: 2}", "tru", "[1] x", "[", '{"a": 1,}'):
        with pytest.raises(json.JSONDecodeError):
            _loads_deep(bad)
    with pytest.raises(SchemaError):
        loads_parsing_result("[" * 5000 + "]" * 4999)  # deep and broken: still a typed error


def test_chunking_result_round_trips(tmp_path):
    box = Box(1, 0.1, 0.2, 0.3, 0.25, mode="exact", element_id="e2", spans=[Box(1, 0.1, 0.2, 0.3, 0.22)])
    heading = Box(1, 0.1, 0.1, 0.4, 0.12, mode="line", element_id="e1", is_heading=True)
    chunk = Chunk("c1", "1 Methods\nDose 5 mg", {"token_count": 6, "body_start": 10}, [heading, box])
    result = ChunkingResult([chunk], {"strategy": "fixed", "max_tokens": 128})
    assert loads_chunking_result(dumps_chunking_result(result)) == result
    assert chunk.body == "Dose 5 mg" and chunk.pages == [1]
    path = write_chunks_jsonl(result, tmp_path / "chunks.jsonl")
    assert read_chunks_jsonl(path) == result


def test_rich_token_fields():
    tok = RichToken(element_id="e2", token_idx=0, token=2000, text="dose", char_start=0, char_end=4)
    assert "Dose 5 mg"[tok.char_start : tok.char_end].lower() == tok.text
