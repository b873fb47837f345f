"""``docling`` backend: transform of real recorded DoclingDocument JSON (docling-core), box
cross-checks against the source PDFs, and fixture -> finish -> chunks end to end.

Docling itself is not installed here (it pulls torchvision); its converter is replaced by an object
returning the recorded ``DoclingDocument`` of the same PDF.
"""

from __future__ import annotations

import importlib.util
import statistics
from collections import Counter
from pathlib import Path

import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from grounded.errors import BackendUnavailableError, ParserError
from grounded.model import TEXT_TYPES
from grounded.parsers import get_parser
from grounded.parsers.backends.docling import DoclingParser
from tests.support.backends.docling import (
    RecordedConverter,
    T,
    box_distances,
    norm,
    parser,
    replay,
    replay_on_blank_page,
    text_in_box,
)
from tests.support.data import DOCLING_GT_PDFS, shared


@pytest.mark.skipif(importlib.util.find_spec("docling") is not None, reason="docling is installed")
def test_missing_extra_names_the_pip_install():
    with pytest.raises(BackendUnavailableError) as err:
        get_parser("docling")
    assert isinstance(err.value, ImportError)
    assert "pip install 'grounded[docling]'" in str(err.value)
    assert "\n" not in str(err.value)


def test_registry_resolves_the_backend():
    assert isinstance(get_parser("docling", converter=RecordedConverter()), DoclingParser)


# -- transform on real recorded output -------------------------------------------------------------
def test_multi_page_fixture_keeps_every_element_and_the_list_hierarchy():
    doc = DoclingParser.load_native(shared("native", "docling", "multi_page.json"))
    root = replay(shared("native", "docling", "multi_page.pdf"), doc)
    counts = Counter(n.type for n in root.walk())
    # README: 11 section_header, 16 text, 26 list_item (in 8 list groups), no table
    assert counts[T.SECTION_HEADER] == 11
    assert counts[T.PARAGRAPH] == 16
    assert counts[T.LIST_ITEM] == 26
    assert counts[T.LIST] == 8
    assert all(item.parent.type == T.LIST for item in root.walk() if item.type == T.LIST_ITEM)
    assert all(h.metadata["native_level"] == 1 for h in root.walk() if h.type == T.SECTION_HEADER)
    # reading order = docling's own order of the body items
    expected = [item.self_ref for item, _ in doc.iterate_items() if item.label != "list"]
    ids = [n.metadata["native_id"] for n in root.walk() if n.type not in (T.ROOT, T.LIST)]
    assert ids == expected
    # pages in points
    sizes = [(p["page"], p["width"], p["height"]) for p in root.metadata["pages"]]
    assert sizes == [(p, pytest.approx(595.2, abs=0.01), pytest.approx(841.92, abs=0.01)) for p in range(1, 6)]
    assert {b.page for n in root.walk() for b in n.geom} == {1, 2, 3, 4, 5}


def test_table_becomes_rows_and_cells_with_cell_boxes():
    doc = DoclingParser.load_native(shared("native", "docling", "2305.03393v1-pg9.json"))
    root = replay(shared("native", "docling", "2305.03393v1-pg9.pdf"), doc)
    table = next(n for n in root.walk() if n.type == T.TABLE)
    data = doc.tables[0].data
    assert len(table.children) == data.num_rows == 6
    assert all(row.type == T.TABLE_ROW for row in table.children)
    cells = [c for row in table.children for c in row.children]
    assert len(cells) == len(data.table_cells)
    assert {(c.metadata["row"], c.metadata["col"]) for c in cells} == {
        (c.start_row_offset_idx, c.start_col_offset_idx) for c in data.table_cells
    }
    spanning = next(c for c in cells if c.content == "TEDs")
    assert spanning.metadata["col_span"] == 3 and spanning.metadata["column_header"] is True
    # cells lie inside the table box; rows enclose their cells
    tbox = table.geom[0]
    for row in table.children:
        for cell in row.children:
            (cbox,) = cell.geom
            assert tbox.left - 0.01 <= cbox.left <= cbox.right <= tbox.right + 0.01
            assert tbox.top - 0.01 <= cbox.top <= cbox.bottom <= tbox.bottom + 0.01
            assert row.geom[0].left <= cbox.left and cbox.bottom <= row.geom[0].bottom
    # the caption precedes its table (as in docling's Markdown), the page header is kept for filtering
    order = [n.type for n in root.children]
    assert order.index(T.CAPTION) == order.index(T.TABLE) - 1
    assert order.count(T.PAGE_HEADER) == 2
    assert "| # enc-layers |" in table.content  # Markdown rendering of the grid


@pytest.mark.parametrize("pdf", DOCLING_GT_PDFS, ids=lambda p: p.stem)
def test_every_groundtruth_document_transforms_with_valid_boxes(pdf: Path):
    doc = DoclingParser.load_native(pdf.with_suffix(".json"))
    root = replay(pdf, doc)
    assert root.type == T.ROOT
    pages = {p["page"] for p in root.metadata["pages"]}
    with pymupdf.open(pdf) as d:
        assert len(pages) == d.page_count
    nodes = list(root.walk())[1:]
    assert nodes, "nothing transformed"
    native = {n.metadata["native_id"] for n in nodes if "native_id" in n.metadata}
    # every body/furniture item docling reports (outside figures) is in the tree exactly once;
    # post-processing drops text items without text (code_and_formula has an empty formula)
    expected = {
        item.self_ref
        for item, _ in doc.iterate_items(included_content_layers={"body", "furniture"}, with_groups=True)
        if item.label not in ("unspecified",) and (getattr(item, "text", None) != "" or item.children)
    }
    assert expected <= native
    assert len([n for n in nodes if "native_id" in n.metadata]) == len(native)
    for node in nodes:
        for box in node.geom:
            assert box.page in pages
            assert box.area > 0 or node.type in (T.PAGE_FOOTER, T.PAGE_HEADER, T.TABLE_CELL)
        if node.type == T.MISSING:
            assert node.metadata["native_label"]


@pytest.mark.parametrize("pdf", DOCLING_GT_PDFS, ids=lambda p: p.stem)
def test_text_inside_each_box_matches_the_element(pdf: Path):
    """Proves the BOTTOMLEFT-points -> top-left-fraction conversion on every shared docling PDF."""
    dist = box_distances(replay(pdf), pdf)
    assert len(dist) >= 5
    assert statistics.median(dist) < 0.02
    assert sum(d < 0.15 for d in dist) / len(dist) >= 0.9, sorted(dist)[-5:]


def test_table_cell_boxes_hold_their_text():
    pdf = shared("native", "docling", "2305.03393v1-pg9.pdf")
    root = replay(pdf)
    cells = [n for n in root.walk() if n.type == T.TABLE_CELL and n.content]
    with pymupdf.open(pdf) as d:
        hits = [norm(text_in_box(d, c.geom[0])) == norm(c.content) for c in cells]
    assert sum(hits) / len(hits) >= 0.9


def test_unmapped_labels_become_missing_with_the_native_label(tmp_path: Path):
    from docling_core.types.doc import (
        BoundingBox,
        CoordOrigin,
        DocItemLabel,
        DoclingDocument,
        ProvenanceItem,
        Size,
    )

    doc = DoclingDocument(name="t")
    doc.add_page(page_no=1, size=Size(width=600, height=800))
    prov = ProvenanceItem(
        page_no=1,
        bbox=BoundingBox(l=60, t=700, r=300, b=680, coord_origin=CoordOrigin.BOTTOMLEFT),
        charspan=(0, 4),
    )
    doc.add_text(label=DocItemLabel.CHECKBOX_SELECTED, text="done", prov=prov)
    doc.add_text(label=DocItemLabel.TEXT, text="body", prov=prov)
    root = replay_on_blank_page(doc, tmp_path, 600, 800)
    missing, para = root.children
    assert missing.type == T.MISSING and missing.metadata["native_label"] == "checkbox_selected"
    assert para.type == T.PARAGRAPH and para.metadata["native_label"] == "text"
    # BOTTOMLEFT t=700 on an 800 pt page -> top = 100/800
    assert para.geom[0].top == pytest.approx(100 / 800) and para.geom[0].bottom == pytest.approx(120 / 800)
    assert para.geom[0].left == pytest.approx(0.1) and para.geom[0].right == pytest.approx(0.5)


def test_markdown_is_doclings_own_export():
    md_path = shared("native", "docling", "multi_page.md")
    native = DoclingParser.load_native(md_path.with_suffix(".json"))
    md = parser().parse_native(native, md_path.with_suffix(".pdf")).markdown
    recorded = md_path.read_text(encoding="utf-8")
    assert Levenshtein.normalized_similarity(md.strip(), recorded.strip()) > 0.97


def test_unreadable_recorded_json_is_a_typed_error(tmp_path: Path):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ParserError) as err:
        DoclingParser.load_native(bad)
    assert "broken.json" in str(err.value)


# -- end to end: fixture -> post-processing -> chunks ----------------------------------------------
def test_failed_conversion_is_a_parser_error_naming_the_file():
    pdf = shared("native", "docling", "multi_page.pdf")
    with pytest.raises(ParserError) as err:
        DoclingParser(converter=RecordedConverter(status="failure")).run(pdf)
    assert "multi_page.pdf" in str(err.value) and "failure" in str(err.value)


@pytest.mark.parametrize("name", ["multi_page", "2305.03393v1-pg9"])
def test_fixture_to_chunks_with_boxes(name: str):
    from grounded.chunking import chunk, document_text

    pdf = shared("native", "docling", f"{name}.pdf")
    out = parser().run(pdf)
    root = out.root
    assert root.metadata["parser"] == "docling"
    assert out.markdown.strip()
    assert not any(n.type == T.PAGE_HEADER for n in root.walk())  # filtered by post-processing
    lined = [n for n in root.walk() if n.type in TEXT_TYPES and n.geom and n.content]
    assert sum(bool(b.spans) for n in lined for b in n.geom) / len(lined) > 0.9  # PDF line spans attached
    result = chunk(root, strategy="hierarchical", max_tokens=128)
    doc = document_text(root)
    assert result.chunks
    with pymupdf.open(pdf) as d:
        page_count = d.page_count
    for c in result.chunks:
        assert c.geom, c.id
        assert all(1 <= b.page <= page_count for b in c.geom)
        assert doc.text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body


def test_nested_lists_and_inline_groups(tmp_path: Path):
    from docling_core.types.doc import BoundingBox, DocItemLabel, DoclingDocument, ProvenanceItem, Size

    def prov(top: float, left: float = 50, right: float = 300) -> ProvenanceItem:
        return ProvenanceItem(
            page_no=1, bbox=BoundingBox(l=left, t=top, r=right, b=top + 10), charspan=(0, 1)
        )

    doc = DoclingDocument(name="t")
    doc.add_page(page_no=1, size=Size(width=500, height=1000))
    outer = doc.add_list_group()
    item = doc.add_list_item("outer item", parent=outer, prov=prov(100))
    inner = doc.add_list_group(parent=item)
    doc.add_list_item("inner item", parent=inner, prov=prov(120, left=70))
    inline = doc.add_inline_group()
    doc.add_text(label=DocItemLabel.TEXT, text="energy is", parent=inline, prov=prov(200, right=120))
    doc.add_formula(text="E = mc^2", parent=inline, prov=prov(200, left=125, right=200))
    root = replay_on_blank_page(doc, tmp_path, 500, 1000)
    lst, para = root.children
    assert lst.type == T.LIST and [c.type for c in lst.children] == [T.LIST_ITEM]
    (outer_item,) = lst.children
    assert outer_item.content == "outer item"
    (inner_list,) = outer_item.children
    assert inner_list.type == T.LIST and inner_list.children[0].content == "inner item"
    assert para.type == T.PARAGRAPH and para.content == "energy is E = mc^2"
    assert para.metadata["native_label"] == "inline"
    (box,) = para.geom  # the parts' boxes united per page
    assert (box.left, box.top, box.right, box.bottom) == pytest.approx((0.1, 0.2, 0.4, 0.21))


@pytest.mark.skipif(importlib.util.find_spec("docling") is not None, reason="docling is installed")
@pytest.mark.parametrize("name", ["docling", "granite_docling"])
def test_cli_reports_the_missing_extra_in_one_line(name: str, tmp_path: Path, capsys):
    from grounded.cli.main import main

    pdf = shared("native", "docling", "multi_page.pdf")
    assert main(["parse", str(pdf), "--parser", name, "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install 'grounded[docling]'" in err
    assert not list(tmp_path.iterdir())
