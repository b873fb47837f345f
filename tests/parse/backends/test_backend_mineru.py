"""``mineru_pipeline`` / ``mineru_vlm`` backends: middle.json -> tree.

* pipeline 2.7.6 (real output, no PDF): texts equal MinerU's own content_list, boxes equal its
  0-1000 boxes, cross-page / cross-column paragraphs get one box per part.
* legacy 0.7.0b1 (real output WITH its PDF): the text inside each box matches the element.
* VLM (no real output exists): a middle.json is built to the documented VLM schema from the PDF
  text layer of a real shared PDF, transformed back and compared; then run end to end.

MinerU itself is not installed here; the CLI runner is replaced by one that writes recorded or
re-encoded outputs where MinerU would.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from rapidfuzz.distance import Levenshtein

from grounded.errors import BackendUnavailableError, ParserError, SchemaError
from grounded.model import TEXT_TYPES, ParsingResult
from grounded.parsers import get_parser
from grounded.parsers.backends._mineru_tree import block_text, html_table_rows, mineru_to_tree
from grounded.parsers.backends.mineru import MinerUOutput, MinerUPipelineParser, MinerUVLMParser
from tests.support.backends.mineru import (
    LEGACY,
    PIPELINE,
    T,
    copying_runner,
    norm,
    pipeline_output,
    pipeline_parser,
    pipeline_tree,
    replay,
    vlm_middle_from_pdf,
    vlm_parser,
)
from tests.support.cloud_fixtures import RAW, blank_pdf
from tests.support.data import shared


@pytest.fixture(scope="module")
def pipeline_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The aaai26 PDF is not shared: blank pages of the sizes its middle.json gives stand in."""
    sizes = [tuple(p["page_size"]) for p in pipeline_output().middle["pdf_info"]]
    return blank_pdf(tmp_path_factory.mktemp("mineru") / "aaai26_22735.pdf", sizes)






# -- construction ----------------------------------------------------------------------------------
@pytest.mark.skipif(
    shutil.which("mineru") or importlib.util.find_spec("mineru"), reason="MinerU is installed"
)
@pytest.mark.parametrize("name", ["mineru_pipeline", "mineru_vlm"])
def test_missing_extra_names_the_pip_install(name: str):
    with pytest.raises(BackendUnavailableError) as err:
        get_parser(name)
    assert "pip install 'grounded[mineru]'" in str(err.value)


def test_cli_arguments():
    args = MinerUPipelineParser(runner=copying_runner({}), method="txt", lang="en")._cli_args(
        Path("/x/a.pdf"), Path("/out")
    )
    assert args[-8:] == ["-l", "en", "-f", "true", "-t", "true", "-m", "txt"]
    assert args[args.index("-b") : args.index("-b") + 2] == ["-b", "pipeline"]
    vlm = MinerUVLMParser(
        runner=copying_runner({}), backend="vlm-http-client", server_url="http://127.0.0.1:30000"
    )
    args = vlm._cli_args(Path("/x/a.pdf"), Path("/out"))
    assert "vlm-http-client" in args and args[-2:] == ["-u", "http://127.0.0.1:30000"]
    assert MinerUVLMParser(runner=copying_runner({})).backend in ("vlm-transformers", "vlm-mlx-engine")
    with pytest.raises(ValueError):
        MinerUVLMParser(runner=copying_runner({}), backend="pipeline")
    with pytest.raises(ValueError):
        MinerUPipelineParser(runner=copying_runner({}), method="fast")


# -- pipeline 2.7.6: real output without its PDF -------------------------------------------------------
def test_pipeline_texts_equal_minerus_own_content_list(pipeline_pdf: Path):
    native = pipeline_output()
    root = pipeline_tree(pipeline_pdf)
    assert root.metadata["native_format"] == {"backend": "pipeline", "version": "2.7.6"}
    mine: Counter[str] = Counter()
    for node in root.walk():
        if node.type in (T.PARAGRAPH, T.SECTION_HEADER, T.CAPTION, T.FORMULA):
            mine[norm(node.content)] += 1
        elif node.type == T.LIST:  # content_list flattens a list into one text
            mine[norm(" ".join(c.content for c in node.children))] += 1
    theirs: Counter[str] = Counter()
    for item in native.content_list or []:
        if item["type"] == "text" and item["text"].strip():
            theirs[norm(item["text"])] += 1
        elif item["type"] == "equation":
            theirs[norm(item["text"].replace("$$", ""))] += 1
        for caption in item.get("image_caption", []) + item.get("table_caption", []):
            theirs[norm(caption)] += 1
    assert sum(theirs.values()) == 106
    assert mine == theirs


def test_pipeline_boxes_equal_the_content_list_boxes(pipeline_pdf: Path):
    """content_list boxes are the same elements on a 0-1000 grid: checks points -> fractions."""
    native = pipeline_output()
    root = pipeline_tree(pipeline_pdf)
    boxes_by_text: dict[str, list] = {}
    for node in root.walk():
        if node.type in (T.PARAGRAPH, T.SECTION_HEADER) and node.geom:
            boxes_by_text.setdefault(norm(node.content), []).append(node.geom[0])
    checked = 0
    for item in native.content_list or []:
        if item["type"] != "text" or not item["text"].strip():
            continue
        candidates = boxes_by_text.get(norm(item["text"]))
        if not candidates:
            continue  # lists are one content_list text but a LIST node here
        page = item["page_idx"] + 1
        expected = [v / 1000 for v in item["bbox"]]
        assert any(
            b.page == page
            and all(abs(a - e) <= 0.0021 for a, e in zip((b.left, b.top, b.right, b.bottom), expected))
            for b in candidates
        ), (item["text"][:40], expected)
        checked += 1
    assert checked >= 85


def test_pipeline_structure_titles_tables_figures_lists(pipeline_pdf: Path):
    root = pipeline_tree(pipeline_pdf)
    counts = Counter(n.type for n in root.walk())
    assert counts[T.SECTION_HEADER] == 18
    assert counts[T.TABLE] == 3 and counts[T.FIGURE] == 4 and counts[T.FORMULA] == 12
    assert counts[T.CAPTION] == 8  # 5 image captions + 3 table captions
    assert counts[T.LIST] == 1  # the second list block was merged into the first across the page break
    references = next(n for n in root.walk() if n.type == T.LIST)
    assert len(references.children) >= 15
    assert all(c.type == T.LIST_ITEM for c in references.children)
    assert references.children[0].content.startswith("Liang, S.; Li, X.;")
    assert {b.page for b in references.geom} == {8, 9}  # pages 1-based; MinerU page_idx 7 and 8
    table = next(n for n in root.walk() if n.type == T.TABLE)
    assert table.content.startswith("<table>") and table.image and table.image.startswith("images/")
    assert [c.content for c in table.children[0].children] == [
        "Attribute",
        "MIMIC-III MIMIC-IV MED",
        "GU",
        "MIMIC-IV OMED",
    ]
    second = [n for n in root.walk() if n.type == T.TABLE][1]
    first_row = second.children[0].children
    assert [(c.content, c.metadata["row_span"], c.metadata["col_span"]) for c in first_row[:3]] == [
        ("EK", 2, 1),
        ("Methods", 2, 1),
        ("MIMIC-III-MED", 1, 4),
    ]
    assert second.children[1].children[0].metadata["col"] == 2  # shifted right by the two row-spanning cells
    figure = next(n for n in root.walk() if n.type == T.FIGURE)
    assert figure.image and figure.image.endswith(".jpg")
    headers = [n for n in root.walk() if n.type == T.SECTION_HEADER]
    assert "level" not in headers[0].metadata  # MinerU 2.7 pipeline gives no title levels


def test_pipeline_paragraphs_merged_across_pages_and_columns_get_a_box_per_part(pipeline_pdf: Path):
    root = pipeline_tree(pipeline_pdf)
    multi = [n for n in root.walk() if n.type == T.PARAGRAPH and len(n.geom) > 1]
    across_pages = [n for n in multi if len({b.page for b in n.geom}) == 2]
    across_columns = [n for n in multi if len({b.page for b in n.geom}) == 1]
    assert len(across_pages) == 2 and len(across_columns) == 3
    for node in across_pages:
        first, second = node.geom
        assert second.page == first.page + 1 and second.top < 0.1  # continues at the top of the next page
    for node in across_columns:
        left, right = node.geom
        assert left.right < 0.5 < right.left  # first column, then second column


def test_pipeline_every_box_is_on_its_page(pipeline_pdf: Path):
    root = pipeline_tree(pipeline_pdf)
    pages = {p["page"]: p for p in root.metadata["pages"]}
    assert sorted(pages) == list(range(1, 10)) and pages[1]["width"] == 612
    boxed = [n for n in root.walk() if n.geom]
    assert len(boxed) > 100
    assert all(b.page in pages and b.area > 0 for n in boxed for b in n.geom)


def test_discarded_blocks_are_optional(pipeline_pdf: Path):
    default = pipeline_tree(pipeline_pdf)
    with_discarded = pipeline_tree(pipeline_pdf, discarded=True)
    extra = [n for n in with_discarded.walk() if n.type == T.MISSING]
    assert not [n for n in default.walk() if n.type == T.MISSING]
    assert len(extra) == 1 and extra[0].metadata["native_label"] == "discarded"
    assert extra[0].content.startswith("*Corresponding author")


def test_markdown_is_minerus_own_or_rendered_from_the_tree(pipeline_pdf: Path):
    """MinerU's own .md when the output has one; without it, the post-processed tree rendered."""
    native = pipeline_output()
    md = pipeline_parser().parse_native(native, pipeline_pdf).markdown
    assert md == shared(*PIPELINE, "aaai26_22735.md").read_text(encoding="utf-8")
    without_md = MinerUOutput(native.middle, None, native.content_list)
    generated = pipeline_parser().parse_native(without_md, pipeline_pdf).markdown
    assert generated.startswith("# Knowledge-Enhanced Explainable Hypergraph Convolution Network")
    assert "$$" in generated and "| Attribute | MIMIC-III MIMIC-IV MED | GU | MIMIC-IV OMED |" in generated
    assert Levenshtein.normalized_similarity(norm(generated), norm(md)) > 0.8


# -- span joining and HTML tables -------------------------------------------------------------------
def test_block_text_joins_like_mineru():
    def line(*spans: tuple[str, str]) -> dict[str, Any]:
        return {"spans": [{"type": t, "content": c} for t, c in spans]}

    lines = [
        line(("text", "integration process in both intra-")),
        line(("text", "metapath level and MIMIC-")),
    ]
    lines.append(
        line(("text", "IV data with"), ("inline_equation", "\\lambda _ { 1 }"), ("text", "weights."))
    )
    assert block_text(lines) == (
        "integration process in both intrametapath level and MIMIC-IV data with $\\lambda _ { 1 }$ weights."
    )
    assert block_text([line(("text", "中文文本")), line(("text", "第二行"))]) == "中文文本第二行"


def test_html_table_rows_place_spanning_cells():
    rows = html_table_rows(
        "<table><tr><td rowspan='2'>a</td><td colspan=2>b</td></tr><tr><td>c</td><td>d &amp; e</td></tr></table>"
    )
    assert [[(c["text"], c["row"], c["col"]) for c in r] for r in rows] == [
        [("a", 0, 0), ("b", 0, 1)],
        [("c", 1, 1), ("d & e", 1, 2)],
    ]
    # a 4x4 grid: spans from the left and from rows above, an empty <tr> under row spans
    rows = html_table_rows(
        "<table><tr><td rowspan=3>a</td><td colspan=2>b</td><td rowspan=2>c</td></tr>"
        "<tr><td>d</td><td>e</td></tr><tr><td colspan=3>f</td></tr>"
        "<tr><td rowspan=2 colspan=4>g</td></tr><tr></tr><tr><td>h</td></tr></table>"
    )
    assert [[(c["text"], c["row"], c["col"], c["row_span"], c["col_span"]) for c in r] for r in rows] == [
        [("a", 0, 0, 3, 1), ("b", 0, 1, 1, 2), ("c", 0, 3, 2, 1)],
        [("d", 1, 1, 1, 1), ("e", 1, 2, 1, 1)],
        [("f", 2, 1, 1, 3)],
        [("g", 3, 0, 2, 4)],
        [],
        [("h", 5, 0, 1, 1)],
    ]


def test_html_table_rows_cell_text():
    """th like td, <br> and nested tags, entities, whitespace, bad spans, tables nested in a cell."""
    rows = html_table_rows(
        "<table><thead><tr><th>H&nbsp;1</th><th colspan='x'>H<sub>2</sub>O</th></tr></thead>"
        "<tbody><tr><td>x<br>y<br/>z</td><td>\n  <b>a &lt;b&gt;</b> &#955; &quot;q&quot;  </td></tr>"
        "<tr><td rowspan='0'>out<table><tr><td>in</td><td>2</td></tr></table>tail</td><td></td></tr></tbody></table>"
    )
    assert [[(c["text"], c["row"], c["col"], c["row_span"], c["col_span"]) for c in r] for r in rows] == [
        [("H 1", 0, 0, 1, 1), ("H2O", 0, 1, 1, 1)],
        [("x y z", 1, 0, 1, 1), ('a <b> λ "q"', 1, 1, 1, 1)],
        [("out in 2 tail", 2, 0, 1, 1), ("", 2, 1, 1, 1)],
    ]
    assert html_table_rows("") == [] and html_table_rows("<tr><td>a</td></tr>") == [
        [{"text": "a", "row": 0, "col": 0, "row_span": 1, "col_span": 1}]
    ]


def test_real_tables_tile_their_grid(pipeline_pdf: Path):
    """Every cell of the real tables (with row/col spans) lands on free grid slots, filling a rectangle."""
    root = pipeline_tree(pipeline_pdf)
    tables = [n for n in root.walk() if n.type == T.TABLE]
    assert len(tables) == 3
    for table in tables:
        slots: Counter[tuple[int, int]] = Counter()
        for r, row in enumerate(table.children):
            assert row.type == T.TABLE_ROW and row.metadata["row"] == r
            for cell in row.children:
                m = cell.metadata
                assert m["row"] == r
                slots.update(
                    (m["row"] + dr, m["col"] + dc) for dr in range(m["row_span"]) for dc in range(m["col_span"])
                )
        n_rows, n_cols = max(r for r, _ in slots) + 1, max(c for _, c in slots) + 1
        assert set(slots.values()) == {1} and len(slots) == n_rows * n_cols == len(table.children) * n_cols
    assert [(len(t.children), max(c.metadata["col"] + c.metadata["col_span"] for r in t.children for c in r.children))
            for t in tables] == [(6, 4), (13, 14), (7, 13)]


def test_not_a_middle_json_is_a_typed_error(tmp_path: Path):
    bad = tmp_path / "x_middle.json"
    bad.write_text(json.dumps({"pages": []}), encoding="utf-8")
    with pytest.raises(ParserError) as err:
        MinerUOutput.from_files(bad)
    assert "x_middle.json" in str(err.value) and "pdf_info" in str(err.value)
    with pytest.raises(SchemaError):
        mineru_to_tree({"pages": []})


# -- legacy 0.7.0b1: real output with its PDF --------------------------------------------------------
def test_legacy_output_boxes_hold_their_text():
    """OCR'd text without most spaces: compared with whitespace removed."""
    base = shared(*LEGACY)
    root = replay(pipeline_parser(**RAW), MinerUPipelineParser.load_native(base / "middle.json"), base / "one_page_with_table_image.pdf")
    assert root.metadata["native_format"] == {"backend": "pipeline", "version": "0.7.0b1"}
    counts = Counter(n.type for n in root.walk())
    assert counts[T.FIGURE] == 3 and counts[T.CAPTION] == 3 and counts[T.PARAGRAPH] == 4
    dist = []
    with pymupdf.open(base / "one_page_with_table_image.pdf") as pdf:
        page = pdf[0]
        w, h = page.rect.width, page.rect.height
        for node in root.walk():
            if node.type in TEXT_TYPES and node.geom:
                (box,) = node.geom
                found = page.get_text(
                    "text", clip=pymupdf.Rect(box.left * w, box.top * h, box.right * w, box.bottom * h)
                )
                dist.append(
                    Levenshtein.normalized_distance("".join(found.split()), "".join(node.content.split()))
                )
    assert len(dist) == 7
    assert max(dist) < 0.1, dist


def test_legacy_run_end_to_end_with_its_pdf():
    from grounded.chunking import chunk, document_text

    base = shared(*LEGACY)
    pdf = base / "one_page_with_table_image.pdf"
    out = MinerUPipelineParser(runner=copying_runner({"_middle.json": base / "middle.json"})).run(pdf)
    assert out.root.metadata["parser"] == "mineru_pipeline"
    assert out.markdown.strip()  # generated: the legacy pair has no .md
    result = chunk(out.root, strategy="fixed", max_tokens=64, overlap=8)
    doc = document_text(out.root)
    assert len(result.chunks) >= 4
    for c in result.chunks:
        assert c.geom and all(b.page == 1 for b in c.geom)
        assert doc.text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body


def test_runner_without_output_is_a_parser_error():
    pdf = shared(*LEGACY, "one_page_with_table_image.pdf")
    with pytest.raises(ParserError) as err:
        MinerUPipelineParser(runner=copying_runner({})).run(pdf)
    assert "one_page_with_table_image.pdf" in str(err.value) and "no usable output" in str(err.value)












@pytest.fixture(scope="module")
def clinsci_vlm(clinsci_pdf: Path) -> tuple[dict[str, Any], list[tuple[str, str, int, list[int]]]]:
    return vlm_middle_from_pdf(clinsci_pdf)




def test_vlm_fixture_round_trip(clinsci_vlm, clinsci_pdf: Path, tmp_path: Path):
    middle, expected = clinsci_vlm
    path = tmp_path / "clinsci_middle.json"
    path.write_text(json.dumps(middle), encoding="utf-8")
    root = replay(vlm_parser(**RAW), MinerUVLMParser.load_native(path), clinsci_pdf)
    assert root.metadata["native_format"] == {"backend": "vlm", "version": "2.5.4"}
    nodes = list(root.walk())[1:]
    assert [(n.type.value, n.content) for n in nodes] == [(t, text) for t, text, _, _ in expected]
    assert len(nodes) > 80
    sizes = {p["page"]: (p["width"], p["height"]) for p in root.metadata["pages"]}
    for node, (_, _, page, bbox) in zip(nodes, expected):
        (box,) = node.geom
        w, h = sizes[page]
        assert box.page == page
        assert box.to_points(w, h) == pytest.approx(tuple(bbox), abs=1e-6)
    kinds = Counter(n.type for n in nodes)
    assert kinds[T.SECTION_HEADER] >= 5 and kinds[T.FIGURE] >= 3 and kinds[T.REFERENCE_ITEM] >= 5
    title = next(n for n in nodes if n.type == T.SECTION_HEADER)
    assert title.metadata["native_level"] == 1 and title.content.startswith("Fragment-based design")
    refs = next(n for n in nodes if n.type == T.REFERENCE_LIST)
    assert refs.metadata["sub_type"] == "ref_text" and all(c.type == T.REFERENCE_ITEM for c in refs.children)


def test_vlm_discarded_blocks_map_to_page_furniture(clinsci_vlm, clinsci_pdf: Path):
    middle, _ = clinsci_vlm
    root = replay(vlm_parser(discarded=True, **RAW), MinerUOutput(middle), clinsci_pdf)
    kinds = Counter(n.type for n in root.walk())
    assert kinds[T.PAGE_HEADER] >= 10 and kinds[T.PAGE_FOOTER] >= 1
    aside = [n for n in root.walk() if n.metadata.get("native_label") == "aside_text"]
    assert aside and all(n.type == T.UNKNOWN and n.metadata["angle"] == 90 for n in aside)


def test_vlm_fixture_boxes_hold_their_text(clinsci_vlm, clinsci_pdf: Path):
    root = replay(vlm_parser(**RAW), MinerUOutput(clinsci_vlm[0]), clinsci_pdf)
    dist = []
    with pymupdf.open(clinsci_pdf) as pdf:
        for node in root.walk():
            if node.type in TEXT_TYPES and node.geom and len(node.content) >= 20:
                (box,) = node.geom
                page = pdf[box.page - 1]
                w, h = page.rect.width, page.rect.height
                clip = pymupdf.Rect(box.left * w - 1, box.top * h - 1, box.right * w + 1, box.bottom * h + 1)
                dist.append(
                    Levenshtein.normalized_distance(
                        norm(page.get_text("text", clip=clip)), norm(node.content)
                    )
                )
    assert statistics.median(dist) < 0.02
    assert sum(d < 0.1 for d in dist) / len(dist) > 0.9


def test_vlm_fixture_to_chunks_with_boxes(clinsci_vlm, clinsci_pdf: Path):
    from grounded.chunking import chunk, document_text

    out = vlm_parser(clinsci_vlm[0]).run(clinsci_pdf)
    root: ParsingResult = out.root
    assert root.metadata["parser"] == "mineru_vlm" and root.metadata["page_count"] == 13
    assert not any(n.type in (T.REFERENCE_LIST, T.REFERENCE_ITEM) for n in root.walk())  # filtered
    headers = [n for n in root.walk() if n.type == T.SECTION_HEADER]
    assert any(h.children for h in headers)  # hierarchy inferred from the title levels
    lined = [n for n in root.walk() if n.type in TEXT_TYPES and n.geom and n.content]
    assert sum(bool(b.spans) for n in lined for b in n.geom) / len(lined) > 0.95
    result = chunk(root, strategy="hierarchical", max_tokens=256)
    doc = document_text(root)
    assert len(result.chunks) >= 10
    pages = set()
    for c in result.chunks:
        assert c.geom and all(1 <= b.page <= 13 for b in c.geom)
        assert doc.text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body
        pages.update(c.pages)
    assert len(pages) >= 10


def test_vlm_code_and_list_blocks_from_the_schema_examples():
    """The two VLM examples of MinerU's output_files.md (list with level-2 items, code with caption)."""

    def block(kind: str, bbox: list[int], text: str, index: int) -> dict[str, Any]:
        return {"type": kind, "bbox": bbox, "angle": 0, "index": index,
                "lines": [{"bbox": bbox, "spans": [{"bbox": bbox, "type": "text", "content": text}]}]}  # fmt: skip

    listing = {"bbox": [174, 155, 818, 333], "type": "list", "angle": 0, "index": 11, "sub_type": "text",
               "blocks": [block("text", [174, 157, 311, 175], "H.1 Introduction", 3),
                          block("text", [175, 182, 464, 229], "H.2 Example: Divide by Zero without Exception Handling", 4)]}  # fmt: skip
    code = {"type": "code", "bbox": [114, 160, 885, 1231], "index": 17, "sub_type": "code",
            "blocks": [block("code_body", [114, 780, 885, 1231], "1 // Fig. H.1\n2 import java.util.Scanner;", 17),
                       block("code_caption", [867, 160, 1280, 189], "Algorithm 1 Modules for MCTSteg", 19)]}  # fmt: skip
    middle = {"_backend": "vlm", "_version_name": "2.5.0",
              "pdf_info": [{"page_idx": 0, "page_size": [1300, 1300], "para_blocks": [listing, code], "discarded_blocks": []}]}  # fmt: skip
    root = mineru_to_tree(middle)
    lst, body, caption = root.children
    assert lst.type == T.LIST and [c.content for c in lst.children] == [
        "H.1 Introduction",
        "H.2 Example: Divide by Zero without Exception Handling",
    ]
    assert lst.children[1].geom[0].to_points(1300, 1300) == pytest.approx((175, 182, 464, 229))
    assert body.type == T.PARAGRAPH and body.metadata["native_label"] == "code_body"
    assert caption.type == T.CAPTION and caption.content == "Algorithm 1 Modules for MCTSteg"


@pytest.mark.skipif(
    shutil.which("mineru") or importlib.util.find_spec("mineru"), reason="MinerU is installed"
)
@pytest.mark.parametrize("name", ["mineru_pipeline", "mineru_vlm"])
def test_cli_reports_the_missing_extra_in_one_line(name: str, tmp_path: Path, capsys):
    from grounded.cli.main import main

    pdf = shared(*LEGACY, "one_page_with_table_image.pdf")
    assert main(["parse", str(pdf), "--parser", name, "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install 'grounded[mineru]'" in err
    assert not list(tmp_path.iterdir())
