"""``unstructured`` backend: transform of real recorded ``partition_pdf(strategy="hi_res")`` element
JSON, box cross-checks against the source PDFs, and recorded output -> finish -> chunks.

unstructured itself is not installable here; ``partition_pdf`` is replaced by a callable that
returns the recorded elements of the same PDF.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest

from grounded.errors import BackendUnavailableError
from grounded.model import ParsingResultType
from grounded.parsers import get_parser
from grounded.parsers.backends.unstructured import UnstructuredParser, elements_to_tree, unstructured_box
from grounded.parsers.hierarchy import group_lists
from tests.support.cloud_fixtures import box_text_distances, check_chunks, norm
from tests.support.data import shared

T = ParsingResultType
NAMES = ["embedded-images-tables.pdf", "embedded-images.pdf"]


def recorded(name: str) -> list[dict]:
    return json.loads(shared("native", "unstructured", f"{name}.json").read_text(encoding="utf-8"))


class RecordedPartition:
    """Stands in for ``partition_pdf``: returns the recorded elements of the PDF it is given."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, filename: str, **kwargs) -> list[dict]:
        self.calls.append({"filename": filename, **kwargs})
        return recorded(Path(filename).name)


@pytest.mark.skipif(importlib.util.find_spec("unstructured") is not None, reason="unstructured is installed")
def test_missing_extra_is_a_one_line_pip_hint():
    with pytest.raises(BackendUnavailableError) as err:
        get_parser("unstructured")
    assert isinstance(err.value, ImportError)
    assert "pip install 'grounded[unstructured]'" in str(err.value)
    assert "\n" not in str(err.value)


def test_registry_builds_the_backend_with_an_injected_partition():
    assert isinstance(get_parser("unstructured", partition=RecordedPartition()), UnstructuredParser)


def test_tables_document_keeps_every_element_in_order_with_mapped_labels():
    elements = recorded("embedded-images-tables.pdf")
    root = elements_to_tree(elements)
    kept = [e for e in elements if e["type"] != "PageBreak"]
    assert [c.metadata["native_id"] for c in root.children] == [e["element_id"] for e in kept]
    assert [c.type for c in root.children] == [
        T.UNKNOWN, T.PAGE_HEADER, T.PARAGRAPH, T.FIGURE, T.CAPTION, T.UNKNOWN, T.TABLE,
        T.SECTION_HEADER, T.PARAGRAPH, T.FIGURE, T.UNKNOWN, T.CAPTION,
    ]
    assert all(c.metadata["native_label"] == e["type"] for c, e in zip(root.children, kept))
    assert [c.content for c in root.children if c.type != T.TABLE] == [e["text"] for e in kept if e["type"] != "Table"]
    # no big native payloads copied into metadata
    assert all("image_base64" not in json.dumps(n.metadata) for n in root.walk())


def test_table_html_becomes_rows_and_cells():
    elements = recorded("embedded-images-tables.pdf")
    table = next(n for n in elements_to_tree(elements).walk() if n.type == T.TABLE)
    rows = table.children
    assert [r.type for r in rows] == [T.TABLE_ROW] * 7
    assert rows[0].metadata.get("header") is True
    assert [c.content for c in rows[0].children][:3] == ["Inhibitor concentration (g)", "be (V/dec)", "ba (V/dec)"]
    assert [c.content for c in rows[1].children] == ["0", "0.0335", "0.0409", "—0.9393", "0.0003", "24.0910", "2.8163"]
    assert all(len(r.children) == 7 for r in rows)
    # the same grid as the element's table_as_cells
    cells = next(e for e in elements if e["type"] == "Table")["metadata"]["table_as_cells"]
    for c in cells:
        assert rows[c["y"]].children[c["x"]].content == " ".join(c["content"].split())
    assert table.content.startswith("| Inhibitor concentration (g) |")


def test_table_as_cells_is_used_without_html():
    element = next(e for e in recorded("embedded-images-tables.pdf") if e["type"] == "Table")
    element = {**element, "metadata": {k: v for k, v in element["metadata"].items() if k != "text_as_html"}}
    table = elements_to_tree([element]).children[0]
    assert [c.content for c in table.children[2].children] == ["2", "1.9460", "0.0596", "—0.8276", "0.0002", "121.440", "1.5054"]


def test_pixel_corner_points_become_page_fractions():
    element = recorded("embedded-images-tables.pdf")[2]  # NarrativeText, PixelSpace 1300x1890
    box = unstructured_box(element["metadata"], 1)
    pts = element["metadata"]["coordinates"]["points"]
    assert box.left == pytest.approx(pts[0][0] / 1300) and box.right == pytest.approx(pts[2][0] / 1300)
    assert box.top == pytest.approx(pts[0][1] / 1890) and box.bottom == pytest.approx(pts[1][1] / 1890)
    # the same corners expressed in bottom-left PointSpace (points of a 468 x 680.4 page) give the same box
    scale = 72 / 200
    flipped = {"coordinates": {"system": "PointSpace", "layout_width": 1300 * scale, "layout_height": 1890 * scale,
                               "points": [[x * scale, (1890 - y) * scale] for x, y in pts]}}
    other = unstructured_box(flipped, 1)
    for a, b in zip((box.left, box.top, box.right, box.bottom), (other.left, other.top, other.right, other.bottom)):
        assert a == pytest.approx(b)
    assert unstructured_box({}, 1) is None
    assert unstructured_box({"coordinates": {"system": "Bogus", "points": pts}}, 1) is None


def test_category_depth_becomes_heading_level_and_root_knows_page_sizes():
    elements = recorded("embedded-images.pdf")
    title = next(e for e in elements if e["type"] == "Title")
    root = elements_to_tree([{**title, "metadata": {**title["metadata"], "category_depth": 1}}])
    assert root.children[0].type == T.SECTION_HEADER and root.children[0].metadata["native_level"] == 2
    root = elements_to_tree(elements)
    (page,) = root.metadata["pages"]
    assert page["width"] == pytest.approx(566.9, abs=0.5) and page["height"] == pytest.approx(419.5, abs=0.5)


def test_list_items_are_grouped_and_unknown_types_are_missing():
    base = recorded("embedded-images.pdf")[3]
    items = [{**base, "type": "ListItem", "element_id": f"li{i}", "text": f"item {i}"} for i in range(3)]
    odd = {**base, "type": "Hologram", "element_id": "h"}
    root = elements_to_tree([*items, odd])
    assert [c.type for c in root.children] == [T.LIST_ITEM] * 3 + [T.MISSING]  # grouped by post-processing
    assert group_lists(root) == 1
    lst, missing = root.children
    assert lst.type == T.LIST and [c.type for c in lst.children] == [T.LIST_ITEM] * 3
    assert lst.geom and lst.geom[0].page == 1
    assert missing.type == T.MISSING and missing.metadata["native_label"] == "Hologram"


@pytest.mark.parametrize("name", NAMES)
def test_text_inside_each_box_matches_the_element(name: str):
    root = elements_to_tree(recorded(name))
    distances = box_text_distances(root, shared("native", "unstructured", name))
    assert len(distances) >= 8
    assert max(d for _, d in distances) < 0.2, distances
    assert statistics.mean(d for _, d in distances) < 0.03


def test_markdown_is_rendered_from_the_post_processed_tree():
    """unstructured writes no Markdown: the recorded output replayed with ``parse_native`` gets the
    tree's rendering, without the page header post-processing drops."""
    name = "embedded-images-tables.pdf"
    parser = UnstructuredParser(partition=RecordedPartition())
    native = parser.load_native(shared("native", "unstructured", f"{name}.json"))
    assert native == recorded(name)
    out = parser.parse_native(native, shared("native", "unstructured", name))
    # its one "Title" is a 6.5 pt table column head: post-processing's heading algorithm demotes it
    assert "\nCorrosion rate (mm/year)\n" in out.markdown and "# Corrosion" not in out.markdown
    assert "| 0 | 0.0335 | 0.0409 |" in out.markdown
    assert "Fig. 5. Langmuir adsorption isotherm of ES." in out.markdown
    header = next(e["text"] for e in native if e["type"] == "Header")  # "454", also an UncategorizedText
    assert out.markdown.split("\n\n").count(header) == 1


@pytest.mark.parametrize("name", NAMES)
def test_recorded_output_to_chunks_with_boxes(name: str):
    pdf = shared("native", "unstructured", name)
    partition = RecordedPartition()
    out = UnstructuredParser(partition=partition).run(pdf)
    assert partition.calls[0]["strategy"] == "hi_res" and partition.calls[0]["infer_table_structure"] is True
    root = out.root
    assert root.metadata["parser"] == "unstructured"
    assert not any(n.type in (T.PAGE_HEADER, T.PAGE_FOOTER) for n in root.walk())
    lined = [n for n in root.walk() if n.type in (T.PARAGRAPH, T.CAPTION, T.SECTION_HEADER) and n.geom]
    assert lined and all(b.spans for n in lined for b in n.geom)  # PDF line spans attached
    chunks = check_chunks(root, pdf)
    text = norm(" ".join(c.body for c in chunks))
    assert norm(next(n.content for n in lined)) in text
