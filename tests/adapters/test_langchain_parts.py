"""LangChain: a ``RecursiveCharacterTextSplitter`` over the loader's element (and chunk) Documents,
then :class:`GroundedParts`: every part carries its own boxes, offsets, pages and token count
(issue 22, 3); ``GroundedTextSplitter`` over element Documents re-chunks them with boxes instead of
warning that the tree is missing."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from grounded.metadata import GroundingWarning, boxes_from_metadata, chunk_of, text_hash
from grounded.model.boxes import body_pages
from grounded.text.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def element_docs(clinsci_pdf: Path) -> list:
    from langchain_grounded import GroundedPDFLoader

    return GroundedPDFLoader(clinsci_pdf, mode="elements").load()


def test_recursive_splitter_parts_of_elements_get_their_own_numbers(element_docs: list, clinsci_pdf: Path) -> None:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from grounded.parsers.cache import resolve_tree
    from grounded.text.stream import document_text
    from langchain_grounded import GroundedParts

    parts = RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0).split_documents(element_docs)
    stale = [p for p in parts if p.metadata["text_hash"] != text_hash(p.page_content)]
    assert stale
    doc_text = document_text(resolve_tree(element_docs[0].metadata)).text
    tok = load_tokenizer(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        fixed = GroundedParts().transform_documents(parts)
    was_stale = {id(p) for p in stale}
    for before, part in zip(parts, fixed, strict=True):
        record = chunk_of(part)
        assert record.text_hash == text_hash(part.page_content)
        assert record.boxes and record.boxes == boxes_from_metadata(part.metadata, text=part.page_content)
        assert doc_text[record.start_char : record.end_char] == part.page_content.strip()
        if id(before) in was_stale:
            assert record.token_count == tok.count(part.page_content)
        assert record.pages == body_pages(record.boxes)
        assert part.metadata["page"] == record.page_start - 1 and isinstance(part.metadata["page_start"], int)
    assert len({chunk_of(p).start_char for p in fixed}) > len({d.metadata["start_char"] for d in element_docs}) // 2


def test_grounded_splitter_over_element_documents_gives_boxes_without_a_tree_warning(element_docs: list) -> None:
    from langchain_grounded import GroundedTextSplitter

    big = [d for d in element_docs if len(d.page_content) > 400][:5]
    assert big
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        parts = GroundedTextSplitter(chunk_size=32).split_documents(big)
    assert len(parts) > len(big)
    assert all(boxes_from_metadata(p.metadata, text=p.page_content) for p in parts)
