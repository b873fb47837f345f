"""The LlamaIndex adapter in the framework's own pipelines with real stores (issue 9's "done when"):
IngestionPipeline with docstore + cache + UPSERTS + worker processes into Chroma, VectorStoreIndex on
a persisted llama-index-vector-stores-chroma store, CitationQueryEngine citation chunks, the default
splitter over the reader's Documents, and chunk ids without collisions across sources and configs.
No stored node, cache entry or relationship may contain the parse tree."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import chromadb
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.ingestion import DocstoreStrategy, IngestionCache, IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import PrevNextNodePostprocessor
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.vector_stores.chroma import ChromaVectorStore

from grounded.io.box_codec import GroundingWarning, boxes_from_metadata
from grounded.parsers.cache import ParseCache, clear_memory
from llama_index_grounded import (
    GroundedNodeParser,
    GroundedPDFReader,
    GroundedTextNode,
    MiniLMEmbedding,
    node_boxes,
)
from tests.support.adapter_checks import ANSWER_MARK, QUESTION, assert_boxes_show_body
from tests.support.data import REPO, shared
from tests.support.pdf_builders import make_pdf

#: the parse tree's fingerprints in any serialized form (lossless JSON, compressed, metadata key)
TREE_MARKERS = (b"grounded.parsing_result", b'"z2:', b'"grounded_tree"', b"char_x")
CONFIGS = [
    {"strategy": "recursive", "max_tokens": 256},
    {"strategy": "recursive", "max_tokens": 128},
    {"strategy": "fixed", "max_tokens": 96, "overlap": 16},
    {"strategy": "hierarchical", "max_tokens": 200},
]


def assert_no_tree_under(folder: Path) -> None:
    files = [f for f in folder.rglob("*") if f.is_file()]
    assert files
    for f in files:
        data = f.read_bytes()
        for marker in TREE_MARKERS:
            assert marker not in data, f"{f} contains {marker!r}"


@pytest.fixture(scope="module")
def pdf() -> Path:
    return shared("long", "cermine_web_example3_clinsci.pdf")


@pytest.fixture(scope="module")
def documents(pdf) -> list[Document]:
    return GroundedPDFReader().load_data(pdf)


@pytest.fixture(scope="module")
def embed_model() -> MiniLMEmbedding:
    return MiniLMEmbedding()


@pytest.fixture(scope="module")
def made_pdf(tmp_path_factory) -> Path:
    return make_pdf(tmp_path_factory.mktemp("made") / "renal_guide.pdf", pages=2)


def test_no_id_collisions_across_sources_configurations_and_batches(documents, made_pdf):
    made = GroundedPDFReader().load_data(made_pdf)
    twins = [Document(text="Monitor potassium and creatinine weekly. " * 60, id_=f"note-{k}.txt") for k in "ab"]
    sources = [documents, made, twins]
    all_ids: list[str] = []
    for config in CONFIGS:
        parser = GroundedNodeParser(**config)
        batch = [n.node_id for docs in sources for n in parser.get_nodes_from_documents(docs)]
        together = [n.node_id for n in parser.get_nodes_from_documents([*documents, *made, *twins])]
        interleaved = [n.node_id for n in parser.get_nodes_from_documents([twins[1], *made, twins[0], *documents])]
        assert sorted(batch) == sorted(together) == sorted(interleaved)  # ids do not depend on the batching
        all_ids += batch
    assert len(all_ids) == len(set(all_ids)), f"{len(all_ids) - len(set(all_ids))} colliding ids"


def test_tree_resolution_after_a_cache_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(tmp_path / "cache"))
    pdf = make_pdf(tmp_path / "guide.pdf", pages=2)
    docs = GroundedPDFReader().load_data(pdf)
    ref = docs[0].metadata["grounded_tree_ref"]
    expected = [n.metadata["boxes"] for n in GroundedNodeParser(max_tokens=40).get_nodes_from_documents(docs)]
    # another process (or a wiped cache): re-parsed from the unchanged PDF, same boxes
    ParseCache().remove(ref)
    clear_memory()
    again = GroundedNodeParser(max_tokens=40).get_nodes_from_documents(docs)
    assert [n.metadata["boxes"] for n in again] == expected
    # the PDF was replaced: the Document no longer describes it; text is still chunked, without boxes
    ParseCache().remove(ref)
    clear_memory()
    make_pdf(pdf, pages=2, words="sodium")
    with pytest.warns(GroundingWarning, match="not in the parse cache and the PDF is missing or changed"):
        stale = GroundedNodeParser(max_tokens=40).get_nodes_from_documents(docs)
    assert stale and all(boxes_from_metadata(n.metadata) == [] for n in stale)


@pytest.mark.slow
def test_ingestion_pipeline_upserts_into_chroma_with_workers(tmp_path, monkeypatch, embed_model):
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(tmp_path / "cache"))  # the spawned workers read it too
    pdf_a = make_pdf(tmp_path / "a.pdf", pages=3, words="clearance")
    pdf_b = make_pdf(tmp_path / "b.pdf", pages=2, words="potassium")
    reader = GroundedPDFReader()
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    store = ChromaVectorStore(chroma_collection=client.get_or_create_collection("guides"))
    parser = GroundedNodeParser(max_tokens=48)

    def pipeline() -> IngestionPipeline:
        p = IngestionPipeline(
            transformations=[parser, embed_model],
            vector_store=store,
            docstore=SimpleDocumentStore(),
            cache=IngestionCache(),
            docstore_strategy=DocstoreStrategy.UPSERTS,
        )
        if (tmp_path / "pipeline").exists():
            p.load(str(tmp_path / "pipeline"))
        return p

    first_docs = reader.load_data([pdf_a, pdf_b])
    first = pipeline()
    nodes = first.run(documents=first_docs, num_workers=2)
    first.persist(str(tmp_path / "pipeline"))
    assert sorted(store._collection.get()["ids"]) == sorted(n.node_id for n in nodes)
    old_a = {n.node_id for n in parser.get_nodes_from_documents(first_docs[:1])}
    keep_b = {n.node_id for n in parser.get_nodes_from_documents(first_docs[1:])}
    # the PDF at the same path is rewritten: same Document id, new content -> its old nodes go
    make_pdf(pdf_a, pages=2, words="sodium")
    second_docs = reader.load_data([pdf_a, pdf_b])
    assert [d.doc_id for d in second_docs] == [d.doc_id for d in first_docs]
    assert second_docs[0].hash != first_docs[0].hash and second_docs[1].hash == first_docs[1].hash
    second = pipeline()
    second.run(documents=second_docs, num_workers=2)
    second.persist(str(tmp_path / "pipeline"))
    new_a = {n.node_id for n in parser.get_nodes_from_documents(second_docs[:1])}
    stored = set(store._collection.get()["ids"])
    assert stored == new_a | keep_b and not stored & (old_a - new_a)
    # nothing persisted holds the tree: docstore, ingestion cache, Chroma's files
    assert_no_tree_under(tmp_path / "pipeline")
    assert_no_tree_under(tmp_path / "chroma")


@pytest.mark.slow
def test_vector_store_index_on_persisted_chroma_and_citation_query_engine(documents, embed_model, pdf, tmp_path):
    path = str(tmp_path / "chroma")
    store = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=path).get_or_create_collection("clinsci"))
    VectorStoreIndex.from_documents(
        documents,
        storage_context=StorageContext.from_defaults(vector_store=store),
        transformations=[GroundedNodeParser(strategy="recursive", max_tokens=256)],
        embed_model=embed_model,
    )
    assert_no_tree_under(tmp_path / "chroma")
    # a fresh client on the persisted store: retrieval gives nodes whose boxes show their text
    reopened = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=path).get_collection("clinsci"))
    index = VectorStoreIndex.from_vector_store(reopened, embed_model=embed_model)
    hits = index.as_retriever(similarity_top_k=4).retrieve(QUESTION)
    assert any(ANSWER_MARK in h.node.text for h in hits)
    for hit in hits:
        assert_boxes_show_body(pdf, node_boxes(hit), hit.node.text)
    # citation chunks are parts of the retrieved nodes: each gets the boxes of its own text
    engine = CitationQueryEngine.from_args(index, llm=MockLLM(), citation_chunk_size=64, similarity_top_k=3)
    response = engine.query(QUESTION)
    citations = response.source_nodes
    assert len(citations) > 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        for citation in citations:
            text = citation.node.get_content().split("\n", 1)[1]  # "Source N:\n<chunk>\n"
            boxes = node_boxes(citation)
            assert_boxes_show_body(pdf, boxes, text)
            assert boxes != boxes_from_metadata(citation.node.metadata)  # never the whole parent's
    with pytest.warns(GroundingWarning):  # the copied metadata alone is refused for a citation chunk
        assert boxes_from_metadata(citations[0].node.metadata, text=citations[0].node.text) == []


@pytest.mark.slow
def test_default_splitter_index_over_reader_documents_stores_no_tree(documents, embed_model, pdf, tmp_path):
    index = VectorStoreIndex.from_documents(documents, embed_model=embed_model)
    index.storage_context.persist(str(tmp_path / "storage"))
    assert_no_tree_under(tmp_path / "storage")
    size = sum(f.stat().st_size for f in (tmp_path / "storage").rglob("*") if f.is_file())
    assert size < 2_000_000, size
    node = index.as_retriever(similarity_top_k=1).retrieve(QUESTION)[0]
    assert_boxes_show_body(pdf, node_boxes(node), node.node.text)  # located in the tree by its text


def test_nodes_read_back_from_stores_show_the_same_text_to_embedder_and_llm(documents, tmp_path):
    """GroundedTextNode leaves TextNode's defaulted fields out of what stores persist: read back (as
    plain TextNodes) from Chroma, a persisted docstore and the ingestion cache, every node equals the
    node written, and the text the embedder and the LLM see is unchanged (also with the heading path
    shown to both, and with a custom metadata template, which is written). Relationships (SOURCE and
    the PREVIOUS/NEXT links on by default) are written without RelatedNodeInfo's defaults and read
    back equal; PrevNextNodePostprocessor finds a Chroma hit's neighbours in the persisted docstore."""
    visible = GroundedNodeParser(strategy="hierarchical", max_tokens=128, heading_context="metadata")
    nodes = [
        *GroundedNodeParser(strategy="recursive", max_tokens=256).get_nodes_from_documents(documents),
        *visible.get_nodes_from_documents(documents),
    ]
    # parts of a LlamaIndex splitter's node: their SOURCE is that node's (with the Document's metadata and hash)
    split = SentenceSplitter(chunk_size=512, chunk_overlap=0).get_nodes_from_documents(documents)[:2]
    nodes += GroundedNodeParser(max_tokens=64).get_nodes_from_documents(split)
    children = [RelatedNodeInfo(node_id="a"), RelatedNodeInfo(node_id="b", node_type=ObjectType.TEXT, metadata={"k": 1}, hash="h")]
    nodes.append(GroundedTextNode(text="Hold the ACE inhibitor.", relationships={NodeRelationship.CHILD: children}))
    custom = Document(text="Potassium above 6 mmol/L needs an ECG. " * 30, metadata={"ward": "renal"},
                      metadata_template="{key}={value}", metadata_separator="; ")
    nodes += GroundedNodeParser(max_tokens=32).get_nodes_from_documents([custom])
    assert all(isinstance(n, GroundedTextNode) for n in nodes)
    assert '"metadata_template"' not in nodes[0].to_json() and '"metadata_template": "{key}={value}"' in nodes[-1].to_json()
    assert any(n.get_content(MetadataMode.EMBED) != n.text for n in nodes)  # some metadata is shown to the embedder
    for node in nodes:
        node.embedding = [1.0, 0.0, 0.0]
    path = str(tmp_path / "chroma")
    ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=path).get_or_create_collection("roundtrip")).add(nodes)
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    docstore.persist(str(tmp_path / "docstore.json"))
    cache = IngestionCache()
    cache.put("k", nodes)
    cache.persist(str(tmp_path / "cache.json"))
    reopened = ChromaVectorStore(chroma_collection=chromadb.PersistentClient(path=path).get_collection("roundtrip"))
    read_back = {
        "chroma": reopened.get_nodes(node_ids=[n.node_id for n in nodes]),
        "docstore": SimpleDocumentStore.from_persist_path(str(tmp_path / "docstore.json")).get_nodes([n.node_id for n in nodes]),
        "cache": IngestionCache.from_persist_path(str(tmp_path / "cache.json")).get("k"),
    }
    fields = set(TextNode.model_fields) - {"embedding"}
    for where, got in read_back.items():
        assert got is not None and len(got) == len(nodes), where
        by_id = {n.node_id: n for n in got}
        for node in nodes:
            back = by_id[node.node_id]
            assert type(back) is TextNode, where
            for mode in (MetadataMode.EMBED, MetadataMode.LLM, MetadataMode.ALL, MetadataMode.NONE):
                assert back.get_content(mode) == node.get_content(mode), (where, mode)
            assert {f: getattr(back, f) for f in fields} == {f: getattr(node, f) for f in fields}, where
    # PREVIOUS/NEXT (on by default) and SOURCE are written compactly: RelatedNodeInfo's defaults and
    # class name are left out, set fields (the SOURCE's type, a splitter SOURCE's metadata and hash) are kept
    linked = [n for n in nodes if NodeRelationship.PREVIOUS in n.relationships and NodeRelationship.NEXT in n.relationships]
    assert len(linked) > len(nodes) // 2
    stored = {n.node_id: json.loads(n.to_json())["relationships"] for n in nodes}
    entries = [e for rels in stored.values() for v in rels.values() for e in (v if isinstance(v, list) else [v])]
    assert not [e for e in entries if "class_name" in e or any(v in (None, {}) for v in e.values())]
    assert stored[linked[0].node_id][NodeRelationship.PREVIOUS.value] == {"node_id": linked[0].prev_node.node_id}
    assert stored[linked[0].node_id][NodeRelationship.SOURCE.value] == {"node_id": linked[0].ref_doc_id, "node_type": "4"}
    assert any(e.get("hash") and e.get("metadata") for e in entries)  # the splitter's SOURCE
    assert [e for e in entries if e["node_id"] in ("a", "b")] == [{"node_id": "a"}, {"node_id": "b", "node_type": "1", "metadata": {"k": 1}, "hash": "h"}]
    # neighbours of a node retrieved from Chroma, through the persisted docstore
    hit = next(n for n in read_back["chroma"] if n.node_id == linked[len(linked) // 2].node_id)
    shown = PrevNextNodePostprocessor(
        docstore=SimpleDocumentStore.from_persist_path(str(tmp_path / "docstore.json")), num_nodes=1, mode="both"
    ).postprocess_nodes([NodeWithScore(node=hit, score=1.0)])
    assert [n.node.node_id for n in shown] == [hit.prev_node.node_id, hit.node_id, hit.next_node.node_id]
    written = {n.node_id: n for n in nodes}
    for got in shown:
        assert {f: getattr(got.node, f) for f in fields} == {f: getattr(written[got.node.node_id], f) for f in fields}


def test_store_sizes_meet_the_issue_budget(documents, tmp_path):
    """benchmarks/adapter_store_size.py on the clinsci PDF (vectors of zeros: sizes, not retrieval):
    median node JSON <= 6 KB, LlamaIndex Chroma <= 1.5x LangChain Chroma, no tree anywhere."""
    spec = importlib.util.spec_from_file_location("adapter_store_size", REPO / "benchmarks" / "adapter_store_size.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = {}
    for line in bench.run(shared("long", "cermine_web_example3_clinsci.pdf"), "zeros", tmp_path):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3:
            table[cells[0]] = cells[1]
    assert float(table["median `len(node.to_json())`"].split()[0]) <= 6.0
    assert float(table["LlamaIndex / LangChain Chroma"].rstrip("x")) <= 1.5
    assert table["files or nodes containing the parse tree"] == "0"


@pytest.fixture(scope="module")
def overlapping_nodes() -> list[BaseNode]:
    """SentenceSplitter's nodes at its defaults (chunk_overlap=200) over a real PDF whose re-split
    gives one span twice (two overlapping nodes end on the same paragraph)."""
    docs = GroundedPDFReader().load_data(shared("long", "federal-register-2020-17221.pdf"))
    return SentenceSplitter().get_nodes_from_documents(docs)


def assert_links_consistent(nodes: list[BaseNode]) -> None:
    by_id = {n.node_id: n for n in nodes}
    for n in nodes:
        nxt = n.relationships.get(NodeRelationship.NEXT)
        if nxt is not None:
            assert isinstance(nxt, RelatedNodeInfo) and nxt.node_id in by_id
            back = by_id[nxt.node_id].relationships[NodeRelationship.PREVIOUS]
            assert isinstance(back, RelatedNodeInfo) and back.node_id == n.node_id
        prev = n.relationships.get(NodeRelationship.PREVIOUS)
        if prev is not None:
            assert isinstance(prev, RelatedNodeInfo) and prev.node_id in by_id
        assert n.ref_doc_id is not None and n.ref_doc_id not in by_id  # the Document, not a dropped part


def test_resplit_overlapping_sentence_nodes_index_into_chroma_in_one_add(overlapping_nodes, embed_model, tmp_path):
    """SentenceSplitter defaults -> GroundedNodeParser -> VectorStoreIndex on Chroma: two overlapping
    input nodes re-split into one span twice; that chunk is kept once (Chroma refuses one id twice
    in one add with DuplicateIDError), every other part of every input is kept, ids are the same on
    a second run and for each input node parsed alone."""
    parser = GroundedNodeParser()
    nodes = parser.get_nodes_from_documents(overlapping_nodes)
    ids = [n.node_id for n in nodes]
    assert len(ids) == len(set(ids))
    assert ids == [n.node_id for n in GroundedNodeParser().get_nodes_from_documents(overlapping_nodes)]
    alone = [[n.node_id for n in parser.get_nodes_from_documents([sn])] for sn in overlapping_nodes]
    assert sum(map(len, alone)) > len(ids)  # the input does repeat a part (else this test proves nothing)
    assert set(ids) == {i for part_ids in alone for i in part_ids}  # only exact repeats were left out
    assert ids == list(dict.fromkeys(i for part_ids in alone for i in part_ids))  # first copies, in order
    assert all("~" not in i for i in ids)  # same span = same chunk id as on every other surface
    assert_links_consistent(nodes)

    collection = chromadb.PersistentClient(path=str(tmp_path / "chroma")).get_or_create_collection("fedreg")
    store = ChromaVectorStore(chroma_collection=collection)
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed_model)
    assert collection.count() == len(nodes)
    hits = index.as_retriever(similarity_top_k=3).retrieve("Which agency issued this rule?")
    assert hits and all(h.node.node_id in set(ids) for h in hits)
    assert all(node_boxes(h.node) for h in hits)


def test_same_span_with_other_metadata_gets_a_repeat_id(overlapping_nodes):
    """A part with an earlier part's span but other metadata (a copy of the input node with a key
    of its own) is another node: it gets ``<id>~1``; an identical copy adds nothing."""
    first = overlapping_nodes[0]
    twin = first.model_copy(deep=True)
    tagged = first.model_copy(deep=True)
    tagged.metadata["reviewer"] = "pharmacy"
    parser = GroundedNodeParser()
    once = parser.get_nodes_from_documents([first])
    nodes = parser.get_nodes_from_documents([first, twin, tagged])
    assert [n.node_id for n in nodes] == [n.node_id for n in once] + [f"{n.node_id}~1" for n in once]
    assert [n.text for n in nodes] == [n.text for n in once] * 2
    assert all(n.metadata["reviewer"] == "pharmacy" for n in nodes[len(once):])
    assert_links_consistent(nodes)
