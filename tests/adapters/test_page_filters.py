"""Page-range filters (``page_start <= p <= page_end``, 1-based ints) return the same chunks in
LlamaIndex (SimpleVectorStore, Chroma) and LangChain (Chroma) (issue 22, SPEC 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grounded.metadata import record_from_store

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
    records = [record_from_store(x) for x in items]
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
        record = record_from_store(item)
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
