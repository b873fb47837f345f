"""Page-range filters (``page_start <= p <= page_end``, 1-based ints) return the same chunks in
LlamaIndex (SimpleVectorStore, Chroma) and LangChain (Chroma) (issue 22, SPEC 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grounded.metadata import chunk_of

PAGES = (1, 2, 5, 9, 13, 14)


@pytest.fixture(scope="module")
def nodes(clinsci_pdf: Path) -> list:
    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader

    docs = GroundedPDFReader().load_data(clinsci_pdf)
    return GroundedNodeParser(max_tokens=256).get_nodes_from_documents(docs)


@pytest.fixture(scope="module")
def documents(clinsci_pdf: Path) -> list:
    from langchain_grounded import GroundedPDFLoader

    return GroundedPDFLoader(clinsci_pdf, max_tokens=256).load()


def _expected(items: list, page: int) -> set[str]:
    records = [chunk_of(x) for x in items]
    return {r.id for r in records if r.page_start <= page <= r.page_end}


def _li_filters(page: int):
    from llama_index.core.vector_stores import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )

    return MetadataFilters(
        filters=[MetadataFilter(key="page_start", value=page, operator=FilterOperator.LTE),
                 MetadataFilter(key="page_end", value=page, operator=FilterOperator.GTE)],
        condition=FilterCondition.AND,
    )


def _li_ids(index, page: int, n: int) -> set[str]:
    retriever = index.as_retriever(similarity_top_k=n, filters=_li_filters(page))
    return {hit.node.node_id for hit in retriever.retrieve("dose")}


def test_nodes_and_documents_carry_one_based_int_page_ranges(nodes: list, documents: list) -> None:
    for item, meta in [*((n, n.metadata) for n in nodes), *((d, d.metadata) for d in documents)]:
        assert isinstance(meta["page_start"], int) and isinstance(meta["page_end"], int)
        record = chunk_of(item)
        assert (record.page_start, record.page_end) == (meta["page_start"], meta["page_end"]) and record.page_start >= 1
        assert "page_start" in getattr(item, "excluded_embed_metadata_keys", ["page_start"])
    assert all(d.metadata["page"] == d.metadata["page_start"] - 1 for d in documents)  # LangChain's page is 0-based


def test_same_page_filter_same_chunks_in_every_store(nodes: list, documents: list) -> None:
    import chromadb
    from langchain_chroma import Chroma
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    assert [n.node_id for n in nodes] == [d.id for d in documents]  # the same chunks in both frameworks
    n = len(nodes)
    embed = MockEmbedding(embed_dim=8)
    simple = VectorStoreIndex(nodes, embed_model=embed)
    client = chromadb.EphemeralClient()
    li_collection = client.create_collection("li_pages", embedding_function=None)
    chroma_li = VectorStoreIndex(
        nodes, storage_context=StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=li_collection)),
        embed_model=embed,
    )
    lc = Chroma(collection_name="lc_pages", client=client, embedding_function=DeterministicFakeEmbedding(size=8))
    lc.add_documents(documents, ids=[d.id for d in documents])
    for page in PAGES:
        want = _expected(nodes, page)
        assert want == _expected(documents, page)
        filt = {"$and": [{"page_start": {"$lte": page}}, {"page_end": {"$gte": page}}]}
        got_lc = {d.id for d in lc.similarity_search("dose", k=n, filter=filt)}
        assert _li_ids(simple, page, n) == want, f"SimpleVectorStore, page {page}"
        assert _li_ids(chroma_li, page, n) == want, f"LlamaIndex Chroma, page {page}"
        assert got_lc == want, f"LangChain Chroma, page {page}"
        assert (len(want) > 0) == (page <= 13)


# -- the frameworks' own readers' inputs, list pages where the store takes lists (issue 31.4) ----------
FOREIGN_PDF = ("pdfs", "cermine_medical", "test2.pdf")


@pytest.fixture(scope="module")
def foreign(shared_parses) -> tuple[list, list, list]:
    """SimpleDirectoryReader -> GroundedNodeParser nodes and PyMuPDFLoader -> GroundedTextSplitter
    parts of one shared PDF (parsed once, in the shared cache)."""
    from langchain_community.document_loaders import PyMuPDFLoader
    from llama_index.core import SimpleDirectoryReader

    from langchain_grounded import GroundedTextSplitter
    from llama_index_grounded import GroundedNodeParser
    from tests.support.data import shared

    pdf = shared(*FOREIGN_PDF)
    shared_parses.tree(pdf)
    cache = str(shared_parses.cache.directory)
    docs = SimpleDirectoryReader(input_files=[str(pdf)]).load_data()
    nested = GroundedNodeParser(max_tokens=128, cache_dir=cache, flat_metadata=False).get_nodes_from_documents(docs)
    flat = GroundedNodeParser(max_tokens=128, cache_dir=cache).get_nodes_from_documents(docs)
    parts = GroundedTextSplitter(chunk_size=128, chunk_overlap=0, cache=cache).split_documents(PyMuPDFLoader(str(pdf)).load())
    return nested, flat, parts


def test_reader_inputs_filter_by_page_range_and_list_pages_in_every_store(foreign: tuple[list, list, list]) -> None:
    import chromadb
    from langchain_chroma import Chroma
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from grounded.metadata import with_list_pages

    nodes, flat, parts = foreign
    assert all(isinstance(n.metadata["pages"], list) and isinstance(n.metadata["page"], int) for n in nodes)
    assert all(isinstance(p.metadata["pages"], str) for p in parts)  # flat by default: with_list_pages for list stores
    client = chromadb.EphemeralClient()
    embed = MockEmbedding(embed_dim=8)
    simple = VectorStoreIndex(nodes, embed_model=embed)  # nested metadata: pages is a list, CONTAINS works
    assert [n.node_id for n in flat] == [n.node_id for n in nodes]
    li_chroma = VectorStoreIndex(  # LlamaIndex's ChromaVectorStore takes flat scalars only: the range recipe
        flat, embed_model=embed,
        storage_context=StorageContext.from_defaults(
            vector_store=ChromaVectorStore(chroma_collection=client.create_collection("li_foreign", embedding_function=None))),
    )
    lc = Chroma(collection_name="lc_foreign", client=client, embedding_function=DeterministicFakeEmbedding(size=8))
    lc.add_documents([type(p)(page_content=p.page_content, metadata=with_list_pages(p.metadata)) for p in parts],
                     ids=[p.id for p in parts])
    for page in range(1, 8):
        want_nodes, want_parts = _expected(nodes, page), _expected(parts, page)
        assert _li_ids(simple, page, len(nodes)) == want_nodes
        assert _li_ids(li_chroma, page, len(nodes)) == want_nodes
        contains = MetadataFilters(filters=[MetadataFilter(key="pages", value=page, operator=FilterOperator.CONTAINS)])
        got = {h.node.node_id for h in simple.as_retriever(similarity_top_k=len(nodes), filters=contains).retrieve("heart")}
        assert got == want_nodes, f"SimpleVectorStore CONTAINS, page {page}"
        by_range = {"$and": [{"page_start": {"$lte": page}}, {"page_end": {"$gte": page}}]}
        assert {d.id for d in lc.similarity_search("heart", k=len(parts), filter=by_range)} == want_parts
        got_lc = {d.id for d in lc.similarity_search("heart", k=len(parts), filter={"pages": {"$contains": page}})}
        assert got_lc == want_parts, f"LangChain Chroma $contains, page {page}"
        assert (len(want_parts) > 0) == (page <= 6)
