"""LlamaIndex adapter end to end on a real clinical-science PDF: reader -> node parser ->
IngestionPipeline (cache, workers) / VectorStoreIndex / Settings -> retrieval -> boxes checked
against PyMuPDF's text; metadata through JSON, docstore and a flat-metadata store (Chroma)."""

from __future__ import annotations

import json
import pickle
import warnings

import chromadb
import pytest
from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.ingestion import IngestionCache, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import PrevNextNodePostprocessor
from llama_index.core.schema import Document, MetadataMode, NodeRelationship, NodeWithScore, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters, VectorStoreQuery
from llama_index.vector_stores.chroma import ChromaVectorStore

from grounded.chunking import Chunker, document_text
from grounded.errors import ChunkingError, EncryptedPDFError, GroundedError, NotAPDFError
from grounded.io.box_codec import GroundingWarning, boxes_from_metadata, text_hash
from grounded.io.chunk_codec import PAYLOAD_KEYS, unflatten_metadata
from grounded.io.tree_payload import TREE_KEY
from grounded.parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY, ParseCache, clear_memory
from llama_index_grounded import GroundedNodeParser, GroundedPDFReader, MiniLMEmbedding, node_boxes
from llama_index_grounded.grounding import tree_for
from llama_index_grounded.reader import document_from_tree
from tests.support.adapter_checks import (
    ANSWER_MARK,
    QUESTION,
    CountingParser,
    assert_boxes_show_body,
    assert_light_import_and_named_extra,
    body_coverage,
    norm,
)
from tests.support.data import shared
from tests.support.pdf_builders import make_pdf


@pytest.fixture(scope="module")
def pdf():
    return shared("long", "cermine_web_example3_clinsci.pdf")


@pytest.fixture(scope="module")
def documents(pdf) -> list[Document]:
    return GroundedPDFReader().load_data(pdf)


@pytest.fixture(scope="module")
def root(documents):
    return tree_for(documents[0].metadata)


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
        assert node.metadata["index"] == i
        prev, nxt = node.relationships.get(NodeRelationship.PREVIOUS), node.relationships.get(NodeRelationship.NEXT)
        assert (prev.node_id if prev else None) == (nodes[i - 1].node_id if i else None)  # linked by default
        assert (nxt.node_id if nxt else None) == (nodes[i + 1].node_id if i + 1 < len(nodes) else None)
        assert TREE_KEY not in node.metadata
        assert node.metadata["file_name"] == "cermine_web_example3_clinsci.pdf"
        plain = unflatten_metadata(node.metadata)
        assert plain["pages"] and plain["element_ids"]
        assert node.metadata["page_label"] == str(plain["pages"][0]) and node.metadata["total_pages"] == 13
        assert boxes_from_metadata(node.metadata, text=node.text), node.node_id


# -- reader ----------------------------------------------------------------------------------------
def test_reader_gives_one_document_referring_to_its_tree(documents, root, pdf):
    assert len(documents) == 1
    doc = documents[0]
    assert doc.text == document_text(root).text
    assert len(doc.text) > 20_000
    assert doc.metadata["total_pages"] == 13 and doc.metadata["parser"] == "pymupdf"
    assert doc.doc_id.startswith("cermine_web_example3_clinsci.pdf-pymupdf-")
    # only a compact reference to the tree travels with the Document
    assert TREE_KEY not in doc.metadata and doc.metadata[TREE_REF_KEY].startswith("grounded:v1:" + doc.metadata["source_sha256"])
    assert len(doc.to_json()) - 2 * len(json.dumps(doc.text)) < 2_000  # LlamaIndex writes the text twice
    # machine payload: never embedded, never shown to an LLM
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
        content = doc.get_content(mode)
        assert TREE_REF_KEY not in content and "source_sha256" not in content
    assert "file_name: cermine_web_example3_clinsci.pdf" in doc.get_content(MetadataMode.LLM)
    # plain strings: survives JSON (docstore, cache) and pickling (worker processes)
    assert Document.from_json(doc.to_json()).metadata == doc.metadata


@pytest.mark.slow
def test_reader_works_as_simple_directory_reader_extractor(pdf, documents, root):
    docs = SimpleDirectoryReader(input_files=[pdf], file_extractor={".pdf": GroundedPDFReader()}).load_data()
    assert len(docs) == 1
    assert docs[0].text == documents[0].text
    assert docs[0].metadata["file_type"] == "application/pdf"  # SimpleDirectoryReader's own metadata is kept
    again = tree_for(docs[0].metadata)  # same tree (timings in the root metadata aside)
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
        sha = root.metadata["source"]["sha256"]
        assert all(n.node_id.startswith(sha[:12]) for n in nodes) and len({n.node_id for n in nodes}) == len(nodes)
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
    assert [n.node_id for n in text_nodes] == [n.node_id for n in none_nodes]
    withheads = [i for i, n in enumerate(text_nodes) if n.metadata["body_start"] > 0]
    assert withheads
    i = withheads[0]
    section = text_nodes[i].metadata["section"]
    assert section and text_nodes[i].text.startswith(section.split(" > ")[0][:20])
    assert none_nodes[i].text == text_nodes[i].text[text_nodes[i].metadata["body_start"] :]
    # metadata mode: the section goes to the embedder, and what it sees still fits max_tokens
    tok = Chunker("fixed", 8).tokenizer
    assert all(n.metadata["body_start"] == 0 for n in meta_nodes)
    assert all(f"section: {n.metadata['section']}" in n.get_content(MetadataMode.EMBED) for n in meta_nodes if n.metadata["section"])
    assert max(tok.count(n.get_content(MetadataMode.EMBED)) for n in meta_nodes) <= 200
    i = next(k for k, n in enumerate(meta_nodes) if n.metadata["section"] == section)
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
        assert f"page_label: {node.metadata['page_label']}" in llm
        payload = set(PAYLOAD_KEYS) & set(node.metadata)
        assert payload and payload <= set(node.excluded_embed_metadata_keys)
        assert payload <= set(node.excluded_llm_metadata_keys)
        assert TREE_REF_KEY not in content


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
        assert all(isinstance(v, (str, int, float, bool)) or v is None for v in back.metadata.values())  # flat by default
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
        assert node.metadata["origin"] == "manual" and boxes_from_metadata(node.metadata) == []
        assert Chunker("fixed", 64).tokenizer.count(node.text) <= 64


def test_documents_without_a_tree_are_grounded_in_the_pdf_they_name(documents, root, pdf):
    """``keep_tree=False`` records no tree reference: the node parser treats the Document as any
    framework reader's (its ``file_path`` names the PDF) and grounds its chunks there."""
    (slim,) = document_from_tree(root, keep_tree=False)
    assert TREE_REF_KEY not in slim.metadata and slim.text == documents[0].text
    nodes = GroundedNodeParser(max_tokens=256).get_nodes_from_documents([slim])
    assert nodes and all(boxes_from_metadata(n.metadata, text=n.text) for n in nodes)
    assert all(n.metadata["grounding_status"] == "exact" for n in nodes)
    assert all(slim.text[n.start_char_idx : n.end_char_idx] == n.text for n in nodes)
    assert_boxes_show_body(pdf, boxes_from_metadata(nodes[1].metadata), nodes[1].text)


def test_edited_text_is_grounded_foreign_text_refused_and_bad_parameters_fail_early(documents):
    edited = documents[0].model_copy()
    edited.set_content(documents[0].text.upper())  # same words: grounded (case does not matter)
    nodes = GroundedNodeParser().get_nodes_from_documents([edited])
    assert nodes and all(boxes_from_metadata(n.metadata, text=n.text) for n in nodes)
    foreign = documents[0].model_copy()
    foreign.set_content("Quantum chromodynamics of gluon plasma in neutron star mergers. " * 40)
    with pytest.warns(GroundingWarning, match="could not be found in the PDF"):
        nodes = GroundedNodeParser().get_nodes_from_documents([foreign])
    assert nodes and all(boxes_from_metadata(n.metadata) == [] for n in nodes)
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
    nested = GroundedNodeParser(max_tokens=256, flat_metadata=False).get_nodes_from_documents(documents)
    flat = GroundedNodeParser(max_tokens=256).get_nodes_from_documents(documents)
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
        assert TREE_REF_KEY in meta and len(json.dumps(meta)) < 8_000
        assert_boxes_show_body(pdf, boxes, text[int(meta["body_start"]) :])
    assert norm(result["documents"][0][0])


def test_importing_grounded_stays_light_and_a_missing_framework_names_the_extra():
    assert_light_import_and_named_extra("llama_index_grounded", "llama_index", "llama-index")


# -- issue 9: no tree in nodes, ids, configuration, metadata, re-splitting, reader breadth --------------


@pytest.fixture(scope="module")
def made_pdf(tmp_path_factory):
    return make_pdf(tmp_path_factory.mktemp("made") / "renal_guide.pdf")


def _no_tree(text: str) -> None:
    assert "grounded.parsing_result" not in text and '"z2:' not in text and f'"{TREE_KEY}"' not in text


def test_no_node_relationship_or_default_node_carries_the_tree(documents):
    nodes = GroundedNodeParser(max_tokens=256).get_nodes_from_documents(documents)
    sizes = sorted(len(n.to_json()) for n in nodes)
    assert sizes[len(sizes) // 2] <= 6_000, sizes  # the budget (line boxes kept)
    for node in nodes:
        _no_tree(node.to_json())
        source = node.relationships[NodeRelationship.SOURCE]
        assert source.node_id == documents[0].doc_id and TREE_KEY not in source.metadata
        for rel in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT):
            if rel in node.relationships:
                assert node.relationships[rel].metadata == {}  # neighbours are referenced, not copied
    # the framework's default splitter over the reader's Documents copies no tree either
    default_nodes = SentenceSplitter().get_nodes_from_documents(documents)
    assert default_nodes and max(len(n.to_json()) for n in default_nodes) < 12_000
    for node in default_nodes:
        _no_tree(node.to_json())


def test_neighbours_with_and_without_prev_next_relationships(documents):
    """PREVIOUS/NEXT are on by default, as in LlamaIndex's splitters: PrevNextNodePostprocessor over a
    docstore returns previous/self/next. With ``include_prev_next_rel=False`` (nodes that only go to
    a vector store) the neighbours are found by ``index`` within the Document in the store itself."""
    linked = GroundedNodeParser(max_tokens=256).get_nodes_from_documents(documents)
    assert GroundedNodeParser.from_defaults(chunk_size=256).include_prev_next_rel is True
    assert NodeRelationship.PREVIOUS not in linked[0].relationships and NodeRelationship.NEXT not in linked[-1].relationships
    for prev, nxt in zip(linked, linked[1:], strict=False):
        assert (prev.next_node.node_id, nxt.prev_node.node_id) == (nxt.node_id, prev.node_id)
    docstore = SimpleDocumentStore()
    docstore.add_documents(linked)
    i = len(linked) // 2
    shown = PrevNextNodePostprocessor(docstore=docstore, num_nodes=1, mode="both").postprocess_nodes(
        [NodeWithScore(node=linked[i], score=1.0)]
    )
    assert [n.node.node_id for n in shown] == [linked[i - 1].node_id, linked[i].node_id, linked[i + 1].node_id]

    nodes = GroundedNodeParser(max_tokens=256, include_prev_next_rel=False).get_nodes_from_documents(documents)
    assert [n.node_id for n in nodes] == [n.node_id for n in linked]
    assert all(NodeRelationship.PREVIOUS not in n.relationships and NodeRelationship.NEXT not in n.relationships for n in nodes)
    for node in nodes:
        node.embedding = [1.0, 0.0, 0.0]
    store = ChromaVectorStore(chroma_collection=chromadb.EphemeralClient().get_or_create_collection("neighbours"))
    store.add(nodes)
    found = store.query(VectorStoreQuery(
        query_embedding=[1.0, 0.0, 0.0], similarity_top_k=3,
        filters=MetadataFilters(filters=[
            MetadataFilter(key="document_id", value=nodes[i].ref_doc_id),
            MetadataFilter(key="index", value=nodes[i].metadata["index"] + 1),
        ]),
    ))
    assert [n.node_id for n in found.nodes] == [nodes[i + 1].node_id]


def test_node_ids_are_chunk_ids_and_id_func_is_honoured(documents):
    big = GroundedNodeParser(max_tokens=512).get_nodes_from_documents(documents)
    small = GroundedNodeParser(max_tokens=128).get_nodes_from_documents(documents)
    assert not {n.node_id for n in big} & {n.node_id for n in small}
    assert [n.node_id for n in small] == [n.node_id for n in GroundedNodeParser(max_tokens=128).get_nodes_from_documents(documents)]
    assert all("chunk_id" not in n.metadata for n in small)  # the node id is the chunk id
    named = GroundedNodeParser(max_tokens=128, id_func=lambda i, doc: f"{doc.doc_id}/{i}").get_nodes_from_documents(documents)
    assert [n.node_id for n in named] == [f"{documents[0].doc_id}/{i}" for i in range(len(named))]
    assert [n.metadata["chunk_id"] for n in named] == [n.node_id for n in small]  # kept when the ids differ
    # plain Documents with identical text: the Document id is part of the source key
    twins = [Document(text="Monitor creatinine weekly. " * 80, id_=name) for name in ("a.txt", "b.txt")]
    ids = [n.node_id for n in GroundedNodeParser(max_tokens=64).get_nodes_from_documents(twins)]
    assert len(ids) == len(set(ids)) > 2


def test_changed_fields_rebuild_the_chunker(documents):
    tok = Chunker("fixed", 8).tokenizer
    parser = GroundedNodeParser(max_tokens=256)
    parser.max_tokens = 32
    assert max(tok.count(n.text) for n in parser.get_nodes_from_documents(documents)) <= 32
    parser.chunk_size = 48
    assert parser.max_tokens == 48 and parser.chunker.max_tokens == 48
    copied = parser.model_copy(update={"max_tokens": 100})
    nodes = copied.get_nodes_from_documents(documents)
    assert 80 < max(tok.count(n.text) for n in nodes) <= 100
    assert copied.to_dict()["fingerprint"] != parser.to_dict()["fingerprint"]  # IngestionPipeline's cache key follows
    aliased = GroundedNodeParser(chunk_size=64, chunk_overlap=10)
    assert (aliased.max_tokens, aliased.overlap) == (64, 10) and aliased.chunker.strategy.overlap == 10
    defaults = GroundedNodeParser.from_defaults(chunk_size=64, chunk_overlap=8, include_prev_next_rel=False)
    assert (defaults.max_tokens, defaults.overlap, defaults.include_prev_next_rel) == (64, 8, False)
    assert GroundedNodeParser(strategy="hierarchical", heading_budget=20).chunker.strategy.params()["heading_budget"] == 20
    with pytest.raises(ChunkingError, match="unknown keyword.*chunk_sizes"):
        GroundedNodeParser(chunk_sizes=64)
    with pytest.raises(ChunkingError, match="unknown keyword.*keep_separator"):
        GroundedNodeParser(keep_separator=True)
    with pytest.raises((ChunkingError, ValueError)):
        parser.box_mode = "pixels"


def test_strategy_objects_tokenizers_and_chunkers_are_accepted_and_picklable(documents):
    from grounded.chunking.strategies.recursive import RecursiveStrategy
    from grounded.text.tokenizer import minilm_tokenizer

    raw_tokenizer = minilm_tokenizer()._tok  # a tokenizers.Tokenizer
    expected = [n.text for n in GroundedNodeParser(max_tokens=96).get_nodes_from_documents(documents)]
    for parser in (
        GroundedNodeParser(strategy=RecursiveStrategy(96)),
        GroundedNodeParser(max_tokens=96, tokenizer=raw_tokenizer),
        GroundedNodeParser(chunker=Chunker("recursive", 96)),
        GroundedNodeParser(strategy=Chunker("recursive", 96)),
    ):
        again = pickle.loads(pickle.dumps(parser))
        assert [n.text for n in again.get_nodes_from_documents(documents)] == expected
        json.dumps(parser.to_dict())  # serializable for the ingestion cache key
    with pytest.raises(ChunkingError, match="differs from the given"):
        GroundedNodeParser(strategy=RecursiveStrategy(96), max_tokens=50)


@pytest.mark.parametrize(("strategy", "max_tokens"), [("recursive", 256), ("hierarchical", 256), ("recursive", 64)])
def test_embedded_text_fits_max_tokens_with_heading_metadata(documents, strategy, max_tokens):
    tok = Chunker("fixed", 8).tokenizer
    nodes = GroundedNodeParser(strategy=strategy, max_tokens=max_tokens, heading_context="metadata").get_nodes_from_documents(documents)
    counts = [tok.count(n.get_content(MetadataMode.EMBED)) for n in nodes]
    assert max(counts) <= max_tokens, sorted(counts)[-5:]
    assert sum("section: " in n.get_content(MetadataMode.EMBED) for n in nodes) > len(nodes) // 2
    for node in nodes:
        assert documents[0].text[node.start_char_idx : node.end_char_idx] == node.text
        assert boxes_from_metadata(node.metadata, text=node.text)


def test_sentence_splitter_parts_get_the_boxes_of_their_own_text(documents, pdf):
    nodes = GroundedNodeParser(max_tokens=384).get_nodes_from_documents(documents)
    parts = SentenceSplitter(chunk_size=160, chunk_overlap=0).get_nodes_from_documents(nodes)
    assert len(parts) > len(nodes)
    split_parts = [p for p in parts if p.metadata["text_hash"] != text_hash(p.text)]
    assert split_parts
    # the copied parent boxes are refused for a part ...
    with pytest.warns(GroundingWarning):
        assert boxes_from_metadata(split_parts[0].metadata, text=split_parts[0].text) == []
    # ... and node_boxes gives the boxes of the part's own text
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        for part in split_parts[::4]:
            boxes = node_boxes(part)
            assert_boxes_show_body(pdf, boxes, part.text)
            assert boxes != boxes_from_metadata(part.metadata)


def test_grounded_node_parser_resplits_grounded_nodes_with_exact_boxes(documents, pdf):
    tok = Chunker("fixed", 8).tokenizer
    doc = documents[0]
    parents = GroundedNodeParser(max_tokens=256).get_nodes_from_documents(documents)
    parts = GroundedNodeParser(max_tokens=48).get_nodes_from_documents(parents)
    assert len(parts) > 3 * len(parents)
    assert not {p.node_id for p in parts} & {n.node_id for n in parents} and len({p.node_id for p in parts}) == len(parts)
    for part in parts:
        meta = part.metadata
        assert doc.text[meta["start_char"] : meta["end_char"]] == part.text == doc.text[part.start_char_idx : part.end_char_idx]
        assert meta["token_count"] == tok.count(part.text) <= 48
        assert part.relationships[NodeRelationship.SOURCE].node_id == doc.doc_id  # still the Document's (upserts)
    for part in parts[::7]:
        assert_boxes_show_body(pdf, boxes_from_metadata(part.metadata, text=part.text), part.text)


def test_per_page_documents_and_pdf_metadata(made_pdf):
    docs = GroundedPDFReader(split_pages=True).load_data(made_pdf)
    assert [d.metadata["page_label"] for d in docs] == ["1", "2", "3"]
    assert len({d.doc_id for d in docs}) == 3
    for d in docs:
        assert d.metadata["title"] == "Renal dosing guide" and d.metadata["author"] == "Grounded Tests"
        assert d.metadata["creationdate"].startswith("2024-01-02T03:04:05")
        assert d.metadata["total_pages"] == 3 and d.metadata["file_path"] == str(made_pdf.resolve())
        assert "title: Renal dosing guide" in d.get_content(MetadataMode.LLM) and "author" not in d.get_content(MetadataMode.EMBED)
    nodes = GroundedNodeParser(max_tokens=48).get_nodes_from_documents(docs)
    assert len({n.node_id for n in nodes}) == len(nodes)
    for node in nodes:
        page = int(node.metadata["page_label"])
        source = next(d for d in docs if d.doc_id == node.ref_doc_id)
        assert source.metadata["page_label"] == str(page)
        assert {b.page for b in boxes_from_metadata(node.metadata, text=node.text)} == {page}
        assert source.text[node.start_char_idx : node.end_char_idx] == node.text
        assert_boxes_show_body(made_pdf, boxes_from_metadata(node.metadata), node.text)
    whole = GroundedPDFReader().load_data(made_pdf)
    assert len(whole) == 1 and all(d.text in whole[0].text for d in docs)


def test_reader_reads_bytes_and_file_objects_and_is_a_pydantic_reader(made_pdf, tmp_path):
    from llama_index.core.readers.base import BasePydanticReader, ReaderConfig

    by_path = GroundedPDFReader().load_data(made_pdf)[0]
    by_bytes = GroundedPDFReader().load_data(made_pdf.read_bytes(), name="renal_guide.pdf")[0]
    with open(made_pdf, "rb") as fh:
        by_file = GroundedPDFReader().load_data(fh)[0]
    for doc in (by_bytes, by_file):
        assert doc.text == by_path.text and doc.metadata[TREE_REF_KEY] == by_path.metadata[TREE_REF_KEY]
        assert doc.metadata["file_name"] == "renal_guide.pdf" and doc.metadata["title"] == "Renal dosing guide"
    # unnamed bytes are told apart by their content (no shared Document id, no cross-upserts)
    other = make_pdf(tmp_path / "other.pdf", pages=1, words="sodium").read_bytes()
    unnamed = [GroundedPDFReader().load_data(data)[0] for data in (made_pdf.read_bytes(), other)]
    assert unnamed[0].doc_id != unnamed[1].doc_id and unnamed[0].metadata["file_name"] == "document.pdf"
    reader = GroundedPDFReader(split_pages=True)
    assert isinstance(reader, BasePydanticReader)
    assert GroundedPDFReader.from_dict(reader.to_dict()).split_pages is True
    pipeline = IngestionPipeline(
        readers=[ReaderConfig(reader=reader, reader_kwargs={"file_path": str(made_pdf)})],
        transformations=[GroundedNodeParser(max_tokens=64)],
        disable_cache=True,
    )
    nodes = pipeline.run()
    assert nodes and all(boxes_from_metadata(n.metadata, text=n.text) for n in nodes)


def test_reader_passes_the_password_to_the_parser(tmp_path):
    locked = make_pdf(tmp_path / "locked.pdf", pages=1, password="s3cret")
    with pytest.raises(GroundedError):
        GroundedPDFReader().load_data(locked)
    docs = GroundedPDFReader().load_data(locked, password="s3cret")
    assert "Dosing step 1" in docs[0].text and docs[0].metadata["title"] == "Renal dosing guide"
    assert docs[0].metadata["file_path"] == str(locked.resolve())
    nodes = GroundedNodeParser(max_tokens=32).get_nodes_from_documents(docs)
    assert nodes and all(boxes_from_metadata(n.metadata, text=n.text) for n in nodes)
    # the parse is cached (boxes), but reading the encrypted PDF again still needs the password
    with pytest.raises(GroundedError):
        GroundedPDFReader().load_data(locked)
    with pytest.raises(EncryptedPDFError):
        GroundedPDFReader().load_data(locked.read_bytes(), password="wrong")


def test_reader_parses_a_pdf_once_and_checks_passwords_every_time(tmp_path):
    plain = make_pdf(tmp_path / "plain.pdf", pages=1)
    locked = make_pdf(tmp_path / "locked.pdf", pages=1, password="s3cret")
    clear_memory()  # other tests may have parsed the same bytes: start cold
    parser = CountingParser()
    reader = GroundedPDFReader(parser, cache_dir=str(tmp_path / "cache"))
    first = reader.load_data(plain)[0]
    again = reader.load_data(plain.read_bytes(), name="plain.pdf")[0]  # the same bytes: the cached tree
    assert parser.parses == 1
    assert again.text == first.text and again.metadata[TREE_REF_KEY] == first.metadata[TREE_REF_KEY]
    # the core parser decrypts the original file (no copy made by the reader) ...
    unlocked = reader.load_data(locked, password="s3cret")[0]
    source = tree_for(unlocked.metadata).metadata["source"]
    assert source["encrypted"] is True and source["path"] == str(locked)
    assert ParseCache(tmp_path / "cache").get(unlocked.metadata[TREE_REF_KEY]) is not None
    # ... and a cached encrypted PDF is parsed again, so its password is checked each time
    reader.load_data(locked, password="s3cret")
    assert parser.parses == 3
    for password in (None, "wrong"):
        with pytest.raises(EncryptedPDFError, match="locked.pdf"):
            reader.load_data(locked, password=password)


def test_reader_ocr_setting_goes_to_the_parser_options(made_pdf):
    assert GroundedPDFReader().parser_config() == {}
    assert GroundedPDFReader(ocr="never").parser_config() == {"ocr": "never"}
    both = GroundedPDFReader(ocr="auto", parser_options={"batch_pages": 2})
    assert both.parser_config() == {"batch_pages": 2, "ocr": "auto"}
    assert GroundedPDFReader.from_dict(both.to_dict()).ocr == "auto"
    with pytest.raises(ValueError, match="contradicts"):
        GroundedPDFReader(ocr="auto", parser_options={"ocr": "never"})
    with pytest.raises(ValueError, match="ocr"):
        GroundedPDFReader(ocr="sometimes")
    with pytest.raises(ValueError, match="built parser"):
        GroundedPDFReader(CountingParser(), ocr="auto")


def test_reader_ocr_reaches_the_parser_and_the_cache_reference(made_pdf, tmp_path):
    never = GroundedPDFReader(ocr="never", cache_dir=str(tmp_path / "cache"))
    assert never.get_parser().ocr == "never"
    doc = never.load_data(made_pdf)[0]
    assert json.loads(doc.metadata[PARSER_OPTIONS_KEY]) == {"ocr": "never"}
    auto = GroundedPDFReader(ocr="auto", cache_dir=str(tmp_path / "cache")).load_data(made_pdf)[0]
    assert auto.text == doc.text  # a born-digital PDF: its text layer either way
    assert auto.metadata[TREE_REF_KEY] != doc.metadata[TREE_REF_KEY]  # another parser configuration
    # the node parser re-parses a cache miss with the recorded options
    assert tree_for(doc.metadata).metadata["parser_version"].split(", layout runtime")[0].endswith("ocr never")


def test_changed_parser_settings_build_a_new_parser(made_pdf, tmp_path):
    """A reader whose ``ocr``/``parser_options`` change (assigned or ``model_copy``) parses with the new
    settings: never the parser built for the old ones under the new settings' cache reference."""
    reader = GroundedPDFReader(ocr="never", cache_dir=str(tmp_path / "cache"))
    first = reader.load_data(made_pdf)[0]
    assert tree_for(first.metadata).metadata["parser_version"].split(", layout runtime")[0].endswith("ocr never")
    reader.ocr = "auto"
    assert reader.get_parser().ocr == "auto"
    second = reader.load_data(made_pdf)[0]
    assert json.loads(second.metadata[PARSER_OPTIONS_KEY]) == {"ocr": "auto"}
    assert "ocr auto" in tree_for(second.metadata).metadata["parser_version"]
    copied = reader.model_copy(update={"ocr": None, "parser_options": {"ocr": "never", "line_spans": False}})
    assert (copied.get_parser().ocr, copied.get_parser().line_spans) == ("never", False)
    assert reader.get_parser().ocr == "auto" and reader.get_parser() is reader.get_parser()  # built once per settings
    # a built parser is used as given, and options beside it are refused (as by the constructor)
    given = CountingParser()
    custom = GroundedPDFReader(given)
    assert custom.get_parser() is given
    custom.parser_options = {"ocr": "never"}
    with pytest.raises(ValueError, match="built parser"):
        custom.get_parser()
    custom.parser_options = {}
    assert custom.get_parser() is given
