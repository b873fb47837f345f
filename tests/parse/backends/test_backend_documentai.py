"""``documentai`` backend: the real Layout Parser output (no PDF, no boxes), the real OCR invoice
Document with its PDF (normalized vertices -> box cross-check), and a real parse of a shared PDF
re-encoded as a Layout Parser document *with* bounding boxes, validated by the SDK's own
``documentai.Document`` type and served by a fake client (also page-sliced for long PDFs).
No network: the client is injected.
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path

import pymupdf
import pytest
from google.api_core import exceptions as gexc
from google.cloud import documentai

from grounded.errors import MissingCredentialsError, RemoteServiceError
from grounded.parsers import get_parser
from grounded.parsers.backends.documentai import DocumentAIParser, document_to_tree, vertices_to_box
from grounded.runtime.cloud import RetryPolicy
from tests.support.backends.documentai import (
    IDS,
    NO_WAIT,
    FakeDocumentAI,
    T,
    as_sdk_document,
    count_blocks,
    invoice_json,
    layout_document,
    layout_json,
)
from tests.support.cloud_fixtures import (
    RAW,
    RefElement,
    assert_same_as_reference,
    blank_pdf,
    box_text_distances,
    check_chunks,
    norm,
    reference_elements,
)
from tests.support.data import shared


@pytest.fixture(scope="module")
def clinsci_refs(clinsci_pdf: Path) -> list[RefElement]:
    return reference_elements(clinsci_pdf, [1, 2])


# -- real Layout Parser output (no boxes) ------------------------------------------------------
def test_real_layout_parser_output_keeps_every_block_and_its_nesting():
    data = layout_json()
    root = document_to_tree(data)
    nodes = [n for n in root.walk() if n.type != T.ROOT]
    assert len(nodes) == count_blocks(data["documentLayout"]["blocks"]) == 175
    chapter, pooh = root.children
    assert (chapter.type, chapter.content, chapter.metadata["native_level"]) == (T.SECTION_HEADER, "CHAPTER I", 1)
    assert chapter.metadata["page_span"] == [1, 8] and len(chapter.children) == 46
    sub = next(c for c in chapter.children if c.type == T.SECTION_HEADER)
    assert (sub.content, sub.metadata["native_level"], len(sub.children)) == ("WE ARE INTRODUCED", 2, 46)
    assert pooh.content == "WINNIE-THE-POOH" and pooh.metadata["page_span"] == [8, 15]
    headers = [n for n in nodes if n.type == T.PAGE_HEADER]
    assert [h.content for h in headers] == ["3", "8", "II", "WINNIE-THE-POOH", "13"]
    assert all(n.geom == [] and n.metadata["page_span"][0] >= 1 for n in nodes)  # no boxes in this output
    assert [n.metadata["native_id"] for n in nodes[:3]] == ["1", "2", "3"]


def test_real_layout_output_through_the_sdk_message_type_gives_the_same_tree():
    data = layout_json()
    via_sdk = json.loads(documentai.Document.to_json(documentai.Document.from_json(json.dumps(data), ignore_unknown_fields=True)))
    assert document_to_tree(via_sdk) == document_to_tree(data)
    snake = documentai.Document.to_dict(as_sdk_document({"documentLayout": data["documentLayout"]}))
    assert document_to_tree(snake) == document_to_tree(data)  # proto field names work too


def test_real_layout_output_markdown_and_chunks_without_boxes(tmp_path: Path):
    """Replayed with ``parse_native`` (its PDF is not shared: blank pages stand in, the output has
    no boxes); Document AI writes no Markdown, so it is rendered once, from the finished tree."""
    from grounded.chunking import chunk, document_text

    parser = DocumentAIParser(client=FakeDocumentAI(lambda request: None), **IDS)
    data = parser.load_native(shared("native", "google_documentai", "layout_parser", "layout_parser.json"))
    assert data == layout_json()
    out = parser.parse_native(data, blank_pdf(tmp_path / "pooh.pdf", [(612.0, 792.0)] * 15))
    md = out.markdown
    assert md.startswith("# CHAPTER I\n\nIN WHICH We Are Introduced to") and "## WE ARE INTRODUCED" in md
    assert "# WINNIE-THE-POOH" in md
    headers = [n.content for n in document_to_tree(data).walk() if n.type == T.PAGE_HEADER]
    assert headers == ["3", "8", "II", "WINNIE-THE-POOH", "13"]
    assert not any(block in headers[:3] + headers[4:] for block in md.split("\n\n"))  # dropped page headers
    root = out.root
    result = chunk(root, strategy="hierarchical", max_tokens=128)
    doc = document_text(root)
    assert len(result.chunks) > 20
    for c in result.chunks:
        assert doc.text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body
        assert c.metadata["heading_path"][0] in ("CHAPTER I", "WINNIE-THE-POOH")
    assert any(c.metadata["heading_path"] == ["CHAPTER I", "WE ARE INTRODUCED"] for c in result.chunks)


def test_tables_lists_images_and_unknown_types():
    cell = lambda text: {"blocks": [{"textBlock": {"text": text, "type": "paragraph"}}]}  # noqa: E731
    data = {"documentLayout": {"blocks": [
        {"blockId": "t", "pageSpan": {"pageStart": 2, "pageEnd": 2},
         "tableBlock": {"caption": "Table 1 Doses", "headerRows": [{"cells": [cell("Drug"), cell("Dose")]}],
                        "bodyRows": [{"cells": [cell("A"), {**cell("5 mg"), "colSpan": 2}]}]}},
        {"blockId": "l", "pageSpan": {"pageStart": 2, "pageEnd": 3},
         "listBlock": {"type": "ordered", "listEntries": [{"blocks": [{"textBlock": {"text": "first", "type": "paragraph"}}]},
                                                          {"blocks": [{"textBlock": {"text": "second", "type": "paragraph"}}]}]}},
        {"blockId": "i", "pageSpan": {"pageStart": 3, "pageEnd": 3}, "imageBlock": {"imageText": "chart of doses"}},
        {"blockId": "q", "pageSpan": {"pageStart": 3, "pageEnd": 3}, "textBlock": {"text": "x", "type": "marginalia"}},
    ]}}
    caption, table, lst, image, odd = document_to_tree(data).children
    assert caption.type == T.CAPTION and caption.content == "Table 1 Doses"
    assert [[c.content for c in r.children] for r in table.children] == [["Drug", "Dose"], ["A", "5 mg"]]
    assert table.children[0].metadata["header"] is True and table.children[1].children[1].metadata["col_span"] == 2
    assert lst.metadata["list_type"] == "ordered" and [c.content for c in lst.children] == ["first", "second"]
    assert all(c.type == T.LIST_ITEM for c in lst.children)
    assert image.type == T.FIGURE and image.content == "chart of doses"
    assert odd.type == T.MISSING and odd.metadata["native_label"] == "marginalia"


# -- real OCR Document with its PDF ------------------------------------------------------------
def test_vertices_normalized_or_in_pixels_give_the_same_box():
    page = invoice_json()["pages"][0]
    poly = page["blocks"][0]["layout"]["boundingPoly"]
    w, h = page["dimension"]["width"], page["dimension"]["height"]
    a = vertices_to_box({"normalizedVertices": poly["normalizedVertices"]}, 1)
    b = vertices_to_box({"vertices": poly["vertices"]}, 1, w, h)
    for x, y in zip((a.left, a.top, a.right, a.bottom), (b.left, b.top, b.right, b.bottom)):
        assert x == pytest.approx(y, abs=1e-3)
    assert vertices_to_box({"normalizedVertices": [{"y": 0.1}, {"x": 0.5, "y": 0.1}, {"x": 0.5, "y": 0.2}, {"y": 0.2}]}, 1).left == 0.0
    assert vertices_to_box({"vertices": poly["vertices"]}, 1) is None  # pixels without a page size


def test_invoice_paragraphs_and_table_cells_hold_the_text_inside_their_boxes():
    pdf = shared("native", "google_documentai", "ocr_invoice_with_pdf", "toolbox_invoice_test.pdf")
    root = document_to_tree(invoice_json())
    table = next(n for n in root.children if n.type == T.TABLE)
    assert [c.content for c in table.children[0].children] == ["Item Description", "Quantity", "Price", "Amount"]
    assert [c.content for c in table.children[-1].children][-2:] == ["BALANCE DUE", "$2140.00"]
    assert len(table.children) == 7 and all(cell.geom for row in table.children for cell in row.children)
    paragraphs = [n for n in root.children if n.type == T.PARAGRAPH]
    assert [p.content for p in paragraphs][:2] == ["Invoice", "DATE: 01/01/1970\nINVOICE: NO. 001"]
    assert not any("Tool A" in p.content for p in paragraphs)  # table text lives in the cells only
    distances = box_text_distances(root, pdf)
    assert len(distances) >= 30
    assert max(d for _, d in distances) < 0.05, max(distances, key=lambda x: x[1])


def test_invoice_end_to_end_through_the_sdk_types():
    pdf = shared("native", "google_documentai", "ocr_invoice_with_pdf", "toolbox_invoice_test.pdf")
    document = documentai.Document.from_json(json.dumps(invoice_json()), ignore_unknown_fields=True)
    client = FakeDocumentAI(lambda request: document)
    out = DocumentAIParser(client=client, layout_parser=False, **IDS).run(pdf)
    assert not client.requests[0].process_options.layout_config.return_bounding_boxes
    root = out.root
    assert root.metadata["parser"] == "documentai"
    assert "| Item Description | Quantity | Price | Amount |" in out.markdown
    lined = [n for n in root.walk() if n.type == T.PARAGRAPH and n.geom]
    assert sum(bool(b.spans) for n in lined for b in n.geom) / len(lined) > 0.9
    chunks = check_chunks(root, pdf, max_tokens=64)
    assert all(c.geom for c in chunks)  # OCR cells come with boxes


# -- credentials, requests, retries ------------------------------------------------------------
def test_missing_project_or_processor_names_the_variable(monkeypatch):
    for var in ("DOCUMENTAI_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "DOCUMENTAI_PROCESSOR_ID"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(MissingCredentialsError, match="DOCUMENTAI_PROJECT_ID or GOOGLE_CLOUD_PROJECT"):
        get_parser("documentai")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    with pytest.raises(MissingCredentialsError, match="DOCUMENTAI_PROCESSOR_ID"):
        get_parser("documentai")


def test_missing_application_credentials_name_the_variable(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("DOCUMENTAI_PROJECT_ID", "p")
    monkeypatch.setenv("DOCUMENTAI_PROCESSOR_ID", "x")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-key.json"))
    with pytest.raises(MissingCredentialsError) as err:
        get_parser("documentai")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(err.value) and "\n" not in str(err.value)


def test_request_asks_the_layout_parser_for_boxes(clinsci_pdf: Path, clinsci_refs):
    client = FakeDocumentAI(lambda request: as_sdk_document(layout_document(clinsci_refs)))
    parser = DocumentAIParser(client=client, timeout=42.0, processor_version="pretrained-layout-parser-v1.0-2024-06-03", **IDS)
    parser.record_native(clinsci_pdf)
    (request,) = client.requests
    assert request.name == "projects/demo-project/locations/eu/processors/layout123/processorVersions/pretrained-layout-parser-v1.0-2024-06-03"
    assert request.process_options.layout_config.return_bounding_boxes is True
    assert request.raw_document.mime_type == "application/pdf" and request.raw_document.content == clinsci_pdf.read_bytes()
    assert client.timeouts == [42.0] and client.retries == [None]  # only grounded's retry policy applies


def test_quota_errors_are_retried_and_persistent_failures_reported(clinsci_pdf: Path, clinsci_refs):
    waits: list[float] = []
    answer = lambda request: as_sdk_document(layout_document(clinsci_refs))  # noqa: E731
    client = FakeDocumentAI(answer, [gexc.ResourceExhausted("Quota exceeded for online_process_requests")])
    DocumentAIParser(client=client, sleep=waits.append, retry=RetryPolicy(initial_delay=0.5, jitter=0.0), **IDS).record_native(clinsci_pdf)
    assert len(client.requests) == 2 and waits == [0.5]
    client = FakeDocumentAI(answer, [gexc.ServiceUnavailable("backend down")] * 3)
    with pytest.raises(RemoteServiceError) as err:
        DocumentAIParser(client=client, retry=NO_WAIT, **IDS).run(clinsci_pdf)
    assert "HTTP 503" in str(err.value) and "after 3 attempts" in str(err.value) and clinsci_pdf.name in str(err.value)
    client = FakeDocumentAI(answer, [gexc.PermissionDenied("Document AI API has not been used in project")])
    with pytest.raises(RemoteServiceError, match="HTTP 403"):
        DocumentAIParser(client=client, retry=NO_WAIT, **IDS).run(clinsci_pdf)
    assert len(client.requests) == 1


# -- re-encoded real parse with boxes ----------------------------------------------------------
def test_reencoded_layout_document_is_valid_and_transforms_back(clinsci_pdf: Path, clinsci_refs):
    client = FakeDocumentAI(lambda request: as_sdk_document(layout_document(clinsci_refs)))
    root = DocumentAIParser(client=client, **IDS, **RAW).run(clinsci_pdf).root
    assert_same_as_reference(root, clinsci_refs, tolerance=1e-6)
    title = next(c for c in root.children if c.type == T.SECTION_HEADER)
    assert title.content.startswith("Fragment-based design") and len(title.children) > 10  # native nesting kept


def test_text_inside_each_box_matches_the_element(clinsci_pdf: Path, clinsci_refs):
    root = document_to_tree(json.loads(documentai.Document.to_json(as_sdk_document(layout_document(clinsci_refs)))))
    distances = box_text_distances(root, clinsci_pdf)
    assert len(distances) >= 20
    assert statistics.mean(d for _, d in distances) < 0.03
    assert sum(d < 0.1 for _, d in distances) / len(distances) >= 0.9


def test_long_pdf_is_sent_in_page_slices_and_reassembled(clinsci_pdf: Path, tmp_path: Path):
    pages_seen: list[int] = []

    def answer(request) -> documentai.Document:
        # the fake service parses the slice it receives: page numbers in its answer are slice-relative
        part = tmp_path / f"slice{len(pages_seen)}.pdf"
        part.write_bytes(request.raw_document.content)
        with pymupdf.open(part) as doc:
            pages_seen.append(doc.page_count)
            refs = reference_elements(part, list(range(1, doc.page_count + 1)), tables=False)
        return as_sdk_document(layout_document(refs))

    progress: list[tuple[int, int]] = []
    parser = DocumentAIParser(client=FakeDocumentAI(answer), pages_per_request=5,
                              progress=lambda d, t: progress.append((d, t)), **IDS, **RAW)
    native = parser.record_native(clinsci_pdf)
    assert pages_seen == [5, 5, 3] and [s["first_page"] for s in native["slices"]] == [1, 6, 11]
    assert progress == [(0, 13), (5, 13), (10, 13), (13, 13)]
    root = parser.parse_native(native, clinsci_pdf).root
    assert_same_as_reference(root, reference_elements(clinsci_pdf, list(range(1, 14)), tables=False), tolerance=1e-6)
    ids = [n.metadata["native_id"] for n in root.walk() if "native_id" in n.metadata]
    assert len(ids) == len(set(ids)) and ids[0].startswith("s0:")


def test_reencoded_layout_document_to_chunks_with_boxes(clinsci_pdf: Path, clinsci_refs):
    data = layout_document(clinsci_refs)
    client = FakeDocumentAI(lambda request: as_sdk_document(copy.deepcopy(data)))
    out = DocumentAIParser(client=client, **IDS).run(clinsci_pdf)
    root = out.root
    texts = [n for n in root.walk() if n.type == T.PARAGRAPH and n.geom]
    assert sum(bool(b.spans) for n in texts for b in n.geom) / len(texts) > 0.9
    assert out.markdown.startswith(norm(clinsci_refs[0].text)[:20])
    chunks = check_chunks(root, clinsci_pdf)
    assert {p for c in chunks for p in c.metadata["pages"]} == {1, 2}
    assert norm(texts[3].content)[:60] in norm(" ".join(c.body for c in chunks))
