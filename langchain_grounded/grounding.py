"""``GroundingSplitter``: any LangChain splitter, with exact source boxes for every part it makes.

``GroundingSplitter(RecursiveCharacterTextSplitter(...)).split_documents(docs)`` runs the wrapped
splitter on each Document and grounds every part (:mod:`grounded.grounding`) in the parse tree the
Document refers to (``grounded_tree_ref``, set by :class:`~langchain_grounded.GroundedPDFLoader`
in every mode), so the parts carry the boxes, pages and char offsets of their own text. The
Document's ``page_content`` may be any rendering of that PDF - the loader's text, or Markdown of
the same PDF (``pymupdf4llm.to_markdown``) under the loader Document's metadata; pass ``tree=`` for
Documents without a reference.

Part metadata (flat by default, like the loader's): the parent's document-level keys, what the
wrapped splitter adds (``Header 1`` of ``MarkdownHeaderTextSplitter``, ``start_index``), and
``grounded_kind`` ``"chunk"``, ``chunk_id``, ``strategy`` (``grounding:<splitter class>``),
``start_char``/``end_char`` (the grounded span in the document text), ``body_start`` 0, ``pages``,
``page`` (0-based), ``page_start``/``page_end``, ``element_ids``, ``boxes``, ``text_hash`` of the
part's text, ``grounding_status``, ``grounding_score``, ``grounding_reason`` (when there is one)
and ``grounding_spans`` - the fields of the part's chunk record
(:func:`grounded.io.chunk_codec.part_fields`). A part that cannot be grounded (page furniture the parser dropped, text
the PDF does not contain) gets no boxes, offsets or pages, ``grounding_status="refused"`` and the
reason; one :class:`~grounded.metadata.GroundingWarning` per call says how many parts were refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from grounded.errors import ChunkingError
from grounded.integrations import ParseCache, splitter_fingerprint, stable_hash
from grounded.integrations.boxes import ground_parts, warn_refused
from grounded.integrations.profiles import KIND_KEY, LANGCHAIN_GROUNDED_PART_KEYS, SPANS_KEY, page_keys
from grounded.integrations.sources import near_of
from grounded.metadata import flatten_metadata, part_fields, unflatten_metadata
from grounded.model import Chunk, ParsingResult

__all__ = ["GroundingSplitter"]

class GroundingSplitter(TextSplitter):
    """Wraps a LangChain splitter (any ``TextSplitter``, or an object whose ``split_text`` returns
    strings or Documents, like ``MarkdownHeaderTextSplitter``) so its parts carry grounded boxes and
    char offsets. See the module docstring for the metadata.

    ``tree``: the parse tree for Documents that carry no ``grounded_tree_ref``. ``cache``: the
    :class:`~grounded.parsers.cache.ParseCache` (or its directory) the loader used. ``min_score``,
    ``tokenizer`` and ``box_mode`` go to the :class:`~grounded.grounding.Grounder` (one per
    source tree, the four most recent kept). ``flat_metadata`` (default True): lists as compact
    JSON strings; ``line_boxes``: keep each box's line boxes. ``password``: of encrypted source PDFs, so
    grounding can read their page furniture (running headers the tree drops); without it such a
    PDF's furniture is not found (no error).
    """

    def __init__(
        self,
        splitter: Any,
        *,
        tree: ParsingResult | None = None,
        cache: ParseCache | str | Path | None = None,
        min_score: float | None = None,
        tokenizer: Any = None,
        box_mode: str = "auto",
        flat_metadata: bool = True,
        line_boxes: bool = True,
        password: str | None = None,
    ) -> None:
        if not callable(getattr(splitter, "split_text", None)):
            raise ChunkingError(f"GroundingSplitter wraps a splitter with split_text(); got {type(splitter).__name__}")
        if isinstance(splitter, GroundingSplitter):
            raise ChunkingError("the splitter is already a GroundingSplitter")
        size = int(getattr(splitter, "_chunk_size", 4000))
        overlap = min(int(getattr(splitter, "_chunk_overlap", 0)), size)
        super().__init__(chunk_size=size, chunk_overlap=overlap, add_start_index=bool(getattr(splitter, "_add_start_index", False)))
        self.splitter = splitter
        self.tree = tree
        self.cache = cache if isinstance(cache, ParseCache) or cache is None else ParseCache(cache)
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes
        # password: an encrypted source PDF's page furniture is read for grounding (kept private)
        self._options: dict[str, Any] = {"tokenizer": tokenizer, "box_mode": box_mode, "password": password}
        if min_score is not None:
            self._options["min_score"] = min_score
        self.fingerprint = splitter_fingerprint(splitter)
        self._name = type(splitter).__name__

    # -- TextSplitter API -------------------------------------------------------------------------
    def split_text(self, text: str) -> list[str]:
        """The wrapped splitter's texts (no metadata to carry boxes: use :meth:`split_documents`)."""
        return [p.page_content if isinstance(p, Document) else str(p) for p in self.splitter.split_text(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        metadatas = metadatas or [{} for _ in texts]
        return self.split_documents([Document(page_content=t, metadata=dict(m)) for t, m in zip(texts, metadatas, strict=True)])

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        out: list[Document] = []
        refused: list[str] = []
        total = 0
        for doc in documents:
            for part in self._split(doc, refused):
                total += 1
                out.append(part)
        warn_refused(refused, total, "parts")
        return out

    # -- internals --------------------------------------------------------------------------------
    def _parts(self, doc: Document) -> list[Document]:
        if isinstance(self.splitter, TextSplitter):
            return self.splitter.split_documents([doc])
        parts = []
        for p in self.splitter.split_text(doc.page_content):
            if isinstance(p, Document):
                parts.append(Document(page_content=p.page_content, metadata={**doc.metadata, **p.metadata}))
            else:
                parts.append(Document(page_content=str(p), metadata=dict(doc.metadata)))
        return parts

    def _split(self, doc: Document, refused: list[str]) -> Iterator[Document]:
        parent = unflatten_metadata(doc.metadata)
        parts = self._parts(doc)
        texts = [p.page_content for p in parts]
        records = ground_parts(
            parent, texts, tree=self.tree, cache=self.cache, password=self._options["password"], fingerprint=self.fingerprint,
            strategy=f"grounding:{self._name}", refused_key=stable_hash([doc.id, doc.page_content], 24),
            near=near_of(parent, SPANS_KEY), box_mode=self._options["box_mode"], min_score=self._options.get("min_score"),
            tokenizer=self._options["tokenizer"],
        )
        for part, text, (record, g) in zip(parts, texts, records, strict=True):
            if not g.ok:
                refused.append(g.reason)
            meta = self._metadata(part.metadata, parent, record)
            yield Document(page_content=text, metadata=flatten_metadata(meta) if self.flat_metadata else meta, id=record.id)

    def _metadata(self, part_meta: Mapping[str, Any], parent: Mapping[str, Any], record: Chunk) -> dict[str, Any]:
        """The part's own keys (the wrapped splitter's), ``grounded_kind`` and LangChain's ``page``
        (when the part is located), then the chunk fields of its ``record`` (:func:`part_fields`)."""
        own = {k: v for k, v in part_meta.items() if k not in LANGCHAIN_GROUNDED_PART_KEYS}
        if "start_index" in parent and part_meta.get("start_index") == parent["start_index"]:
            own.pop("start_index", None)  # the parent's, copied by the wrapped splitter
        meta: dict[str, Any] = {**own, KIND_KEY: "chunk"}
        if record.start_char is not None:
            meta["page"] = page_keys(record.pages)["page"]
        meta.update(part_fields(record, flat=False, line_spans=self.line_boxes))
        return meta
