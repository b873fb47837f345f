"""LangChain adapter end to end on a real clinical-science PDF: loader (chunks / elements) ->
splitter -> vector stores (LangChain's in-memory store, Chroma with the default flat metadata) ->
retrieval -> boxes checked against PyMuPDF's text; metadata through JSON. (Real LangChain
pipelines - langchain-chroma, ParentDocumentRetriever, GenericLoader - are in
test_langchain_pipeline.py.)"""

from __future__ import annotations

import json
import warnings

import chromadb
import pytest
from langchain_core.documents import Document
from langchain_core.load import dumpd, load
from langchain_core.vectorstores import InMemoryVectorStore

from grounded.chunking import Chunker, document_text
from grounded.errors import ChunkingError, SchemaError
from grounded.grounding.blocks import ELEMENT_KEY, tree_from_payloads
from grounded.io.box_codec import GroundingWarning, boxes_from_metadata
from grounded.io.chunk_codec import flatten_metadata, unflatten_metadata
from grounded.parsers import get_parser
from grounded.parsers.cache import TREE_REF_KEY
from langchain_grounded import GroundedPDFLoader, GroundedTextSplitter, MiniLMEmbeddings
from tests.support.adapter_checks import (
    ANSWER_MARK,
    QUESTION,
    assert_boxes_show_body,
    assert_light_import_and_named_extra,
)
from tests.support.data import shared

SCALARS = (str, int, float, bool)


@pytest.fixture(scope="module")
def pdf():
    return shared("long", "cermine_web_example3_clinsci.pdf")


@pytest.fixture(scope="module", autouse=True)
def parse_cache_dir(tmp_path_factory):
    """Parse trees go to a temp cache, never to ~/.cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("GROUNDED_CACHE_DIR", str(tmp_path_factory.mktemp("parse-cache")))
    yield
    patch.undo()


@pytest.fixture(scope="module")
def chunk_docs(pdf) -> list[Document]:
    return GroundedPDFLoader(pdf, strategy="hierarchical", max_tokens=256).load()


@pytest.fixture(scope="module")
def tree(pdf):
    return get_parser("pymupdf").parse(pdf)


@pytest.fixture(scope="module")
def element_docs(tree) -> list[Document]:
    """Self-contained element Documents (each carries its block's subtree)."""
    return list(GroundedPDFLoader(tree, mode="elements", element_payload=True).lazy_load())


@pytest.fixture(scope="module")
def full_text(element_docs) -> str:
    return document_text(tree_from_payloads([d.metadata[ELEMENT_KEY] for d in element_docs])).text


@pytest.fixture(scope="module")
def embeddings() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


def body_of(doc: Document) -> str:
    return doc.page_content[int(doc.metadata["body_start"]) :]


# -- loader ----------------------------------------------------------------------------------------
def test_chunk_mode_documents_carry_boxes_and_exact_offsets(chunk_docs, full_text, pdf):
    assert len(chunk_docs) > 20
    tokenizer = Chunker("fixed", 256).tokenizer
    for doc in chunk_docs:
        assert all(isinstance(v, SCALARS) for v in doc.metadata.values())  # store-safe by default
        meta = unflatten_metadata(doc.metadata)
        assert doc.id == meta["chunk_id"] and meta["grounded_kind"] == "chunk"
        assert meta["source"] == str(pdf) and meta["file_name"] == pdf.name and meta["total_pages"] == 13
        assert meta["page"] == meta["pages"][0] - 1  # LangChain's 0-based page
        assert full_text[meta["start_char"] : meta["end_char"]] == body_of(doc)
        assert "start_index" not in meta  # LangChain's add_start_index=False
        assert tokenizer.count(doc.page_content) <= 256
        assert meta["pages"] and meta["element_ids"]
        assert_boxes_show_body(pdf, boxes_from_metadata(meta), body_of(doc))
    assert any(len(json.loads(d.metadata["pages"])) > 1 for d in chunk_docs), "chunks across page breaks"
    assert any(d.metadata["body_start"] > 0 for d in chunk_docs), "hierarchical chunks with heading context"


def test_element_mode_documents_rebuild_the_document_text(element_docs, full_text, pdf):
    types = {d.metadata["element_type"] for d in element_docs}
    assert {"PARAGRAPH", "SECTION_HEADER", "TABLE"} <= types
    for doc in element_docs:
        meta = unflatten_metadata(doc.metadata)
        assert meta["grounded_kind"] == "element"
        assert full_text[meta["start_char"] : meta["end_char"]] == doc.page_content
        assert boxes_from_metadata(meta), meta["element_id"]
        json.loads(meta[ELEMENT_KEY])
    tables = [d for d in element_docs if d.metadata["element_type"] == "TABLE"]
    assert all(" | " in t.page_content for t in tables)  # a table is one element, cells joined by " | "
    sections = [d.metadata["section"] for d in element_docs if d.metadata["element_type"] == "PARAGRAPH"]
    assert any(s for s in sections)
    # element boxes cover the element text (they come from the layout model: approximately)
    paragraph = next(d for d in element_docs if d.metadata["element_type"] == "PARAGRAPH" and len(d.page_content) > 300)
    assert_boxes_show_body(pdf, boxes_from_metadata(paragraph.metadata), paragraph.page_content)


def test_loader_refuses_bad_parameters_before_parsing(pdf):
    with pytest.raises(ValueError, match="mode"):
        GroundedPDFLoader(pdf, mode="pages")  # type: ignore[arg-type]  (LangChain's name is "page")
    with pytest.raises(ChunkingError):
        GroundedPDFLoader(pdf, strategy="nonsense")
    with pytest.raises(ChunkingError):
        GroundedPDFLoader(pdf, max_tokens=64, overlap=64)


# -- splitter --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "max_tokens", "overlap"),
    [
        ("hierarchical", 256, 0),
        pytest.param("recursive", 128, 0, marks=pytest.mark.slow),  # slow: the loader parses the PDF again
        pytest.param("fixed", 200, 40, marks=pytest.mark.slow),
    ],
)
def test_splitting_elements_gives_the_loaders_chunks(pdf, element_docs, chunk_docs, strategy, max_tokens, overlap):
    split = GroundedTextSplitter(max_tokens, overlap, strategy=strategy).split_documents(element_docs)
    if strategy == "hierarchical" and max_tokens == 256:
        direct = chunk_docs
    else:
        direct = GroundedPDFLoader(pdf, strategy=strategy, max_tokens=max_tokens, overlap=overlap).load()
    assert [d.id for d in split] == [d.id for d in direct]
    assert [d.page_content for d in split] == [d.page_content for d in direct]
    assert [d.metadata for d in split] == [d.metadata for d in direct]


def test_flat_and_nested_element_documents_split_the_same(element_docs):
    nested = [Document(page_content=d.page_content, metadata=unflatten_metadata(d.metadata), id=d.id) for d in element_docs]
    assert isinstance(nested[0].metadata["boxes"], list)
    assert all(isinstance(v, SCALARS) for d in element_docs for v in d.metadata.values())
    splitter = GroundedTextSplitter(200, strategy="recursive")
    from_flat = splitter.split_documents(element_docs)
    from_nested = splitter.split_documents(nested)
    assert [d.metadata for d in from_flat] == [d.metadata for d in from_nested]
    assert all(isinstance(d.metadata["boxes"], str) for d in from_flat)
    as_nested = GroundedTextSplitter(200, strategy="recursive", flat_metadata=False).split_documents(element_docs)
    assert [flatten_metadata(d.metadata) for d in as_nested] == [d.metadata for d in from_flat]


def test_splitting_a_slice_of_elements_keeps_offsets_into_the_whole_document(element_docs, full_text, pdf):
    middle = element_docs[len(element_docs) // 3 : len(element_docs) // 2]
    split = GroundedTextSplitter(128).split_documents(middle)
    assert split
    first, last = middle[0].metadata["start_char"], middle[-1].metadata["end_char"]
    for doc in split:
        meta = unflatten_metadata(doc.metadata)
        assert first <= meta["start_char"] < meta["end_char"] <= last
        assert full_text[meta["start_char"] : meta["end_char"]] == body_of(doc)
        assert_boxes_show_body(pdf, boxes_from_metadata(meta), body_of(doc))


def test_plain_documents_are_split_by_tokens_with_start_index():
    text = ("Monitor renal function before and during treatment. " * 30 + "\n\n") * 4
    docs = [Document(page_content=text, metadata={"origin": "notes"}), Document(page_content="Short note.", metadata={})]
    splitter = GroundedTextSplitter(64, 8, strategy="fixed", add_start_index=True)
    parts = splitter.split_documents(docs)
    assert len(parts) > 10
    tokenizer = splitter.chunker.tokenizer
    for part in parts:
        source = text if part.metadata.get("origin") == "notes" else "Short note."
        start = part.metadata["start_index"]
        assert source[start : start + len(part.page_content)] == part.page_content
        assert tokenizer.count(part.page_content) <= 64
        assert "boxes" not in part.metadata
    assert parts[-1].page_content == "Short note." and parts[-1].metadata == {"start_index": 0}
    assert splitter.split_text(text) == [p.page_content for p in parts[:-1]]
    # same results through LangChain's transformer interface
    assert [d.page_content for d in splitter.transform_documents(docs)] == [p.page_content for p in parts]


def test_chunk_documents_pass_through_or_split_into_parts_with_their_own_boxes(chunk_docs, full_text, pdf):
    same = GroundedTextSplitter(256).split_documents(chunk_docs[:5])
    assert [d.metadata for d in same] == [d.metadata for d in chunk_docs[:5]]
    big = max(chunk_docs, key=lambda d: d.metadata["token_count"])
    assert big.metadata[TREE_REF_KEY]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the parse tree is found through the reference
        parts = GroundedTextSplitter(64).split_documents([big])
    assert len(parts) > 1
    tokenizer = Chunker("fixed", 64).tokenizer
    for part in parts:
        assert part.metadata["boxes"] != big.metadata["boxes"]
        assert part.metadata["token_count"] == tokenizer.count(part.page_content) <= 64
        body = body_of(part)
        assert full_text[part.metadata["start_char"] : part.metadata["end_char"]] == body
        if body:
            assert_boxes_show_body(pdf, boxes_from_metadata(part.metadata, text=part.page_content), body)
    # a part never gets the boxes of a text it is not: the old parent boxes read back as stale
    stale = {**parts[1].metadata, "boxes": big.metadata["boxes"], "text_hash": big.metadata["text_hash"]}
    with pytest.warns(GroundingWarning):
        assert boxes_from_metadata(stale, text=parts[1].page_content) == []


def test_element_payload_errors_are_typed(element_docs):
    broken = Document(page_content="x", metadata={**element_docs[0].metadata, ELEMENT_KEY: "{not json"})
    with pytest.raises(SchemaError):
        GroundedTextSplitter(128).split_documents([broken])
    with pytest.raises(SchemaError, match="twice"):
        GroundedTextSplitter(128).split_documents([element_docs[0], element_docs[0]])
    # element Documents without a payload and without a findable tree: text parts, no boxes, one warning
    lost = [Document(page_content=d.page_content, metadata={k: v for k, v in d.metadata.items() if k not in (ELEMENT_KEY, TREE_REF_KEY)})
            for d in element_docs[:6]]
    with pytest.warns(GroundingWarning) as caught:
        parts = GroundedTextSplitter(128).split_documents(lost)
    assert len(caught) == 1 and parts and all("boxes" not in p.metadata for p in parts)


# -- metadata through serialization and stores -----------------------------------------------------
@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_documents_survive_langchain_serialization(chunk_docs, element_docs):
    for doc in chunk_docs[:20] + element_docs[:20]:
        back = load(json.loads(json.dumps(dumpd(doc))), allowed_objects=[Document])
        assert back.metadata == doc.metadata and back.page_content == doc.page_content
        assert boxes_from_metadata(back.metadata) == boxes_from_metadata(doc.metadata)
        again = Document.model_validate_json(doc.model_dump_json())
        assert again.metadata == doc.metadata


@pytest.mark.slow
def test_in_memory_store_retrieval_highlights_the_chunk(element_docs, embeddings, full_text, pdf):
    chunks = GroundedTextSplitter(256, strategy="hierarchical").split_documents(element_docs)
    store = InMemoryVectorStore(embeddings)
    store.add_documents(chunks)
    hits = store.similarity_search(QUESTION, k=5)
    assert len(hits) == 5
    assert any(ANSWER_MARK in hit.page_content for hit in hits)
    for hit in hits:
        assert full_text[hit.metadata["start_char"] : hit.metadata["end_char"]] == body_of(hit)
        assert_boxes_show_body(pdf, boxes_from_metadata(hit.metadata), body_of(hit))


@pytest.mark.slow
def test_default_metadata_round_trips_through_chroma(tree, embeddings, chunk_docs, pdf):
    flat = chunk_docs
    nested = GroundedPDFLoader(tree, strategy="hierarchical", max_tokens=256, flat_metadata=False).load()
    assert all(isinstance(v, SCALARS) for d in flat for v in d.metadata.values())
    assert [unflatten_metadata(d.metadata) for d in flat] == [d.metadata for d in nested]
    collection = chromadb.EphemeralClient().create_collection("grounded-langchain", embedding_function=None)
    vectors = embeddings.embed_documents([d.page_content for d in flat])
    with pytest.raises(ValueError):  # nested box lists are what flat-metadata stores reject
        collection.add(ids=[nested[0].id], embeddings=[vectors[0]], metadatas=[nested[0].metadata])
    collection.add(ids=[d.id for d in flat], embeddings=vectors, documents=[d.page_content for d in flat],
                   metadatas=[d.metadata for d in flat])
    result = collection.query(query_embeddings=[embeddings.embed_query(QUESTION)], n_results=5)
    nested = {d.id: d for d in nested}
    assert any(ANSWER_MARK in text for text in result["documents"][0])
    for doc_id, text, meta in zip(result["ids"][0], result["documents"][0], result["metadatas"][0], strict=True):
        assert boxes_from_metadata(meta) == boxes_from_metadata(nested[doc_id].metadata)
        assert unflatten_metadata(meta) == nested[doc_id].metadata
        assert_boxes_show_body(pdf, boxes_from_metadata(meta), text[int(meta["body_start"]) :])


def test_importing_grounded_stays_light_and_a_missing_framework_names_the_extra():
    assert_light_import_and_named_extra("langchain_grounded", "langchain_core", "langchain")


def test_parser_settings_are_fixed_per_loader_and_blob_parser():
    """The LangChain loader and blob parser take their parser settings at construction (read-only
    afterwards), so a parser built for other settings is never reused."""
    from langchain_grounded import GroundedPDFParser

    never = GroundedPDFLoader([], ocr="never")
    auto = GroundedPDFParser(ocr="auto", parser_options={"line_spans": False})
    assert (never.parser.ocr, auto.parser.ocr, auto.parser.line_spans) == ("never", "auto", False)
    assert never.parser is never.parser and never.parser is not auto.parser
    for target in (never, auto):
        for setting in ("parser_options", "parser", "mode", "chunker"):
            with pytest.raises(AttributeError):
                setattr(target, setting, None)
    assert never.parser_options == {"ocr": "never"}
