"""Every node has ``page`` (issue 42 item 2): a node without boxes (its text found only in a running
footer: grounding status ``furniture``) gets the page its text comes from, as ``page_label`` says,
so the README's ``hit.node.metadata["page"]`` never raises ``KeyError``."""

from __future__ import annotations

import warnings
from pathlib import Path

import pymupdf
import pytest

from grounded.integrations.profiles import page_without_boxes
from grounded.model import Chunk


@pytest.fixture(scope="module")
def page_nodes(clinsci_pdf: Path) -> list:
    from llama_index.core import Document

    from llama_index_grounded import GroundedNodeParser

    # what llama-index-readers-file's PDFReader gives: one Document per page, page_label "1", "2", ...
    with pymupdf.open(clinsci_pdf) as pdf:
        docs = [Document(text=page.get_text(), metadata={"file_path": str(clinsci_pdf), "file_name": clinsci_pdf.name,
                                                           "page_label": str(i + 1)}) for i, page in enumerate(pdf)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GroundedNodeParser(chunk_size=256).get_nodes_from_documents(docs)


def test_every_node_has_a_page_furniture_ones_that_of_their_text(page_nodes: list) -> None:
    furniture = [n for n in page_nodes if n.metadata.get("grounding_status") == "furniture"]
    assert furniture, "the Clinical Science PDF's licence footer gives furniture-only nodes"
    for node in page_nodes:
        page = node.metadata["page"]  # the README's loop
        assert isinstance(page, int) and page >= 1, node.metadata
    for node in furniture:
        assert not node.metadata.get("pages") or node.metadata["pages"] in ("[]", [])
        assert node.metadata["page"] == int(node.metadata["page_label"]), node.metadata


def test_page_without_boxes_constructed_cases() -> None:
    chunk = Chunk(id="c", content="© 2014 The Author(s)")
    assert page_without_boxes(chunk, {"page_label": "7"}) == 7
    assert page_without_boxes(chunk, {"page": 3, "page_label": "7"}) == 3
    assert page_without_boxes(chunk, {"page_label": "iii"}) is None and page_without_boxes(chunk, {}) is None
    chunk.grounding_furniture_boxes = [[5, 0.1, 0.9, 0.8, 0.95]]
    assert page_without_boxes(chunk, {"page_label": "iii"}) == 5 and page_without_boxes(chunk, {"page": 0}) == 5
