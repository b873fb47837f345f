"""LlamaIndex adapter end to end on a real clinical-science PDF: reader -> node parser ->
IngestionPipeline (cache, workers) / VectorStoreIndex / Settings -> retrieval -> boxes checked
against PyMuPDF's text; metadata through JSON, docstore and a flat-metadata store (Chroma)."""

from __future__ import annotations

import json
import subprocess
import sys

import chromadb
import pytest
from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.ingestion import IngestionCache, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document, MetadataMode, NodeRelationship, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

from grounded.chunking import Chunker, document_text
from grounded.errors import ChunkingError, GroundedError, NotAPDFError, SchemaError
from grounded.metadata import PAYLOAD_KEYS, TREE_KEY, boxes_from_metadata, decode_tree
from llama_index_grounded import GroundedNodeParser, GroundedPDFReader, MiniLMEmbedding
from llama_index_grounded.reader import document_from_tree

from ._adapter_checks import ANSWER_MARK, QUESTION, assert_boxes_show_body, body_coverage, norm
from .conftest import shared


@pytest.fixture(scope="module")
def pdf():
    return shared("long", "cermine_web_example3_clinsci.pdf")


@pytest.fixture(scope="module")
def documents(pdf) -> list[Document]:
    return GroundedPDFReader().load_data(pdf)


@pytest.fixture(scope="module")
def root(documents):
    return decode_tree(documents[0].metadata[TREE_KEY])


@pytest.fixture(scope="module")
def embed_model() -> MiniLMEmbedding:
    return MiniLMEmbedding()


def assert_grounded_nodes(nodes, doc: Document, max_tokens: int, tokenizer=None) -> None:
    chunker_tokens = Chunker("fixed", max_tokens, tokenizer=tokenizer).tokenizer
    for i, node in enumerate(nodes):
        body = node.text[node.metadata["body_start"] :]
        assert doc.text[node.start_char_idx : node.end_char_idx] == body
        assert chunker_tokens.count(node.text) <= max_tokens
        assert node.relationships[NodeRelationship.SOURCE].node_id == doc.doc_id
        if i:
            assert node.relationships[NodeRelationship.PREVIOUS].node_id == nodes[i - 1].node_id
        if i + 1 < len(nodes):
            assert node.relationships[NodeRelationship.NEXT].node_id == nodes[i + 1].node_id
        assert TREE_KEY not in node.metadata
        assert node.metadata["file_name"] == "cermine_web_example3_clinsci.pdf"
        assert node.metadata["pages"] and node.metadata["element_ids"]
        assert boxes_from_metadata(node.metadata), node.node_id


# -- reader ----------------------------------------------------------------------------------------
def test_reader_gives_one_document_with_its_tree(documents, root, pdf):
    assert len(documents) == 1
    doc = documents[0]
    assert doc.text == document_text(root).text
    assert len(doc.text) > 20_000
    assert doc.metadata["page_count"] == 13 and doc.metadata["parser"] == "pymupdf"
    assert doc.doc_id.startswith(doc.metadata["source_sha256"][:20])
    # the tree is machine payload: never embedded, never shown to an LLM
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
        content = doc.get_content(mode)
        assert TREE_KEY not in content and "source_sha256" not in content
    assert "file_name: cermine_web_example3_clinsci.pdf" in doc.get_content(MetadataMode.LLM)
    # plain strings: survives JSON (docstore, cache) and pickling (worker processes)
    assert Document.from_json(doc.to_json()).metadata == doc.metadata


@pytest.mark.slow
def test_reader_works_as_simple_directory_reader_extractor(pdf, documents, root):
    docs = SimpleDirectoryReader(input_files=[pdf], file_extractor={".pdf": GroundedPDFReader()}).load_data()
    assert len(docs) == 1
    assert docs[0].text == documents[0].text
    assert docs[0].metadata["file_type"] == "application/pdf"  # SimpleDirectoryReader's own metadata is kept
    again = decode_tree(docs[0].metadata[TREE_KEY])  # same tree (timings in the root metadata aside)
    assert [n.to_dict() for n in again.children] == [n.to_dict() for n in root.children]


def test_reader_refuses_bad_input_with_typed_errors(tmp_path):
    fake = tmp_path / "notes.pdf"
    fake.write_text("not a pdf at all")
    with pytest.raises(NotAPDFError) as err:
        GroundedPDFReader().load_data(fake)
    assert "notes.pdf" in str(err.value)
    with pytest.raises(GroundedError):
        GroundedPDFReader().load_data(tmp_path / "missing.pdf")


# -- node parser -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "box_mode", "options"),
    [
        ("fixed", "auto", {"overlap": 0.2}),
        ("recursive", "auto", {}),
        ("recursive", "line", {}),
        ("recursive", "element", {}),
        ("hierarchical", "exact", {}),
        pytest.param("semantic", "auto", {"strategy_options": {"percentile": 0.9}}, marks=pytest.mark.slow),
    ],
)
def test_node_parser_strategies_and_box_modes(documents, root, pdf, strategy, box_mode, options):
    parser = GroundedNodeParser(strategy=strategy, max_tokens=256, box_mode=box_mode, **options)
    nodes = parser.get_nodes_from_documents(documents)
    doc = documents[0]
    assert len(nodes) > 20
    assert_grounded_nodes(nodes, doc, 256)
    # deterministic ids = the chunker's chunk ids (semantic: its MiniLM pass is too slow to run twice)
    if strategy == "semantic":
        assert [n.node_id for n in nodes] == [f"{root.metadata['source']['sha256'][:12]}-semantic-{i:05d}" for i in range(len(nodes))]
    else:
        expected = Chunker(strategy, 256, options.get("overlap", 0), box_mode=box_mode).chunk(root)
        assert [n.node_id for n in nodes] == [c.id for c in expected.chunks]
    modes = {b.mode for n in nodes for b in boxes_from_metadata(n.metadata)}
    if box_mode == "auto":
        assert "exact" in modes
    elif box_mode == "element":
        assert modes == {"element"}
    else:
        assert box_mode in modes and modes <= {box_mode, "line", "element"}
    # exact boxes show every node's body and little else; approximate boxes show most of most bodies
    bodies = [(boxes_from_metadata(n.metadata), n.text[n.metadata["body_start"] :]) for n in nodes]
    if box_mode in ("auto", "exact"):
        for boxes, body in bodies:
            assert_boxes_show_body(pdf, boxes, body)
    else:
        coverage = [body_coverage(pdf, boxes, body) for boxes, body in bodies]
        assert sum(c >= 90 for c in coverage) >= 0.9 * len(coverage), sorted(coverage)[:10]
    if strategy == "hierarchical":
        prefixed = [n for n in nodes if n.metadata["body_start"] > 0]
        assert prefixed and all(any(b.is_heading for b in boxes_from_metadata(n.metadata)) for n in prefixed)


def test_heading_context_modes(documents):
    by_mode = {
        mode: GroundedNodeParser(strategy="hierarchical", max_tokens=200, heading_context=mode).get_nodes_from_documents(documents)
        for mode in ("text", "metadata", "none")
    }
    text_nodes, meta_nodes, none_nodes = by_mode["text"], by_mode["metadata"], by_mode["none"]
    assert [n.node_id for n in text_nodes] == [n.node_id for n in meta_nodes] == [n.node_id for n in none_nodes]
    withheads = [i for i, n in enumerate(text_nodes) if n.metadata["body_start"] > 0]
    assert withheads
    i = withheads[0]
    section = text_nodes[i].metadata["section"]
    assert section and text_nodes[i].text.startswith(section.split(" > ")[0][:20])
    assert meta_nodes[i].text == none_nodes[i].text == text_nodes[i].text[text_nodes[i].metadata["body_start"] :]
    assert meta_nodes[i].metadata["body_start"] == 0
    assert f"section: {section}" in meta_nodes[i].get_content(MetadataMode.EMBED)
    assert "section:" not in none_nodes[i].get_content(MetadataMode.EMBED)
    assert "section:" not in none_nodes[i].get_content(MetadataMode.LLM)
    assert "section:" not in text_nodes[i].get_content(MetadataMode.EMBED)


def test_embed_and_llm_text_carry_no_box_payload(documents):
    nodes = GroundedNodeParser(max_tokens=256).get_nodes_from_documents(documents)
    for node in nodes:
        embed = node.get_content(MetadataMode.EMBED)
        llm = node.get_content(MetadataMode.LLM)
        for content in (embed, llm):
            assert node.text in content
            assert "boxes" not in content and '"p":' not in content and "'p':" not in content
            assert TREE_KEY not in content and "element_ids" not in content and "chunk_id" not in content
            assert not any(f"{key}:" in content for key in PAYLOAD_KEYS)
        assert embed == node.text  # the embedder sees the chunk text only
        assert f"pages: {node.metadata['pages']}" in llm  # the LLM can cite pages
        assert set(PAYLOAD_KEYS) - {TREE_KEY} <= set(node.excluded_embed_metadata_keys)
        assert set(PAYLOAD_KEYS) - {TREE_KEY} <= set(node.excluded_llm_metadata_keys)


def test_metadata_aware_splitting_does_not_complain(documents, capsys):
    nodes = GroundedNodeParser(max_tokens=512).get_nodes_from_documents(documents)
    splitter = SentenceSplitter(chunk_size=128, chunk_overlap=0)
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
        longest = max(len(splitter._tokenizer(n.get_metadata_str(mode))) for n in nodes)
        # SentenceSplitter prints a complaint when less than 50 tokens are left for text
        assert longest <= 128 - 50, f"{mode}: {longest} metadata tokens"
    again = splitter.get_nodes_from_documents(nodes)
    assert len(again) >= len(nodes)
    assert "Metadata length" not in capsys.readouterr().out


def test_nodes_survive_json_and_a_persisted_docstore(documents, tmp_path):
    nodes = GroundedNodeParser(strategy="hierarchical", max_tokens=256).get_nodes_from_documents(documents)
    for node in nodes:
        back = TextNode.from_json(node.to_json())
        assert back.metadata == node.metadata
        assert boxes_from_metadata(back.metadata) == boxes_from_metadata(node.metadata)
        assert (back.start_char_idx, back.end_char_idx) == (node.start_char_idx, node.end_char_idx)
        assert back.get_content(MetadataMode.EMBED) == node.get_content(MetadataMode.EMBED)
    store = SimpleDocumentStore()
    store.add_documents(nodes)
    store.persist(str(tmp_path / "docstore.json"))
    loaded = SimpleDocumentStore.from_persist_path(str(tmp_path / "docstore.json"))
    for node in nodes[:10]:
        assert loaded.get_node(node.node_id).metadata == node.metadata


def test_plain_documents_are_token_split_with_offsets():
    text = "Dose adjustments in renal impairment are described below.\n\n" + "Monitor creatinine weekly. " * 120
    doc = Document(text=text, metadata={"origin": "manual"})
    nodes = GroundedNodeParser(max_tokens=64).get_nodes_from_documents([doc])
    assert len(nodes) > 5
    for node in nodes:
        assert text[node.start_char_idx : node.end_char_idx] == node.text
        assert node.metadata["origin"] == "manual" and node.metadata["boxes"] == []
        assert Chunker("fixed", 64).tokenizer.count(node.text) <= 64


def test_documents_without_a_tree_are_chunked_as_plain_text(documents, root):
    slim = document_from_tree(root, keep_tree=False)
    assert TREE_KEY not in slim.metadata and slim.text == documents[0].text
    nodes = GroundedNodeParser(max_tokens=256).get_nodes_from_documents([slim])
    assert nodes and all(n.metadata["boxes"] == [] for n in nodes)
    assert all(slim.text[n.start_char_idx : n.end_char_idx] == n.text for n in nodes)


def test_edited_text_is_refused_and_bad_parameters_fail_early(documents):
    edited = documents[0].model_copy()
    edited.set_content(documents[0].text.upper())
    with pytest.raises(SchemaError, match="differs from its stored parse tree"):
        GroundedNodeParser().get_nodes_from_documents([edited])
    with pytest.raises(ChunkingError):
        GroundedNodeParser(strategy="nonsense")
    with pytest.raises(ChunkingError):
        GroundedNodeParser(box_mode="pixels")
    with pytest.raises(ChunkingError):
        GroundedNodeParser(max_tokens=100, overlap=100)


# -- pipelines, indexes, stores --------------------------------------------------------------------
class CountingNodeParser(GroundedNodeParser):
    """The real node parser, counting how often it actually chunks (to observe cache hits)."""

    calls: int = 0

    def _parse_nodes(self, nodes, show_progress=False, **kwargs):
        type(self).calls += 1
        return super()._parse_nodes(nodes, show_progress=show_progress, **kwargs)


def test_ingestion_pipeline_uses_its_cache(documents, tmp_path):
    CountingNodeParser.calls = 0
    pipeline = IngestionPipeline(transformations=[CountingNodeParser(strategy="hierarchical", max_tokens=256)])
    first = pipeline.run(documents=documents)
    second = pipeline.run(documents=documents)
    assert CountingNodeParser.calls == 1
    assert [n.node_id for n in second] == [n.node_id for n in first]
    assert [n.metadata for n in second] == [n.metadata for n in first]
    pipeline.persist(str(tmp_path / "pipeline"))
    fresh = IngestionPipeline(transformations=[CountingNodeParser(strategy="hierarchical", max_tokens=256)])
    fresh.load(str(tmp_path / "pipeline"))
    third = fresh.run(documents=documents)
    assert CountingNodeParser.calls == 1
    assert [boxes_from_metadata(n.metadata) for n in third] == [boxes_from_metadata(n.metadata) for n in first]
    assert isinstance(fresh.cache, IngestionCache)


@pytest.mark.slow
def test_ingestion_pipeline_with_worker_processes(documents):
    parser = GroundedNodeParser(strategy="recursive", max_tokens=256)
    sequential = IngestionPipeline(transformations=[parser], disable_cache=True).run(documents=documents)
    two_docs = [documents[0], Document(text="Plain note on ACE inhibitor dosing. " * 50, metadata={"file_name": "note.txt"})]
    parallel = IngestionPipeline(transformations=[parser], disable_cache=True).run(documents=two_docs, num_workers=2)
    grounded = [n for n in parallel if n.metadata.get("file_name") == "cermine_web_example3_clinsci.pdf"]
    assert [n.node_id for n in grounded] == [n.node_id for n in sequential]
    assert [n.metadata for n in grounded] == [n.metadata for n in sequential]
    assert any(n.metadata.get("file_name") == "note.txt" for n in parallel)


@pytest.mark.slow
def test_vector_store_index_retrieval_highlights_the_chunk(documents, embed_model, pdf):
    index = VectorStoreIndex.from_documents(
        documents, transformations=[GroundedNodeParser(strategy="hierarchical", max_tokens=256)], embed_model=embed_model
    )
    hits = index.as_retriever(similarity_top_k=5).retrieve(QUESTION)
    assert len(hits) == 5
    assert any(ANSWER_MARK in hit.node.text for hit in hits)
    doc = documents[0]
    for hit in hits:
        node = hit.node
        body = node.text[node.metadata["body_start"] :]
        assert doc.text[node.start_char_idx : node.end_char_idx] == body
        assert_boxes_show_body(pdf, boxes_from_metadata(node.metadata), body)


@pytest.mark.slow
def test_settings_transformations_are_used_by_the_index(documents, embed_model, pdf):
    saved = (Settings._transformations, Settings._embed_model)
    try:
        Settings.transformations = [GroundedNodeParser(strategy="recursive", max_tokens=200)]
        Settings.embed_model = embed_model
        index = VectorStoreIndex.from_documents(documents)
    finally:
        Settings._transformations, Settings._embed_model = saved
    stored = list(index.docstore.docs.values())
    assert stored and all(n.metadata.get("strategy") == "recursive" for n in stored)
    hit = index.as_retriever(similarity_top_k=1, embed_model=embed_model).retrieve(QUESTION)[0].node
    assert_boxes_show_body(pdf, boxes_from_metadata(hit.metadata), hit.text[hit.metadata["body_start"] :])


@pytest.mark.slow
def test_flat_metadata_round_trips_through_chroma(documents, embed_model, pdf):
    nested = GroundedNodeParser(max_tokens=256).get_nodes_from_documents(documents)
    flat = GroundedNodeParser(max_tokens=256, flat_metadata=True).get_nodes_from_documents(documents)
    client = chromadb.EphemeralClient()
    collection = client.create_collection("grounded-llama-index", embedding_function=None)
    vectors = embed_model.get_text_embedding_batch([n.get_content(MetadataMode.EMBED) for n in flat])
    # nested box lists are what flat-metadata stores reject
    with pytest.raises(ValueError):
        collection.add(ids=[nested[0].node_id], embeddings=[vectors[0]], metadatas=[nested[0].metadata])
    collection.add(
        ids=[n.node_id for n in flat], embeddings=vectors, documents=[n.text for n in flat], metadatas=[n.metadata for n in flat]
    )
    result = collection.query(query_embeddings=[embed_model.get_query_embedding(QUESTION)], n_results=5)
    by_id = {n.node_id: n for n in nested}
    assert any(ANSWER_MARK in text for text in result["documents"][0])
    for node_id, text, meta in zip(result["ids"][0], result["documents"][0], result["metadatas"][0], strict=True):
        boxes = boxes_from_metadata(meta)
        assert boxes == boxes_from_metadata(by_id[node_id].metadata)
        assert json.loads(meta["pages"]) == by_id[node_id].metadata["pages"]
        assert_boxes_show_body(pdf, boxes, text[int(meta["body_start"]) :])
    assert norm(result["documents"][0][0])


def test_importing_grounded_stays_light_and_a_missing_framework_names_the_extra():
    code = (
        "import sys, grounded, grounded.metadata\n"
        "heavy = [m for m in ('torch', 'llama_index', 'langchain_core', 'sentence_transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "sys.modules['llama_index'] = None\n"
        "try:\n"
        "    import llama_index_grounded\n"
        "except ImportError as exc:\n"
        "    from grounded.errors import BackendUnavailableError\n"
        "    assert isinstance(exc, BackendUnavailableError), type(exc)\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'grounded[llama-index]'" in out.stdout
