"""``GroundedRetriever`` in both frameworks over a real ingest output (the run-once guideline index of
:mod:`tests.support.search_index`): in LlamaIndex's ``RetrieverQueryEngine`` (``MockLLM``) and a
LangChain LCEL chain (``FakeListChatModel``), every search mode, page filters applied in the search,
typed refusals, no embedding model for text mode, the README examples; and the frameworks' own
BM25 retrievers over grounded nodes/Documents keep their boxes readable."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from llama_index.core import Settings
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore
from pydantic import ValidationError

import langchain_grounded
import llama_index_grounded
from grounded.errors import GroundedError
from grounded.io.box_codec import boxes_from_metadata
from grounded.io.chunk_codec import chunk_from_row, read_stored_chunk
from grounded.search import IndexNotFoundError, NotAnIndexError, SearchIndex
from tests.support.data import REPO, shared
from tests.support.search_index import ANSWER_PAGE, ENV, QUESTION, guideline_index, table_rows
from tests.support.shared_parses import SharedParses

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache

#: a question BM25 matches in most chunks of the index, on every page of the guideline
BROAD = "breast cancer therapy treatment patients"
SMALL_PDF = ("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "retriever")


@pytest.fixture(scope="module")
def rows(out: Path) -> dict[str, dict[str, Any]]:
    return {r["chunk_id"]: r for r in table_rows(out).to_pylist()}


def _llama(out: Path, query: str = QUESTION, **kwargs: Any) -> list[NodeWithScore]:
    return llama_index_grounded.GroundedRetriever(out, **kwargs).retrieve(query)


def _lang(out: Path, query: str = QUESTION, **kwargs: Any) -> list[Document]:
    return langchain_grounded.GroundedRetriever(out=out, **kwargs).invoke(query)


def _assert_same_record(item: Any, row: dict[str, Any]) -> None:
    """The chunk read back from a node/Document is the row's chunk (boxes to the 5 decimals kept)."""
    got, want = read_stored_chunk(item), chunk_from_row(row)
    for field in ("id", "content", "start_char", "end_char", "body_start", "pages", "heading_path", "element_ids",
                  "token_count", "strategy", "strategy_params"):
        assert getattr(got, field) == getattr(want, field), field
    assert len(got.boxes) == len(want.boxes) > 0
    for a, b in zip(got.boxes, want.boxes, strict=True):
        assert a.page == b.page and len(a.spans or [a]) == len(b.spans or [b])  # one-line boxes keep no span
        assert (a.left, a.top, a.right, a.bottom) == pytest.approx((b.left, b.top, b.right, b.bottom), abs=1e-5)


# -- LlamaIndex -------------------------------------------------------------------------------------
def _assert_focus(text: str, meta: dict[str, Any], boxes: list[Any]) -> None:
    spans = meta["focus_spans"]
    assert spans and all(0 <= a < b <= len(text) for a, b in spans)
    assert "Capecitabine" in " ".join(text[a:b] for a, b in spans) and sum(b - a for a, b in spans) < len(text) / 2
    focus_boxes = boxes_from_metadata(meta["focus_boxes"])
    assert focus_boxes
    for f in focus_boxes:
        for s in f.spans or [f]:
            assert any(c.page == f.page and c.left - 0.004 <= s.left and s.right <= c.right + 0.004
                       and c.top - 0.004 <= s.top and s.bottom <= c.bottom + 0.004 for c in boxes), s


def test_llama_index_retriever_in_a_query_engine(out: Path, rows: dict[str, dict[str, Any]]) -> None:
    retriever = llama_index_grounded.GroundedRetriever(out, similarity_top_k=3)
    response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query(QUESTION)
    hits = response.source_nodes
    assert len(hits) == 3 and [h.score for h in hits] == sorted((h.score or 0 for h in hits), reverse=True)
    first = hits[0]
    meta = first.node.metadata
    assert meta["pages"] == [ANSWER_PAGE] and meta["page"] == ANSWER_PAGE and meta["page_label"] == str(ANSWER_PAGE)
    assert meta["page_start"] == meta["page_end"] == ANSWER_PAGE
    assert meta["file_name"] == "guideline.pdf" and Path(meta["file_path"]).is_file()
    assert meta["section"].endswith("4.3 Chemotherapy and targeted therapy")
    assert meta["config_fingerprint"] == rows[first.node.node_id]["config_fingerprint"]
    assert "Capecitabine" in first.node.get_content()
    boxes = llama_index_grounded.node_boxes(first)
    assert boxes and all(b.page == ANSWER_PAGE for b in boxes) and any(len(b.spans) > 1 for b in boxes)
    assert boxes == boxes_from_metadata(meta, text=first.node.get_content()) == read_stored_chunk(first).geom
    for hit in hits:
        _assert_same_record(hit, rows[hit.node.node_id])
    # the LLM got the chunk texts with their page and file, never the boxes or ids (MockLLM echoes the prompt)
    assert first.node.get_content() in str(response) and "page_label: 4" in str(response)
    llm_view = first.node.get_content(MetadataMode.LLM)
    assert "boxes" not in llm_view and "element_ids" not in llm_view and "file_name: guideline.pdf" in llm_view
    embed_view = first.node.get_content(MetadataMode.EMBED)
    assert "boxes" not in embed_view and "file_path" not in embed_view
    # the focus: the answer's sentences of the node's text, their boxes inside the node's, never seen by the LLM
    _assert_focus(first.node.get_content(), meta, boxes)
    assert "focus" not in llm_view and "focus" not in embed_view and "focus_spans" not in str(response)


def test_llama_index_retriever_with_the_settings_llm(out: Path) -> None:
    previous = Settings._llm
    Settings.llm = MockLLM()
    try:
        engine = RetrieverQueryEngine.from_args(llama_index_grounded.GroundedRetriever(out, 2, "text"))
        response = engine.query(QUESTION)
    finally:
        Settings._llm = previous
    assert len(response.source_nodes) == 2 and all(llama_index_grounded.node_boxes(h) for h in response.source_nodes)


def test_flat_metadata_is_store_safe_and_reads_back(out: Path, rows: dict[str, dict[str, Any]]) -> None:
    (node,) = _llama(out, similarity_top_k=1, flat_metadata=True)
    (doc,) = _lang(out, k=1, flat_metadata=True)
    for meta in (node.node.metadata, doc.metadata):
        assert all(isinstance(v, (str, int, float, bool)) for v in meta.values())
        assert json.loads(meta["pages"]) == [ANSWER_PAGE]
    _assert_same_record(node, rows[node.node.node_id])
    _assert_same_record(doc, rows[doc.id or ""])


# -- LangChain --------------------------------------------------------------------------------------
def test_langchain_retriever_in_an_lcel_chain(out: Path, rows: dict[str, dict[str, Any]]) -> None:
    retriever = langchain_grounded.GroundedRetriever(out=out, k=3)
    seen: list[str] = []

    def context(docs: list[Document]) -> str:
        text = "\n\n".join(f"[{d.metadata['file_name']} p.{d.metadata['page_start']}] {d.page_content}" for d in docs)
        seen.append(text)
        return text

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    chain = {"context": retriever | context, "question": RunnablePassthrough()} | prompt | FakeListChatModel(
        responses=["Capecitabine"]) | StrOutputParser()
    assert chain.invoke(QUESTION) == "Capecitabine"
    assert f"[guideline.pdf p.{ANSWER_PAGE}]" in seen[0]
    docs = retriever.invoke(QUESTION)
    first = docs[0]
    meta = first.metadata
    assert meta["page"] == ANSWER_PAGE - 1  # 0-based, as PyMuPDFLoader's
    assert meta["pages"] == [ANSWER_PAGE] and meta["page_start"] == meta["page_end"] == ANSWER_PAGE
    assert meta["source"] == meta["file_path"] and Path(meta["source"]).name == meta["file_name"] == "guideline.pdf"
    assert first.id == meta["chunk_id"] and meta["config_fingerprint"] == rows[meta["chunk_id"]]["config_fingerprint"]
    assert meta["score"] > 0 and "Capecitabine" in first.page_content
    boxes = boxes_from_metadata(meta, text=first.page_content)
    assert boxes and all(b.page == ANSWER_PAGE for b in boxes) and any(len(b.spans) > 1 for b in boxes)
    assert boxes == read_stored_chunk(first).geom
    _assert_focus(first.page_content, meta, boxes)
    assert "focus" not in seen[0]  # the chain formats page_content: the focus never reaches the LLM
    for doc in docs:
        _assert_same_record(doc, rows[doc.id or ""])
    # the same chunks, in the same order, as the LlamaIndex retriever
    assert [d.id for d in docs] == [n.node.node_id for n in _llama(out, similarity_top_k=3)]


async def _ainvoke(out: Path) -> list[Document]:
    return await langchain_grounded.GroundedRetriever(out=out, k=2).ainvoke(QUESTION)


def test_both_retrievers_run_async(out: Path) -> None:
    import asyncio

    docs = asyncio.run(_ainvoke(out))
    nodes = asyncio.run(llama_index_grounded.GroundedRetriever(out, 2).aretrieve(QUESTION))
    assert [d.id for d in docs] == [n.node.node_id for n in nodes] and len(docs) == 2


# -- page filters, applied in the search ------------------------------------------------------------
def test_page_filters_select_in_the_search(out: Path) -> None:
    # text mode: one ranked list, so the filtered order is the unfiltered one restricted (hybrid, the
    # default, normalises the scores over the candidates it fuses, which a page filter changes)
    unfiltered = [n.node.node_id for n in _llama(out, similarity_top_k=50, query=BROAD, mode="text")]
    pages_of = {n.node.node_id: n.node.metadata["pages"] for n in _llama(out, similarity_top_k=50, query=BROAD, mode="text")}
    assert any(len(p) > 1 and 2 in p for p in pages_of.values())  # a chunk crossing into page 2 is among them
    for kwargs, wanted in (({"pages": [2]}, {2}), ({"page_range": (2, 3)}, {2, 3}), ({"pages": range(3, 5)}, {3, 4})):
        nodes = [n.node.node_id for n in _llama(out, similarity_top_k=50, query=BROAD, mode="text", **kwargs)]
        docs = [d.id for d in _lang(out, BROAD, k=50, mode="text", **{k: list(v) if isinstance(v, range) else v for k, v in kwargs.items()})]
        # exactly the chunks touching those pages, in the unfiltered order (the filter runs before the cut)
        assert nodes == docs == [i for i in unfiltered if wanted & set(pages_of[i])], kwargs
    # k=1: the best chunk touching page 2 comes back, though the unfiltered best is on page 1
    assert 2 not in pages_of[unfiltered[0]]
    (best,) = _llama(out, similarity_top_k=1, query=BROAD, pages=[2], mode="text")
    assert 2 in best.node.metadata["pages"] and llama_index_grounded.node_boxes(best)
    (doc,) = _lang(out, BROAD, k=1, page_range=(2, 2), mode="text")
    assert doc.id == best.node.node_id and boxes_from_metadata(doc.metadata, text=doc.page_content)
    assert _llama(out, query=BROAD, pages=[99]) == [] and _lang(out, BROAD, pages=[99]) == []


@pytest.mark.parametrize(
    "kwargs", [{"pages": []}, {"pages": [0]}, {"pages": [2.5]}, {"page_range": (3, 2)}, {"page_range": (0, 2)},
               {"pages": [2], "page_range": (2, 3)}],
)
def test_bad_page_filters_are_refused_when_made(out: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="page"):
        llama_index_grounded.GroundedRetriever(out, **kwargs)
    with pytest.raises(ValueError, match="page"):
        langchain_grounded.GroundedRetriever(out=out, **kwargs)


# -- refusals ---------------------------------------------------------------------------------------
def test_a_missing_or_invalid_out_is_a_typed_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for path, error in ((tmp_path / "missing", IndexNotFoundError), (empty, NotAnIndexError), (a_file, NotAnIndexError)):
        for make in (lambda p: llama_index_grounded.GroundedRetriever(p), lambda p: langchain_grounded.GroundedRetriever(out=p)):
            with pytest.raises(error) as caught:
                make(path)
            assert isinstance(caught.value, GroundedError) and str(path) in str(caught.value)


def test_bad_mode_and_k_are_refused(out: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        llama_index_grounded.GroundedRetriever(out, mode="bm25")
    with pytest.raises(ValueError, match="similarity_top_k"):
        llama_index_grounded.GroundedRetriever(out, similarity_top_k=0)
    with pytest.raises(ValidationError):
        langchain_grounded.GroundedRetriever(out=out, mode="bm25")
    with pytest.raises(ValidationError):
        langchain_grounded.GroundedRetriever(out=out, k=0)


def test_text_mode_never_loads_the_embedding_model(out: Path) -> None:
    code = (
        "import sys\n"
        "from llama_index_grounded import GroundedRetriever as L\n"
        "from langchain_grounded import GroundedRetriever as C\n"
        f"nodes = L({str(out)!r}, 2).retrieve({QUESTION!r})\n"
        f"docs = C(out={str(out)!r}, k=2).invoke({QUESTION!r})\n"
        "assert len(nodes) == len(docs) == 2\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


# -- vector and hybrid (MiniLM) ---------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_vector_and_hybrid_modes(out: Path, rows: dict[str, dict[str, Any]], mode: str) -> None:
    index = SearchIndex(out)  # one open index for both frameworks
    nodes = llama_index_grounded.GroundedRetriever(index, 4, mode).retrieve(QUESTION)
    docs = langchain_grounded.GroundedRetriever(out=index, k=4, mode=mode).invoke(QUESTION)
    assert [n.node.node_id for n in nodes] == [d.id for d in docs] and len(docs) == 4
    assert [n.score for n in nodes] == [d.metadata["score"] for d in docs]
    if mode == "hybrid":
        assert nodes[0].node.metadata["pages"] == [ANSWER_PAGE]
    for node, doc in zip(nodes, docs, strict=True):
        assert llama_index_grounded.node_boxes(node) == boxes_from_metadata(doc.metadata, text=doc.page_content) != []
        _assert_same_record(doc, rows[doc.id or ""])
    filtered = langchain_grounded.GroundedRetriever(out=index, k=3, mode=mode, page_range=(2, 3)).invoke(QUESTION)
    assert len(filtered) == 3 and all({2, 3} & set(d.metadata["pages"]) for d in filtered)


# -- the frameworks' own BM25 retrievers over grounded nodes / Documents ----------------------------
@pytest.fixture(scope="module")
def small_pdf(shared_parses: SharedParses) -> Path:
    pdf = shared(*SMALL_PDF)
    shared_parses.tree(pdf)  # the run's one parse; the readers below load it from that cache
    return pdf


def test_llama_index_bm25_retriever_keeps_the_boxes(small_pdf: Path, shared_parses: SharedParses) -> None:
    from llama_index.retrievers.bm25 import BM25Retriever

    docs = llama_index_grounded.GroundedPDFReader(cache_dir=str(shared_parses.cache.directory)).load_data(small_pdf)
    nodes = llama_index_grounded.GroundedNodeParser(chunk_size=128).get_nodes_from_documents(docs)
    by_id = {n.node_id: n for n in nodes}
    hits = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3).retrieve("table structure recognition")
    assert len(hits) == 3
    for hit in hits:
        boxes = llama_index_grounded.node_boxes(hit)
        assert boxes and boxes == llama_index_grounded.node_boxes(by_id[hit.node.node_id])
        assert read_stored_chunk(hit).geom == boxes


def test_langchain_bm25_retriever_keeps_the_boxes(small_pdf: Path, shared_parses: SharedParses) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community announces its sunset
        from langchain_community.retrievers import BM25Retriever

    docs = langchain_grounded.GroundedPDFLoader(str(small_pdf), chunk_size=128, cache=shared_parses.cache).load()
    by_id = {d.id: d for d in docs}
    hits = BM25Retriever.from_documents(docs, k=3).invoke("table structure recognition")
    assert len(hits) == 3
    for hit in hits:
        boxes = boxes_from_metadata(hit.metadata, text=hit.page_content)
        assert boxes and boxes == boxes_from_metadata(by_id[hit.id].metadata) == read_stored_chunk(hit).geom


# -- the README section runs as written -------------------------------------------------------------
def _readme_examples() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Retrievers over a grounded index"):]
    section = section[: section.index("\n## ", 10)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_examples_run(out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    examples = _readme_examples()
    assert len(examples) == 3
    assert "llama_index_grounded" in examples[0] and "langchain_grounded" in examples[1] and "BM25" in examples[2]
    shutil.copytree(out, tmp_path / "corpus_out")
    guideline = next(Path(r["source_path"]) for r in table_rows(out).to_pylist() if r["source_path"].endswith("guideline.pdf"))
    shutil.copy(guideline, tmp_path / "guideline.pdf")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(tmp_path / "cache"))
    for code in examples:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community announces its sunset
            exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})  # noqa: S102 - the README's own code
    printed = capsys.readouterr().out.splitlines()
    assert "guideline.pdf" in printed[0] and "Capecitabine" in "\n".join(printed)
    assert len([line for line in printed if "ParsingBoundingBox" in line]) >= 3 + 1 + 2, printed
