"""Parts of a re-split chunk carry their own boxes, offsets and token count in metadata
(issue 22, 3): LlamaIndex ``SentenceSplitter`` after ``GroundedNodeParser`` and
``CitationQueryEngine``'s citation chunks, through :class:`GroundedParts`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grounded.metadata import (
    GroundingWarning,
    boxes_from_metadata,
    chunk_of,
    part_metadata,
    text_hash,
)
from grounded.model.boxes import body_pages
from grounded.text.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def chunk_nodes(clinsci_pdf: Path) -> list:
    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader

    docs = GroundedPDFReader().load_data(clinsci_pdf)
    return GroundedNodeParser(max_tokens=512).get_nodes_from_documents(docs)


def _check_own_numbers(parts: list, parents: dict[str, object], clinsci_pdf: Path) -> None:
    from llama_index_grounded import node_boxes
    from llama_index_grounded.grounding import document_text_of, tree_for

    tok = load_tokenizer(None)
    doc_text = document_text_of(tree_for(parts[0].metadata))
    changed = 0
    for part in parts:
        text = part.get_content(metadata_mode="none")
        record = chunk_of(part)
        assert record.text_hash == text_hash(text)
        assert record.boxes == node_boxes(part) and record.boxes, part.node_id
        assert record.token_count == tok.count(text)
        own = re.sub(r"^Source \d+:\n", "", text)  # CitationQueryEngine's label is not document text
        assert " ".join(doc_text[record.start_char : record.end_char].split()) == " ".join(own.split())
        assert record.pages == body_pages(record.boxes)
        assert (record.page_start, record.page_end) == (record.pages[0], record.pages[-1])
        parent = chunk_of(parents[part.ref_doc_id or ""]) if part.ref_doc_id in parents else None
        if parent is not None and len(text) < len(parent.content):
            changed += 1
            assert record.heading_path == parent.heading_path  # inherited
            assert record.start_char != parent.start_char or record.end_char != parent.end_char
    assert changed or not parents


def test_sentence_splitter_parts_get_their_own_numbers(chunk_nodes: list, clinsci_pdf: Path) -> None:
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_grounded import GroundedParts

    parts = SentenceSplitter(chunk_size=128, chunk_overlap=0).get_nodes_from_documents(chunk_nodes)
    assert len(parts) > len(chunk_nodes)
    stale = [p for p in parts if p.metadata["text_hash"] != text_hash(p.get_content(metadata_mode="none"))]
    assert stale  # the splitter copied the parents' numbers
    fixed = GroundedParts()(parts)
    _check_own_numbers(fixed, {}, clinsci_pdf)
    by_hash = {n.metadata["text_hash"]: n for n in chunk_nodes}
    for part in stale:  # parents' values gone: a part's token count is its own
        assert part.metadata["token_count"] <= 128 + 8
        assert part.metadata["start_char"] >= 0 and part.metadata["text_hash"] not in by_hash
    assert all("boxes" in p.excluded_embed_metadata_keys for p in fixed)


def test_citation_chunks_get_their_own_numbers(chunk_nodes: list, clinsci_pdf: Path) -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import CitationQueryEngine

    from llama_index_grounded import GroundedParts

    index = VectorStoreIndex(chunk_nodes[:6], embed_model=MockEmbedding(embed_dim=8))
    engine = CitationQueryEngine.from_args(index, llm=MockLLM(), citation_chunk_size=128, similarity_top_k=6)
    citations = engine._create_citation_nodes(index.as_retriever(similarity_top_k=6).retrieve("dose"))
    assert len(citations) > 6
    nodes = [c.node for c in citations]
    _check_own_numbers(GroundedParts()(nodes), {}, clinsci_pdf)


def test_a_part_without_a_tree_withholds_what_it_cannot_recompute() -> None:
    parent = {"chunk_id": "x", "token_count": 500, "start_char": 10, "end_char": 900, "pages": "[1,2]", "page_start": 1,
              "page_end": 2, "boxes": '[{"p":1,"b":[0,0,1,1]}]', "heading_path": '["A"]', "section": "A", "index": 3,
              "text_hash": "0" * 16, "file_name": "a.pdf"}
    with pytest.warns(GroundingWarning, match="file_name='a.pdf' is not a file here"):
        from llama_index.core.schema import TextNode

        from llama_index_grounded import part_node_metadata

        meta = part_node_metadata(TextNode(text="a part", metadata=parent))
    assert meta == part_metadata(parent, "a part", token_count=load_tokenizer(None).count("a part"))
    assert {"boxes", "start_char", "end_char", "pages", "page_start", "index", "chunk_id"}.isdisjoint(meta)
    assert meta["heading_path"] == '["A"]' and meta["file_name"] == "a.pdf" and meta["text_hash"] == text_hash("a part")
    assert boxes_from_metadata(meta, text="a part") == []
