"""``GroundedTextSplitter``: grounded's chunker as a LangChain ``TextSplitter``."""

from __future__ import annotations

import bisect
import copy
import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from grounded.errors import ChunkingError, SchemaError
from grounded.grounding.adapter import (
    ELEMENT_KEY,
    OFFLINE_ENCODINGS,
    TEXT_HASH_KEY,
    TREE_REF_KEY,
    CallableTokenizer,
    Chunker,
    ChunkingStrategy,
    GroundingWarning,
    ParseCache,
    SourceView,
    Tokenizer,
    boxes_from_metadata,
    build_chunker,
    chunk_id,
    document_view,
    flatten_metadata,
    ground_in_view,
    iter_blocks,
    names_source,
    part_fields,
    resplit_keys,
    source_key,
    stable_hash,
    text_hash,
    text_key,
    text_tree,
    tree_from_payloads,
    unflatten_metadata,
)
from grounded.model import Chunk, ChunkRecord, ParsingBoundingBox

from .documents import KIND_KEY, PAGE_JOINER, SOURCE_KEYS, SPANS_KEY, block_index, chunk_document, page_keys

__all__ = ["GroundedTextSplitter"]

#: metadata keys a split recomputes for every part (everything else is inherited from the parent)
_PART_KEYS = frozenset(
    {
        # the field table's keys a part does not inherit (its own chunk writes them anew)
        *resplit_keys("recompute"), *resplit_keys("drop"), "strategy", "strategy_params", "heading_ids",
        # LangChain's and the element documents' own keys
        KIND_KEY, "page", "start_index", SPANS_KEY, "element_id", "element_type", ELEMENT_KEY,
    }
)
_NO_TREE = (
    "re-split parts get no boxes: the parse tree of their PDF is not available here (not in the parse "
    "cache and the PDF is not readable, or the text differs from it). Parts keep their text and token "
    "count only; load with GroundedPDFLoader in this environment (same cache) for exact boxes per part."
)
_LENGTH_FUNCTION = (
    "length_function cannot drive GroundedTextSplitter: chunks are cut at token boundaries and every "
    "token's character offsets give exact start_index, char spans and boxes, while a length function "
    "only counts. Pass tokenizer= (a tokenizers.Tokenizer, a Hugging Face fast tokenizer, "
    "'cl100k_base', a tokenizer.json path or a callable returning token spans), or use "
    "GroundedTextSplitter.from_huggingface_tokenizer / from_tiktoken_encoder; length_function=len "
    "splits by characters."
)


#: GroundedTextSplitter's own keywords (named in the error for an unknown one)
_KEYWORDS = ("chunk_size", "chunk_overlap", "strategy", "tokenizer", "box_mode", "flat_metadata", "line_boxes",
             "add_start_index", "length_function", "keep_separator", "strip_whitespace", "cache", "parse_sources")


def _characters(text: str) -> list[tuple[int, int]]:
    """Every character is one token (``length_function=len``). A whitespace character is an empty
    token right after the text before it (before the first word: where the first word begins), so
    chunks never end - and, cut after a delimiter, never begin - with whitespace."""
    out: list[tuple[int, int]] = []
    stripped = text.lstrip()
    last = len(text) - len(stripped)  # leading whitespace: empty tokens where the text begins
    for i, char in enumerate(text):
        if char.isspace():
            out.append((last, last))
        else:
            out.append((i, i + 1))
            last = i + 1
    return out


def _tokenizer_for(length_function: Callable[[str], int] | None, tokenizer: Any) -> Any:
    if length_function is None:
        return tokenizer
    if tokenizer is not None:
        raise ChunkingError("pass tokenizer= or length_function=, not both (the tokenizer counts the length)")
    if length_function is len:
        return CallableTokenizer(_characters, name="characters")
    owner = getattr(length_function, "__self__", None)
    if isinstance(owner, Tokenizer) and getattr(length_function, "__name__", "") == "count":
        return owner
    raise ChunkingError(_LENGTH_FUNCTION)


def _check_base_keywords(keep_separator: Any, strip_whitespace: Any) -> None:
    if keep_separator not in (True, "end"):
        raise ChunkingError(
            f"keep_separator={keep_separator!r} cannot apply: grounded chunks are exact slices of the source text "
            "(exact offsets and boxes), so a separator is never dropped or moved; it stays at the end of the chunk "
            "it closes (keep_separator=True or 'end')"
        )
    if strip_whitespace is not True:
        raise ChunkingError(
            "strip_whitespace=False cannot apply: chunks are token spans of the source text and whitespace at "
            "their edges belongs to no token, so it is never part of a chunk"
        )


class GroundedTextSplitter(TextSplitter):
    """Token-bounded splitting that keeps exact source boxes.

    What ``split_documents`` does with each Document of :class:`~langchain_grounded.GroundedPDFLoader`:

    * element Documents (``mode="elements"``): rebuilds each PDF's tree and chunks it (same chunks,
      ids and boxes as the loader's chunk mode when all elements are passed);
    * a single Document (``mode="single"``): chunks its parse tree (found through
      ``grounded_tree_ref``) - again the loader's chunks;
    * chunk and page Documents: a Document that fits ``chunk_size`` passes through; a larger one is
      split as text and every part gets the boxes, char offsets, pages and token count of its own
      text (from the parse tree); without the tree, parts get no boxes and one
      :class:`~grounded.metadata.GroundingWarning` - never their parent's boxes.

    Any other Document is split as plain text: ``chunk_size``/``chunk_overlap`` in tokens of
    ``tokenizer`` (default all-MiniLM-L6-v2). Every part has a deterministic id from its source
    (PDF sha256 + parser, or the parent Document), the chunking configuration and its char span.

    LangChain's keywords: ``add_start_index`` (default ``False``: ``start_index`` only when asked;
    as in LangChain, the part's offset in its parent Document's ``page_content`` - ``start_char``
    keeps its offset in the whole document text - never found with ``str.find``);
    ``length_function=len`` splits by characters (``chunk_size`` characters at most), another
    length function is refused (see
    :meth:`from_huggingface_tokenizer` / :meth:`from_tiktoken_encoder`); ``keep_separator`` must be
    ``True``/``"end"`` and ``strip_whitespace`` ``True`` (what exact slices of the source do).
    ``strategy`` is a strategy name, a strategy object or a :class:`~grounded.chunking.Chunker`.
    Metadata is flat (scalars and compact JSON strings) unless ``flat_metadata=False``.
    """

    def __init__(
        self,
        chunk_size: int | None = None,
        chunk_overlap: int | float = 0,
        *,
        strategy: str | ChunkingStrategy | Chunker = "recursive",
        tokenizer: Any = None,
        box_mode: str = "auto",
        flat_metadata: bool = True,
        line_boxes: bool = True,
        add_start_index: bool = False,
        length_function: Callable[[str], int] | None = None,
        keep_separator: bool | Literal["start", "end"] = True,
        strip_whitespace: bool = True,
        cache: ParseCache | str | Path | None = None,
        parse_sources: bool = True,
        **strategy_options: Any,
    ) -> None:
        _check_base_keywords(keep_separator, strip_whitespace)
        tokenizer = _tokenizer_for(length_function, tokenizer)
        self.chunker = build_chunker(
            strategy, chunk_size, chunk_overlap, tokenizer=tokenizer, box_mode=box_mode, options=strategy_options,
            owner="GroundedTextSplitter", keywords=_KEYWORDS,
        )
        super().__init__(
            chunk_size=self.chunker.max_tokens,
            chunk_overlap=self.chunker.strategy.overlap,
            length_function=self.chunker.tokenizer.count,
            keep_separator="end",
            add_start_index=add_start_index,
            strip_whitespace=True,
        )
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes
        self.box_mode = self.chunker.box_mode
        self.cache = cache if isinstance(cache, ParseCache) or cache is None else ParseCache(cache)
        self.parse_sources = parse_sources
        from grounded.grounding.adapter import warn_long_chunk_size  # MiniLM embeds 256 tokens: say so, once

        warn_long_chunk_size(type(self).__name__, self.chunker.max_tokens, self.chunker.tokenizer)

    # -- LangChain's alternative constructors --------------------------------------------------
    @classmethod
    def from_huggingface_tokenizer(cls, tokenizer: Any, **kwargs: Any) -> GroundedTextSplitter:
        """Count (and cut) in tokens of a Hugging Face tokenizer: a ``transformers`` fast tokenizer
        (``PreTrainedTokenizerFast``) or a ``tokenizers.Tokenizer``. Slow (Python) tokenizers give
        no character offsets and are refused."""
        fast = getattr(tokenizer, "backend_tokenizer", None) is not None
        raw = type(tokenizer).__module__.startswith("tokenizers") and hasattr(tokenizer, "encode_batch")
        if not (fast or raw):
            raise ChunkingError(
                f"{type(tokenizer).__name__} is not a fast tokenizer: GroundedTextSplitter needs each token's character "
                "offsets (load it with use_fast=True, or pass its tokenizers.Tokenizer)"
            )
        if "length_function" in kwargs:
            raise ChunkingError("from_huggingface_tokenizer counts with the tokenizer: do not pass length_function")
        return cls(tokenizer=tokenizer, **kwargs)

    @classmethod
    def from_tiktoken_encoder(
        cls,
        encoding_name: str = "cl100k_base",
        model_name: str | None = None,
        allowed_special: Literal["all"] | Iterable[str] | None = None,
        disallowed_special: Literal["all"] | Iterable[str] = "all",
        **kwargs: Any,
    ) -> GroundedTextSplitter:
        """Count in tokens of an OpenAI encoding, offline through ``bpe-openai`` (``cl100k_base``
        or ``o200k_base``; ``model_name`` such as ``"gpt-4o"`` picks its encoding). The default is
        ``cl100k_base`` (LangChain's ``gpt2`` would need a download). Special-token text is counted
        as ordinary text, so ``allowed_special`` must stay unset."""
        if allowed_special:
            raise ChunkingError("allowed_special cannot apply: special-token text is split and counted as ordinary text")
        del disallowed_special  # ordinary text either way
        if "length_function" in kwargs or "tokenizer" in kwargs:
            raise ChunkingError("from_tiktoken_encoder counts with the encoding: do not pass length_function or tokenizer")
        if model_name is not None:
            try:
                import bpe_openai
            except ImportError as exc:  # pragma: no cover - the tiktoken extra
                raise ChunkingError("from_tiktoken_encoder needs bpe-openai: pip install 'grounded[tiktoken]'") from exc
            try:
                encoding_name = str(bpe_openai.encoding_name_for_model(model_name))
            except Exception as exc:  # noqa: BLE001 - bpe-openai's own error types
                raise ChunkingError(f"unknown model {model_name!r} for an OpenAI encoding ({exc})") from exc
        if encoding_name not in OFFLINE_ENCODINGS:
            raise ChunkingError(
                f"encoding {encoding_name!r} is not available offline (bpe-openai ships {', '.join(OFFLINE_ENCODINGS)}); "
                "pass tokenizer=<a tiktoken Encoding object> to use another one"
            )
        return cls(tokenizer=encoding_name, **kwargs)

    # -- plain text ----------------------------------------------------------------------------
    def _text_chunks(self, text: str, key: str | None = None) -> list[Chunk]:
        chunks = []
        for chunk in self.chunker.iter_chunks(text_tree(text), source_key=key or text_key(text)):
            content = chunk.content  # a window of a token-per-character count may begin or end at a space
            lead, trail = len(content) - len(content.lstrip()), len(content) - len(content.rstrip())
            if lead or trail:
                record = ChunkRecord.from_chunk(chunk)
                chunk = record.replace(
                    content=content.strip(),
                    start_char=(record.start_char or 0) + lead,
                    end_char=(record.end_char or 0) - trail,
                    token_count=self.chunker.tokenizer.count(content.strip()),
                ).to_chunk()
            chunks.append(chunk)
        return chunks

    def split_text(self, text: str) -> list[str]:
        return [c.content for c in self._text_chunks(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        metadatas = metadatas or [{} for _ in texts]
        out: list[Document] = []
        for text, meta in zip(texts, metadatas, strict=True):  # metadata naming a PDF: grounded parts
            out.extend(self._split_foreign(Document(page_content=text, metadata=meta)) if names_source(meta)
                       else self._plain_parts(text, meta, name=stable_hash(meta)))
        return out

    def _plain_parts(self, text: str, meta: Mapping[str, Any], *, name: str) -> Iterator[Document]:
        for chunk in self._text_chunks(text, text_key(text, name=name)):
            metadata = copy.deepcopy(dict(meta))
            if self._add_start_index:
                metadata["start_index"] = ChunkRecord.from_chunk(chunk).start_char or 0
            yield Document(page_content=chunk.content, metadata=metadata, id=chunk.id)

    def _split_foreign(self, doc: Document, view: SourceView | None = None, why: str = "") -> Iterator[Document]:
        """A Document grounded's loader did not make (LangChain's ``PyMuPDFLoader``/``PyPDFLoader``/
        ``PyMuPDF4LLMLoader``, another splitter's part), or one whose text no longer matches its
        recorded place: its text split by tokens as plain text, each part grounded in the PDF its
        metadata names (parsed once, kept in the parse cache) for its boxes. ``start_index`` is the
        part's offset in the Document's ``page_content``. Without a PDF: one warning naming the
        Document and the cause, parts without boxes."""
        meta = doc.metadata
        label = meta.get("source") or meta.get("file_path") or doc.id or "a Document"
        if view is None and not why:
            view, why = document_view(unflatten_metadata(meta), cache=self.cache, parse=self.parse_sources)
        if view is None:
            if names_source(meta):  # plain text (no source named) has no boxes to give
                warnings.warn(f"{label}: its parts get no boxes: {why}", GroundingWarning, stacklevel=4)
            yield from self._plain_parts(doc.page_content, meta, name=doc.id or stable_hash(meta))
            return
        chunks = self._text_chunks(doc.page_content, text_key(doc.page_content, name=doc.id or stable_hash(meta)))
        records = ground_in_view(view, [ChunkRecord.from_chunk(c) for c in chunks], label=label, what="parts",
                                 box_mode=self.box_mode)
        own = {k: v for k, v in meta.items() if k not in _PART_KEYS}
        for grounded in records:
            fields = part_fields(grounded, flat=False, line_spans=self.line_boxes)
            metadata: dict[str, Any] = {**copy.deepcopy(own), **fields}
            if grounded.pages:
                metadata["page"] = page_keys(grounded.pages)["page"]
            elif "page" in meta:
                metadata["page"] = meta["page"]
            if self._add_start_index:
                metadata["start_index"] = grounded.start_char or 0
            if self.flat_metadata:
                metadata = {**metadata, **flatten_metadata({k: v for k, v in metadata.items() if k in fields})}
            yield Document(page_content=grounded.content, metadata=metadata, id=grounded.id)

    # -- documents -----------------------------------------------------------------------------
    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        return list(self._iter_split(documents))

    def _iter_split(self, documents: Iterable[Document]) -> Iterator[Document]:
        state = {"warned": False}
        run: list[Document] = []
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
                yield from self._split_foreign(doc)
        if run:
            yield from self._split_elements(run, state)

    def _document(self, chunk: Chunk, source: Mapping[str, Any]) -> Document:
        return chunk_document(
            chunk, source, flat=self.flat_metadata, line_spans=self.line_boxes, add_start_index=self._add_start_index
        )

    def _payloads(self, docs: Sequence[Document]) -> list[Any] | None:
        """Each element Document's block: its own payload, else from the parse tree (``None``
        when a Document has neither)."""
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
            if raw is None and (block is None or block.text != d.page_content):
                return None
            out.append(raw if raw is not None else block.payload_dict())  # type: ignore[union-attr]
        return out

    def _split_elements(self, docs: list[Document], state: dict[str, bool]) -> Iterator[Document]:
        """Re-chunk element Documents of one PDF with boxes; offsets refer to the PDF's document text."""
        docs = sorted(docs, key=lambda d: int(d.metadata.get("start_char", 0)))
        payloads = self._payloads(docs)
        if payloads is None:
            view = self._view(docs[0].metadata)
            if view is not None:  # parts of elements (another splitter ran first): grounded one by one
                for doc in docs:
                    yield from self._split_foreign(doc, view)
                return
            self._warn_no_tree(state)
            for doc in docs:
                yield from self._parts_without_tree(doc)
            return
        first = docs[0].metadata
        source = {k: first[k] for k in SOURCE_KEYS if k in first}
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

        key = source_key(root.metadata, None) if source.get("source_sha256") else text_key("".join(d.page_content for d in docs))
        for chunk in self.chunker.iter_chunks(root, source_key=key):
            record = ChunkRecord.from_chunk(chunk)
            start, end = record.start_char or 0, record.end_char or 0
            start, end = original(start), original(end - 1) + 1 if end > start else original(start)
            chunk = record.replace(id=chunk_id(key, self.chunker.fingerprint, start, end), start_char=start, end_char=end).to_chunk()
            yield self._document(chunk, source)

    def _split_single(self, doc: Document, state: dict[str, bool]) -> Iterator[Document]:
        """A whole-PDF Document: the loader's chunks, from its parse tree."""
        view = self._view(doc.metadata)
        if view is not None and view.text != doc.page_content:
            yield from self._split_foreign(doc, view)
            return
        if view is None:
            self._warn_no_tree(state)
            yield from self._parts_without_tree(doc)
            return
        meta = unflatten_metadata(doc.metadata)
        inherited = {k: v for k, v in meta.items() if k not in _PART_KEYS}
        for chunk in self.chunker.iter_chunks(view.root):
            yield self._document(chunk, inherited)

    # -- chunk / page Documents: parts with the boxes of their own text ------------------------
    def _view(self, metadata: Mapping[str, Any]) -> SourceView | None:
        """The view of the parse tree a grounded Document refers to (None without one)."""
        if not metadata.get(TREE_REF_KEY):
            return None
        view, _ = document_view(metadata, cache=self.cache)
        return view

    def _warn_no_tree(self, state: dict[str, bool]) -> None:
        if not state["warned"]:
            state["warned"] = True
            warnings.warn(_NO_TREE, GroundingWarning, stacklevel=5)

    def _split_grounded(self, doc: Document, state: dict[str, bool]) -> Iterator[Document]:
        text = doc.page_content
        recorded = doc.metadata.get(TEXT_HASH_KEY)
        fresh = recorded is None or str(recorded) == text_hash(text)
        if fresh and self._length_function(text) <= self._chunk_size:
            if self._add_start_index and "start_index" not in doc.metadata:  # the whole parent: at 0 of its text
                doc = Document(page_content=text, metadata={**doc.metadata, "start_index": 0}, id=doc.id)
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
            yield from self._split_foreign(doc, view)  # edited or re-split: its parts are grounded
            return
        inherited = {k: v for k, v in meta.items() if k not in _PART_KEYS}
        body_start = int(meta.get("body_start", 0) or 0) if meta.get(KIND_KEY) == "chunk" else 0
        heading_boxes = [b for b in boxes_from_metadata(meta) if b.is_heading] if body_start else []
        for part in self._text_chunks(text, _part_key(doc)):
            own = ChunkRecord.from_chunk(part)
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
    ) -> Document:
        own = ChunkRecord.from_chunk(part)
        ps = own.start_char or 0
        start = ranges[0][0] if ranges else int(parent.get("start_char", 0) or 0)
        record = ChunkRecord.of_boxes(
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
        if self._add_start_index:  # LangChain's meaning: where the part starts in the parent's page_content
            metadata["start_index"] = ps
        return Document(page_content=part.content, metadata=flatten_metadata(metadata) if self.flat_metadata else metadata, id=part.id)

    def _parts_without_tree(self, doc: Document) -> Iterator[Document]:
        """Parts of a grounded Document whose tree is missing: text, token count and the parent's
        document-level keys; no boxes, offsets or pages (they would be the parent's)."""
        meta = unflatten_metadata(doc.metadata)
        inherited = {k: v for k, v in meta.items() if k not in _PART_KEYS and k not in ("section", "heading_path")}
        for part in self._text_chunks(doc.page_content, _part_key(doc)):
            record = ChunkRecord(
                part.id, part.content, strategy=self.chunker.strategy.name, token_count=ChunkRecord.from_chunk(part).token_count
            )  # not located (start_char None): no place fields
            metadata: dict[str, Any] = {**inherited, KIND_KEY: "chunk", **part_fields(record, flat=False)}
            yield Document(page_content=part.content, metadata=flatten_metadata(metadata) if self.flat_metadata else metadata, id=part.id)


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


def _part_key(doc: Document) -> str:
    """Source key of the parts of one parent: the PDF (sha256 + parser) and the parent's identity,
    so parts of two parents never share an id."""
    meta = doc.metadata
    parent = doc.id or str(meta.get("chunk_id") or "") or text_key(doc.page_content, name=stable_hash(meta))
    sha = str(meta.get("source_sha256") or "")
    return f"{sha}:{meta.get('parser', '')}:part-of:{parent}" if sha else text_key(doc.page_content, name=parent)


def _source_of(doc: Document) -> tuple[Any, Any]:
    meta: Mapping[str, Any] = doc.metadata
    return meta.get("source_sha256"), meta.get("source")
