"""``granite_docling`` backend: DocTags (0..500 loc grid) -> tree.

Fixtures: raw VLM DocTags generations with their page images (no PDF), and docling-core's
DocTags export of the standard pipeline for two shared PDFs (box cross-check possible). The VLM
pipeline is not installed here; its converter is replaced by one returning recorded DocTags pages.
"""

from __future__ import annotations

import importlib.util
import statistics
from collections import Counter
from pathlib import Path

import pymupdf
import pytest
from PIL import Image
from rapidfuzz.distance import Levenshtein

from grounded.errors import BackendUnavailableError, ParserError
from grounded.model import TEXT_TYPES
from grounded.parsers import get_parser
from grounded.parsers.backends._docling_tree import docling_to_tree
from grounded.parsers.backends.docling import load_docling_document
from grounded.parsers.backends.granite_docling import DOCTAGS_GRID, DocTagsPages, GraniteDoclingParser
from tests.support.backends.granite_docling import (
    GRID_TOL,
    RecordedVlmConverter,
    T,
    export_pages,
    image_pdf,
    norm,
    page_sizes,
    parser,
    replay,
)
from tests.support.data import shared


@pytest.mark.skipif(importlib.util.find_spec("docling") is not None, reason="docling is installed")
def test_missing_extra_names_the_pip_install():
    with pytest.raises(BackendUnavailableError) as err:
        get_parser("granite_docling")
    assert "pip install 'grounded[docling]'" in str(err.value)


def test_framework_choice_is_validated():
    with pytest.raises(ValueError):
        GraniteDoclingParser(framework="onnx", converter=RecordedVlmConverter(DocTagsPages([])))
    assert parser().framework in ("mlx", "transformers")


# -- raw VLM DocTags (page images, no PDF) ---------------------------------------------------------
def test_raw_generation_matches_docling_cores_own_loading(tmp_path: Path):
    """page_with_pic.dt.json is docling-core's load_from_doctags of the .dt with its 1412x2040 image."""
    dt = shared("native", "docling_vlm_doctags", "page_with_pic.dt")
    mine = replay(GraniteDoclingParser.load_native(dt), image_pdf(dt, tmp_path))
    reference = docling_to_tree(load_docling_document(dt.with_name("page_with_pic.dt.json")))
    a, b = list(mine.walk()), list(reference.walk())
    assert [(n.type, n.content) for n in a] == [(n.type, n.content) for n in b]
    assert len(a) == 18
    for x, y in zip(a, b):
        assert len(x.geom) == len(y.geom)
        for bx, by in zip(x.geom, y.geom):
            for side in ("left", "top", "right", "bottom"):
                assert getattr(bx, side) == pytest.approx(getattr(by, side), abs=1e-6)


@pytest.mark.parametrize("name", ["page_with_pic", "01030000000083", "01030000000111"])
def test_raw_generations_give_boxes_on_the_loc_grid(name: str, tmp_path: Path):
    dt = shared("native", "docling_vlm_doctags", f"{name}.dt")
    text = dt.read_text(encoding="utf-8")
    root = replay(DocTagsPages.from_files([dt]), image_pdf(dt, tmp_path))
    nodes = list(root.walk())[1:]
    assert root.metadata["doctags_grid"] == DOCTAGS_GRID
    with Image.open(dt.with_suffix(".png")) as im:  # page sizes are the PDF's, not the 500-grid
        assert [(p["width"], p["height"]) for p in root.metadata["pages"]] == [im.size]
    boxes = [b for n in nodes for b in n.geom]
    assert boxes
    for box in boxes:
        for side in ("left", "top", "right", "bottom"):
            loc = getattr(box, side) * DOCTAGS_GRID
            assert loc == pytest.approx(round(loc), abs=1e-6)
            assert f"<loc_{round(loc)}>" in text
    # the text of every element is in the generation
    for node in nodes:
        if node.content and node.type not in (T.TABLE,):
            assert norm(node.content)[:30] in norm(text)
    # the page images are the model input: each box maps onto the image
    with Image.open(dt.with_suffix(".png")) as im:
        w, h = im.size
    assert all(0 <= b.left * w <= b.right * w <= w and 0 <= b.top * h <= b.bottom * h <= h for b in boxes)


def test_tables_captions_and_formulas_of_raw_generations(tmp_path: Path):
    dt = shared("native", "docling_vlm_doctags", "01030000000083.dt")
    tables = replay(DocTagsPages.from_files([dt]), image_pdf(dt, tmp_path))
    counts = Counter(n.type for n in tables.walk())
    assert counts[T.TABLE] == 3 and counts[T.CAPTION] == 3
    first = next(n for n in tables.walk() if n.type == T.TABLE)
    assert [c.content for c in first.children[0].children][:2] == [
        "Category",
        "Number of  clauses in  Union laws",
    ]
    assert len(first.children) == 8  # header + 7 rows
    caption = tables.children[0]
    assert caption.type == T.CAPTION and caption.content.startswith("TABLE 35")
    assert caption.geom[0].top == pytest.approx(58 / 500)

    dt = shared("native", "docling_vlm_doctags", "01030000000111.dt")
    figures = replay(DocTagsPages.from_files([dt]), image_pdf(dt, tmp_path))
    counts = Counter(n.type for n in figures.walk())
    assert counts[T.FORMULA] == 3 and counts[T.FIGURE] == 1 and counts[T.SECTION_HEADER] == 2
    formula = next(n for n in figures.walk() if n.type == T.FORMULA)
    assert formula.content.startswith("\\upsilon = \\frac { k } { r }")


# -- DocTags of shared PDFs: box cross-check ---------------------------------------------------------
@pytest.mark.parametrize("name", ["multi_page", "2305.03393v1-pg9"])
def test_doctags_boxes_match_the_pdf_text(name: str):
    pages = export_pages(name)
    pdf = shared("native", "docling", f"{name}.pdf")
    root = replay(pages, pdf)
    assert len(pages.pages) == len(page_sizes(pdf))
    assert root.metadata["pages"][0]["width"] == pytest.approx(page_sizes(pdf)[0][0])
    dist = []
    with pymupdf.open(pdf) as d:
        for node in root.walk():
            if node.type in TEXT_TYPES and node.geom and len(node.content) >= 20:
                (box,) = node.geom
                page = d[box.page - 1]
                w, h = page.rect.width, page.rect.height
                # grow by one grid step: loc rounding may cut a glyph edge
                clip = pymupdf.Rect((box.left - GRID_TOL) * w, (box.top - GRID_TOL) * h,
                                    (box.right + GRID_TOL) * w, (box.bottom + GRID_TOL) * h)  # fmt: skip
                found = page.get_text("text", clip=clip)
                dist.append(Levenshtein.normalized_distance(norm(found), norm(node.content)))
    assert len(dist) >= 4
    assert statistics.median(dist) < 0.03
    assert max(dist) < 0.15


@pytest.mark.parametrize("name", ["multi_page", "2305.03393v1-pg9"])
def test_doctags_round_trip_of_the_standard_parse(name: str):
    """The DocTags export re-read by this backend gives the same elements and boxes (to 1/500)
    as the DoclingDocument it was exported from."""
    pdf = shared("native", "docling", f"{name}.pdf")
    ref = docling_to_tree(load_docling_document(pdf.with_suffix(".json")))
    got = replay(GraniteDoclingParser.load_native(pdf.with_suffix(".doctags.txt")), pdf)
    skip = (T.ROOT, T.TABLE_ROW, T.TABLE_CELL)  # export has no cell boxes; the grid is compared below
    a = [n for n in got.walk() if n.type not in skip]
    b = [n for n in ref.walk() if n.type not in skip]
    assert [(n.type, norm(n.content)) for n in a if n.type != T.TABLE] == [
        (n.type, norm(n.content)) for n in b if n.type != T.TABLE
    ]
    for x, y in zip(a, b):
        assert [g.page for g in x.geom] == [g.page for g in y.geom]
        for gx, gy in zip(x.geom, y.geom):
            for side in ("left", "top", "right", "bottom"):
                assert getattr(gx, side) == pytest.approx(getattr(gy, side), abs=GRID_TOL)
    for tx, ty in zip((n for n in a if n.type == T.TABLE), (n for n in b if n.type == T.TABLE)):
        assert [c.content for r in tx.children for c in r.children] == [
            c.content for r in ty.children for c in r.children
        ]


def test_markdown_comes_from_the_doctags_document():
    pdf = shared("native", "docling", "multi_page.pdf")
    md = parser().parse_native(export_pages("multi_page"), pdf).markdown
    recorded = shared("native", "docling", "multi_page.md").read_text(encoding="utf-8")
    assert Levenshtein.normalized_similarity(md.strip(), recorded.strip()) > 0.9


def test_page_sizes_must_match_the_pages():
    with pytest.raises(ValueError):
        DocTagsPages.from_text(
            "<doctag><text><loc_1><loc_1><loc_2><loc_2>x</text></doctag>", [(1, 1), (2, 2)]
        )


def test_empty_generation_is_a_parser_error():
    pdf = shared("native", "docling", "2305.03393v1-pg9.pdf")
    with pytest.raises(ParserError) as err:
        parser(DocTagsPages.from_text("", page_sizes(pdf))).run(pdf)
    assert "no DocTags" in str(err.value)


# -- end to end ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["multi_page", "2305.03393v1-pg9"])
def test_fixture_to_chunks_with_boxes(name: str):
    from grounded.chunking import chunk, document_text

    pdf = shared("native", "docling", f"{name}.pdf")
    out = parser(export_pages(name)).run(pdf)
    root = out.root
    assert root.metadata["parser"] == "granite_docling"
    assert out.markdown.strip()
    lined = [n for n in root.walk() if n.type in TEXT_TYPES and n.geom and n.content]
    assert sum(bool(b.spans) for n in lined for b in n.geom) / len(lined) > 0.9
    result = chunk(root, strategy="recursive", max_tokens=96)
    doc = document_text(root)
    assert len(result.chunks) >= 2
    n_pages = len(page_sizes(pdf))
    index = root.index()
    for c in result.chunks:
        # OTSL tables carry no cell boxes: such cells are located by their table's box
        assert c.geom, c.id
        for eid, _, _ in c.metadata["element_spans"]:
            if not index[eid].geom:
                table_ids = {a.id for a in index[eid].ancestors() if a.geom}
                assert any(b.element_id in table_ids and b.mode == "element" for b in c.geom), c.id
        assert all(1 <= b.page <= n_pages for b in c.geom)
        assert doc.text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body
    outside_tables = [
        c
        for c in result.chunks
        if any(index[e].type != T.TABLE_CELL for e, _, _ in c.metadata["element_spans"])
    ]
    assert outside_tables and all(c.geom for c in outside_tables)
