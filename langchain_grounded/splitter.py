"""``GroundedTextSplitter``: grounded's chunker as a LangChain ``TextSplitter``."""

from __future__ import annotations

import bisect
import copy
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from grounded.chunking.chunker import Chunker
from grounded.errors import SchemaError
from grounded.metadata import text_tree
from grounded.model import Chunk

from .documents import KIND_KEY, SOURCE_KEYS, chunk_document
from .elements import ELEMENT_KEY, iter_blocks, tree_from_payloads

__all__ = ["GroundedTextSplitter"]


class GroundedTextSplitter(TextSplitter):
    """Token-bounded splitting that keeps exact source boxes.

    ``split_documents`` on element Documents of :class:`~langchain_grounded.GroundedPDFLoader`
    (``mode="elements"``) rebuilds each PDF's tree and chunks it with boxes (same chunks, ids and
    boxes as the loader's chunk mode when all elements are passed). Chunk Documents of the loader
    pass through when they fit ``chunk_size``. Any other Document is split as plain text like a
    token splitter: ``chunk_size``/``chunk_overlap`` in tokens of ``tokenizer`` (default
    all-MiniLM-L6-v2) and ``start_index`` from the chunker's offsets (never ``str.find``).
    """

    def __init__(
        self,
        chunk_size: int = 256,
        chunk_overlap: int | float = 0,
        *,
        strategy: str = "recursive",
        tokenizer: Any = None,
        box_mode: str = "auto",
        flat_metadata: bool = False,
        line_boxes: bool = True,
        add_start_index: bool = True,
        **strategy_options: Any,
    ) -> None:
        self.chunker = Chunker(strategy, chunk_size, chunk_overlap, tokenizer=tokenizer, box_mode=box_mode, **strategy_options)
        super().__init__(
            chunk_size=chunk_size,
            chunk_overlap=self.chunker.strategy.overlap,
            length_function=self.chunker.tokenizer.count,
            add_start_index=add_start_index,
        )
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes

    # -- plain text ----------------------------------------------------------------------------
    def _text_chunks(self, text: str) -> list[Chunk]:
        return list(self.chunker.iter_chunks(text_tree(text)))

    def split_text(self, text: str) -> list[str]:
        return [c.content for c in self._text_chunks(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        metadatas = metadatas or [{} for _ in texts]
        out = []
        for text, meta in zip(texts, metadatas, strict=True):
            for chunk in self._text_chunks(text):
                metadata = copy.deepcopy(meta)
                if self._add_start_index:
                    metadata["start_index"] = int(chunk.metadata["start_char"])
                out.append(Document(page_content=chunk.content, metadata=metadata))
        return out

    # -- documents -----------------------------------------------------------------------------
    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        return list(self._iter_split(documents))

    def _iter_split(self, documents: Iterable[Document]) -> Iterator[Document]:
        run: list[Document] = []
        for doc in documents:
            kind = doc.metadata.get(KIND_KEY)
            if kind == "element" and ELEMENT_KEY in doc.metadata:
                if run and _source_key(run[-1]) != _source_key(doc):
                    yield from self._split_elements(run)
                    run = []
                run.append(doc)
                continue
            if run:
                yield from self._split_elements(run)
                run = []
            if kind == "chunk":
                yield from self._split_chunk_document(doc)
            else:
                yield from self.create_documents([doc.page_content], [doc.metadata])
        if run:
            yield from self._split_elements(run)

    def _split_elements(self, docs: list[Document]) -> Iterator[Document]:
        """Re-chunk element Documents of one PDF with boxes; offsets refer to the PDF's document text."""
        docs = sorted(docs, key=lambda d: int(d.metadata.get("start_char", 0)))
        first = docs[0].metadata
        source = {k: first[k] for k in SOURCE_KEYS if k in first}
        root = tree_from_payloads(
            [d.metadata[ELEMENT_KEY] for d in docs],
            {"source": {"path": source.get("source", ""), "sha256": source.get("source_sha256", ""), "name": source.get("file_name", "")},
             "parser": source.get("parser", "")},
        )
        rebuilt = list(iter_blocks(root))
        if [b.node.id for b in rebuilt] != [str(d.metadata.get("element_id")) for d in docs]:
            raise SchemaError(f"{source.get('source', '<documents>')}: element documents do not rebuild into the same blocks")
        rebuilt_starts = [b.start_char for b in rebuilt]
        original_starts = [int(d.metadata["start_char"]) for d in docs]

        def original(pos: int) -> int:
            i = max(0, bisect.bisect_right(rebuilt_starts, pos) - 1)
            return original_starts[i] + pos - rebuilt_starts[i]

        for chunk in self.chunker.iter_chunks(root):
            out = chunk_document(chunk, source, flat=self.flat_metadata, line_spans=self.line_boxes)
            start, end = int(chunk.metadata["start_char"]), int(chunk.metadata["end_char"])
            out.metadata["start_char"] = out.metadata["start_index"] = original(start)
            out.metadata["end_char"] = original(end - 1) + 1 if end > start else original(start)
            if not self._add_start_index:
                out.metadata.pop("start_index")
            yield out

    def _split_chunk_document(self, doc: Document) -> Iterator[Document]:
        """A chunk Document passes through when it fits; a larger one is split as text and its
        parts keep the whole chunk's boxes (a warning says so: load in elements mode instead)."""
        if self._length_function(doc.page_content) <= self._chunk_size:
            yield doc
            return
        warnings.warn(
            f"chunk {doc.id or doc.metadata.get('chunk_id')} has more than {self._chunk_size} tokens; its parts keep "
            "the boxes of the whole chunk. Load with GroundedPDFLoader(mode='elements') for exact boxes per part.",
            UserWarning,
            stacklevel=4,
        )
        base = int(doc.metadata.get("start_char", 0)) - int(doc.metadata.get("body_start", 0))
        for part in self.create_documents([doc.page_content], [dict(doc.metadata)]):
            if "start_index" in part.metadata:
                part.metadata["start_index"] = base + int(part.metadata["start_index"])
            yield part


def _source_key(doc: Document) -> tuple[Any, Any]:
    meta: Mapping[str, Any] = doc.metadata
    return meta.get("source_sha256"), meta.get("source")
