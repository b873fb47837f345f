"""What ``GroundedTextSplitter`` (LangChain) does with Documents, framework-free: parts in
(:class:`~grounded.integrations.loader_parts.DocPart`), parts out.

* element parts (the loader's ``mode="elements"``): each PDF's tree rebuilt from them and chunked
  (same chunks, ids and boxes as the loader's chunk mode when all elements are passed);
* a single part (``mode="single"``): its parse tree chunked (the loader's chunks);
* chunk and page parts: one that fits ``max_tokens`` passes through; a larger one is split as text
  and every piece gets the boxes, offsets, pages and token count of its own text; without the tree,
  pieces get no boxes and one :class:`~grounded.io.box_codec.GroundingWarning`;
* anything else (a foreign reader's Document, another splitter's part): split as text and grounded
  in the PDF its metadata names (:func:`~grounded.integrations.boxes.ground_in_view`); plain text that
  names no PDF is split as text only.

``start_index`` (when asked) is LangChain's: the part's offset in its parent's text.
"""

from __future__ import annotations

import bisect
import copy
import json
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..chunking.chunker import Chunker
from ..errors import SchemaError
from ..grounding.blocks import ELEMENT_KEY, iter_blocks, tree_from_payloads
from ..io.box_codec import TEXT_HASH_KEY, GroundingWarning, boxes_from_metadata, text_hash
from ..io.chunk_codec import flatten_metadata, part_fields, unflatten_metadata
from ..io.tree_payload import text_tree
from ..model import Chunk, ParsingBoundingBox
from ..parsers.cache import TREE_REF_KEY, ParseCache
from ..runtime.callers import user_stacklevel
from ..text.ids import chunk_id, source_key, stable_hash, text_key
from .boxes import ground_in_view
from .loader_parts import DocPart, block_index, chunk_part
from .profiles import KIND_KEY, LANGCHAIN_PART_KEYS, LANGCHAIN_SOURCE_KEYS, PAGE_JOINER, SPANS_KEY, page_keys
from .sources import SourceView, document_view, names_source

__all__ = ["PartSplitter"]

_NO_TREE = (
    "re-split parts get no boxes: the parse tree of their PDF is not available here (not in the parse "
    "cache and the PDF is not readable, or the text differs from it). Parts keep their text and token "
    "count only; load with GroundedPDFLoader in this environment (same cache) for exact boxes per part."
)


class PartSplitter:
    """The splitting rules of ``GroundedTextSplitter`` over :class:`DocPart` (see the module
    docstring): ``chunker`` cuts, ``cache`` resolves tree references, ``parse_sources`` lets a
    foreign Document's PDF be parsed (once, through the parse cache) for grounding."""

    def __init__(
        self,
        chunker: Chunker,
        *,
        flat_metadata: bool = True,
        line_boxes: bool = True,
        add_start_index: bool = False,
        cache: ParseCache | None = None,
        parse_sources: bool = True,
    ) -> None:
        self.chunker = chunker
        self.box_mode = chunker.box_mode
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes
        self.add_start_index = add_start_index
        self.cache = cache
        self.parse_sources = parse_sources

    # -- plain text ----------------------------------------------------------------------------
    def text_chunks(self, text: str, key: str | None = None) -> list[Chunk]:
        """Chunks of ``text`` as plain text, trimmed of edge whitespace (a window of a
        token-per-character count may begin or end at a space)."""
        chunks = []
        for chunk in self.chunker.iter_chunks(text_tree(text), source_key=key or text_key(text)):
            content = chunk.content
            lead, trail = len(content) - len(content.lstrip()), len(content) - len(content.rstrip())
            if lead or trail:
                chunk = chunk.replace(
                    content=content.strip(),
                    start_char=(chunk.start_char or 0) + lead,
                    end_char=(chunk.end_char or 0) - trail,
                    token_count=self.chunker.tokenizer.count(content.strip()),
                )
            chunks.append(chunk)
        return chunks

    def create(self, texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None = None) -> Iterator[DocPart]:
        """``create_documents``: metadata naming a PDF makes grounded parts, other text plain parts."""
        for text, meta in zip(texts, metadatas or [{} for _ in texts], strict=True):
            if names_source(meta):
                yield from self.foreign(DocPart(text, dict(meta)))
            else:
                yield from self._plain_parts(text, meta, name=stable_hash(meta))

    def _plain_parts(self, text: str, meta: Mapping[str, Any], *, name: str) -> Iterator[DocPart]:
        for chunk in self.text_chunks(text, text_key(text, name=name)):
            metadata = copy.deepcopy(dict(meta))
            if self.add_start_index:
                metadata["start_index"] = chunk.start_char or 0
            yield DocPart(chunk.content, metadata, chunk.id)

    def foreign(self, doc: DocPart, view: SourceView | None = None, why: str = "") -> Iterator[DocPart]:
        """A Document grounded's loader did not make (LangChain's ``PyMuPDFLoader``/``PyPDFLoader``/
        ``PyMuPDF4LLMLoader``, another splitter's part), or one whose text no longer matches its
        recorded place: its text split by tokens as plain text, each part grounded in the PDF its
        metadata names for its boxes. ``start_index`` is the part's offset in the Document's text.
        Without a PDF: one warning naming the Document and the cause, parts without boxes."""
        meta = doc.metadata
        label = meta.get("source") or meta.get("file_path") or doc.id or "a Document"
        if view is None and not why:
            view, why = document_view(unflatten_metadata(meta), cache=self.cache, parse=self.parse_sources)
        if view is None:
            if names_source(meta):  # plain text (no source named) has no boxes to give
                warnings.warn(f"{label}: its parts get no boxes: {why}", GroundingWarning, stacklevel=user_stacklevel())
            yield from self._plain_parts(doc.text, meta, name=doc.id or stable_hash(meta))
            return
        chunks = self.text_chunks(doc.text, text_key(doc.text, name=doc.id or stable_hash(meta)))
        records = ground_in_view(view, chunks, label=label, what="parts",
                                 box_mode=self.box_mode)
        own = {k: v for k, v in meta.items() if k not in LANGCHAIN_PART_KEYS}
        for grounded in records:
            fields = part_fields(grounded, flat=False, line_spans=self.line_boxes)
            metadata: dict[str, Any] = {**copy.deepcopy(own), **fields}
            if grounded.pages:
                metadata["page"] = page_keys(grounded.pages)["page"]
            elif "page" in meta:
                metadata["page"] = meta["page"]
            if self.add_start_index:
                metadata["start_index"] = grounded.start_char or 0
            if self.flat_metadata:
                metadata = {**metadata, **flatten_metadata({k: v for k, v in metadata.items() if k in fields})}
            yield DocPart(grounded.content, metadata, grounded.id)

    # -- documents -----------------------------------------------------------------------------
    def split(self, documents: Iterable[DocPart]) -> Iterator[DocPart]:
        """``split_documents``: element runs of one PDF together, every other part by its kind."""
        state = {"warned": False}
        run: list[DocPart] = []
        for doc in documents:
            kind = doc.metadata.get(KIND_KEY)
            if kind == "element":
                if run and _source_of(run[-1]) != _source_of(doc):
                    yield from self._split_elements(run, state)
                    run = []
                run.append(doc)
                continue
            if run:
                yield from self._split_elements(run, state)
                run = []
            if kind == "single":
                yield from self._split_single(doc, state)
            elif kind in ("chunk", "page"):
                yield from self._split_grounded(doc, state)
            else:
                yield from self.foreign(doc)
        if run:
            yield from self._split_elements(run, state)

    def _document(self, chunk: Chunk, source: Mapping[str, Any]) -> DocPart:
        return chunk_part(chunk, source, flat=self.flat_metadata, line_spans=self.line_boxes, add_start_index=self.add_start_index)

    def _payloads(self, docs: Sequence[DocPart]) -> list[Any] | None:
        """Each element part's block: its own payload, else from the parse tree (``None`` when a
        part has neither)."""
        if all(ELEMENT_KEY in d.metadata for d in docs):
            return [d.metadata[ELEMENT_KEY] for d in docs]
        view = self._view(docs[0].metadata)
        if view is None:
            return None
        blocks = block_index(view)
        out = []
        for d in docs:
            raw = d.metadata.get(ELEMENT_KEY)
            block = blocks.get(str(d.metadata.get("element_id")))
            if raw is None and (block is None or block.text != d.text):
                return None
            out.append(raw if raw is not None else block.payload_dict())  # type: ignore[union-attr]
        return out

    def _split_elements(self, docs: list[DocPart], state: dict[str, bool]) -> Iterator[DocPart]:
        """Re-chunk element parts of one PDF with boxes; offsets refer to the PDF's document text."""
        docs = sorted(docs, key=lambda d: int(d.metadata.get("start_char", 0)))
        payloads = self._payloads(docs)
        if payloads is None:
            view = self._view(docs[0].metadata)
            if view is not None:  # parts of elements (another splitter ran first): grounded one by one
                for doc in docs:
                    yield from self.foreign(doc, view)
                return
            self._warn_no_tree(state)
            for doc in docs:
                yield from self._parts_without_tree(doc)
            return
        first = docs[0].metadata
        source = {k: first[k] for k in LANGCHAIN_SOURCE_KEYS if k in first}
        root = tree_from_payloads(
            payloads,
            {"source": {"path": source.get("file_path", ""), "sha256": source.get("source_sha256", ""), "name": source.get("file_name", "")},
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

        key = source_key(root.metadata, None) if source.get("source_sha256") else text_key("".join(d.text for d in docs))
        for chunk in self.chunker.iter_chunks(root, source_key=key):
            start, end = chunk.start_char or 0, chunk.end_char or 0
            start, end = original(start), original(end - 1) + 1 if end > start else original(start)
            chunk = chunk.replace(id=chunk_id(key, self.chunker.fingerprint, start, end), start_char=start, end_char=end)
            yield self._document(chunk, source)

    def _split_single(self, doc: DocPart, state: dict[str, bool]) -> Iterator[DocPart]:
        """A whole-PDF part: the loader's chunks, from its parse tree."""
        view = self._view(doc.metadata)
        if view is not None and view.text != doc.text:
            yield from self.foreign(doc, view)
            return
        if view is None:
            self._warn_no_tree(state)
            yield from self._parts_without_tree(doc)
            return
        meta = unflatten_metadata(doc.metadata)
        inherited = {k: v for k, v in meta.items() if k not in LANGCHAIN_PART_KEYS}
        for chunk in self.chunker.iter_chunks(view.root):
            yield self._document(chunk, inherited)

    # -- chunk / page parts: pieces with the boxes of their own text ---------------------------
    def _view(self, metadata: Mapping[str, Any]) -> SourceView | None:
        """The view of the parse tree a grounded part refers to (None without one)."""
        if not metadata.get(TREE_REF_KEY):
            return None
        view, _ = document_view(metadata, cache=self.cache)
        return view

    def _warn_no_tree(self, state: dict[str, bool]) -> None:
        if not state["warned"]:
            state["warned"] = True
            warnings.warn(_NO_TREE, GroundingWarning, stacklevel=user_stacklevel())

    def _split_grounded(self, doc: DocPart, state: dict[str, bool]) -> Iterator[DocPart]:
        text = doc.text
        recorded = doc.metadata.get(TEXT_HASH_KEY)
        fresh = recorded is None or str(recorded) == text_hash(text)
        if fresh and self.chunker.tokenizer.count(text) <= self.chunker.max_tokens:
            if self.add_start_index and "start_index" not in doc.metadata:  # the whole parent: at 0 of its text
                doc = DocPart(text, {**doc.metadata, "start_index": 0}, doc.id)
            yield doc
            return
        meta = unflatten_metadata(doc.metadata)
        segments = _segments(meta, text)
        view = self._view(doc.metadata)
        if view is None:
            self._warn_no_tree(state)
            yield from self._parts_without_tree(doc)
            return
        if segments is None or any(view.text[d : d + n] != text[t : t + n] for t, d, n in segments):
            yield from self.foreign(doc, view)  # edited or re-split: its parts are grounded
            return
        inherited = {k: v for k, v in meta.items() if k not in LANGCHAIN_PART_KEYS}
        body_start = int(meta.get("body_start", 0) or 0) if meta.get(KIND_KEY) == "chunk" else 0
        heading_boxes = [b for b in boxes_from_metadata(meta) if b.is_heading] if body_start else []
        for part in self.text_chunks(text, _part_key(doc)):
            own = part
            ps, pe = own.start_char or 0, own.end_char or 0
            ranges = [(d + max(ps, t) - t, d + min(pe, t + n) - t) for t, d, n in segments if max(ps, t) < min(pe, t + n)]
            geom: list[ParsingBoundingBox] = list(heading_boxes) if ps < body_start else []
            for lo, hi in ranges:
                geom.extend(view.boxes(lo, hi, tokenizer=self.chunker.tokenizer, box_mode=self.box_mode))
            yield self._part_document(part, inherited, geom, ranges, meta, body_start)

    def _part_document(
        self,
        part: Chunk,
        inherited: Mapping[str, Any],
        geom: list[ParsingBoundingBox],
        ranges: Sequence[tuple[int, int]],
        parent: Mapping[str, Any],
        parent_body_start: int,
    ) -> DocPart:
        own = part
        ps = own.start_char or 0
        start = ranges[0][0] if ranges else int(parent.get("start_char", 0) or 0)
        record = Chunk.of_boxes(
            part.id,
            part.content,
            geom,
            strategy=self.chunker.strategy.name,
            token_count=own.token_count,
            start_char=start,
            end_char=ranges[-1][1] if ranges else start,
            body_start=min(max(parent_body_start - ps, 0), len(part.content)),
            heading_ids=[str(h) for h in parent.get("heading_ids") or []] if ps < parent_body_start else [],
        )
        metadata: dict[str, Any] = {**inherited, KIND_KEY: "chunk", "page": page_keys(record.pages)["page"]}
        metadata.update(part_fields(record, flat=False, line_spans=self.line_boxes))
        if self.add_start_index:  # LangChain's meaning: where the part starts in the parent's text
            metadata["start_index"] = ps
        return DocPart(part.content, flatten_metadata(metadata) if self.flat_metadata else metadata, part.id)

    def _parts_without_tree(self, doc: DocPart) -> Iterator[DocPart]:
        """Parts of a grounded Document whose tree is missing: text, token count and the parent's
        document-level keys; no boxes, offsets or pages (they would be the parent's)."""
        meta = unflatten_metadata(doc.metadata)
        inherited = {k: v for k, v in meta.items() if k not in LANGCHAIN_PART_KEYS and k not in ("section", "heading_path")}
        for part in self.text_chunks(doc.text, _part_key(doc)):
            record = Chunk(
                part.id, part.content, strategy=self.chunker.strategy.name, token_count=part.token_count
            )  # not located (start_char None): no place fields
            metadata: dict[str, Any] = {**inherited, KIND_KEY: "chunk", **part_fields(record, flat=False)}
            yield DocPart(part.content, flatten_metadata(metadata) if self.flat_metadata else metadata, part.id)


def _segments(meta: Mapping[str, Any], text: str) -> list[tuple[int, int, int]] | None:
    """Where a grounded Document's text lies in the document text: ``(text offset, document offset,
    length)`` pieces (a chunk: its body; a page: its runs), or ``None`` when not recorded."""
    kind = meta.get(KIND_KEY)
    try:
        if kind == "chunk":
            body_start = int(meta.get("body_start", 0) or 0)
            start, end = int(meta["start_char"]), int(meta["end_char"])
            return [(body_start, start, end - start)] if len(text) - body_start == end - start else None
        if kind == "element":  # a block of the document text: its text is that span
            start, end = int(meta["start_char"]), int(meta["end_char"])
            return [(0, start, end - start)] if len(text) == end - start else None
        if kind == "page":
            raw = meta.get(SPANS_KEY)
            spans = json.loads(raw) if isinstance(raw, str) else raw
            out: list[tuple[int, int, int]] = []
            pos = 0
            for s, e in spans or ():
                out.append((pos, int(s), int(e) - int(s)))
                pos += int(e) - int(s) + len(PAGE_JOINER)
            return out
    except (KeyError, TypeError, ValueError):
        return None
    return None


def _part_key(doc: DocPart) -> str:
    """Source key of the parts of one parent: the PDF (sha256 + parser) and the parent's identity,
    so parts of two parents never share an id."""
    meta = doc.metadata
    parent = doc.id or str(meta.get("chunk_id") or "") or text_key(doc.text, name=stable_hash(meta))
    sha = str(meta.get("source_sha256") or "")
    return f"{sha}:{meta.get('parser', '')}:part-of:{parent}" if sha else text_key(doc.text, name=parent)


def _source_of(doc: DocPart) -> tuple[Any, Any]:
    meta: Mapping[str, Any] = doc.metadata
    return meta.get("source_sha256"), meta.get("source")
