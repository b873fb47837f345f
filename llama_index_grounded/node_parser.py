"""``GroundedNodeParser``: grounded's chunker as a LlamaIndex ``NodeParser``."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from llama_index.core.bridge.pydantic import (
    Field,
    PrivateAttr,
    field_serializer,
    model_serializer,
    model_validator,
)
from llama_index.core.node_parser.interface import NodeParser
from llama_index.core.node_parser.node_utils import default_id_func
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.utils import get_tqdm_iterable
from pydantic import AliasChoices, ConfigDict, SerializationInfo, SerializerFunctionWrapHandler

from grounded.errors import ChunkingError
from grounded.grounding.adapter import (
    BOX_MODES,
    PAGE_KEY,
    PARSER_OPTIONS_KEY,
    STORED_KEYS,
    TREE_KEY,
    TREE_REF_KEY,
    Chunker,
    ChunkingStrategy,
    GroundingWarning,
    SourceView,
    Tokenizer,
    build_chunker,
    chunk_id,
    chunk_metadata,
    document_view,
    embed_hidden_keys,
    ground_in_view,
    llm_hidden_keys,
    names_source,
    repeat_id,
    source_info,
    source_view,
    strategy_class,
    text_key,
    text_tree,
)
from grounded.model import Chunk, ChunkRecord, ParsingResult

__all__ = ["GroundedNodeParser", "GroundedTextNode"]

HeadingContext = Literal["text", "metadata", "none"]

#: metadata keys a chunk node gets from its chunk (replaced, not inherited, when a node is re-split):
#: the field table's keys plus LlamaIndex's page keys
CHUNK_KEYS = frozenset({*STORED_KEYS, "page", "page_label"})
#: machine payload: never shown to an embedder or an LLM (the field table decides for chunk keys)
_SOURCE_HIDDEN = (TREE_KEY, TREE_REF_KEY, PARSER_OPTIONS_KEY, PAGE_KEY, "source_sha256", "file_path", "total_pages", "parser", "page")
_EMBED_HIDDEN = (*embed_hidden_keys(), *_SOURCE_HIDDEN)
_LLM_HIDDEN = (*llm_hidden_keys(), *_SOURCE_HIDDEN)
_ALIASES = {"chunk_size": "max_tokens", "chunk_overlap": "overlap"}
#: keys a node does not repeat: the sha256 and parser are in the tree reference, the rest stays on
#: the source Document
_NODE_DROPPED = (
    "source_sha256", "parser",
    "creator", "producer", "subject", "keywords", "creationdate", "moddate",
)
#: TextNode fields a chunk node leaves out of its serialized form while they hold TextNode's
#: declared default (reading it back as a TextNode restores exactly that value)
_DEFAULTED_FIELDS = ("embedding", "metadata_template", "metadata_separator", "mimetype", "text_template")
#: RelatedNodeInfo's defaulted fields and their defaults (left out of a serialized relationship)
_RELATED_DEFAULTS = {
    name: field.get_default(call_default_factory=True)
    for name, field in RelatedNodeInfo.model_fields.items()
    if not field.is_required()
}


class GroundedTextNode(TextNode):
    """The node :class:`GroundedNodeParser` makes: a ``TextNode`` (same ``class_name``, so every
    store, docstore and cache reads it back as a plain ``TextNode`` equal to it) whose serialized
    form (``model_dump``, ``to_dict``/``to_json``, hence what a vector store, docstore or ingestion
    cache persists) leaves out the fields in :data:`_DEFAULTED_FIELDS` while they hold TextNode's
    default: about 150 bytes a node that LlamaIndex would otherwise write per node (three times in
    Chroma). Each relationship (SOURCE, PREVIOUS/NEXT, ...) is written without the
    ``RelatedNodeInfo`` fields that hold their defaults (``node_type`` None, empty ``metadata``,
    ``hash`` None) and without its class name: ``{"node_id": ...}`` for a neighbour (the relationships
    of a linked node take about 210 bytes instead of 430). Metadata, excluded keys, relationships, offsets and
    text are always written, so what the embedder and the LLM see
    (``get_content(MetadataMode.EMBED/LLM)``) is the same after the round trip; a field set to
    another value (a custom ``metadata_template``, a SOURCE's type, metadata or hash) is written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # TextNode's own signature: without it type checkers derive one from the field aliases
        super().__init__(*args, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return TextNode.class_name()

    @model_serializer(mode="wrap")
    def custom_model_dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        data = handler(self)
        for name in _DEFAULTED_FIELDS:
            if name in data and getattr(self, name) == TextNode.model_fields[name].default:
                del data[name]
        relationships = data.get("relationships")
        if isinstance(relationships, dict):
            data["relationships"] = {
                key: [_compact_related(r) for r in value] if isinstance(value, list) else _compact_related(value)
                for key, value in relationships.items()
            }
        data["class_name"] = self.class_name()
        return data


def _compact_related(entry: Any) -> Any:
    """A serialized ``RelatedNodeInfo`` without the fields that hold RelatedNodeInfo's defaults
    (``node_type`` None, empty ``metadata``, ``hash`` None) and without its constant ``class_name``
    (a relationship is read back as a RelatedNodeInfo by its field type, whatever the key says):
    reading it back restores exactly those values. A set field (the SOURCE node type, a neighbour's
    metadata or hash) is written."""
    if not isinstance(entry, dict):
        return entry
    out = {
        name: value for name, value in entry.items()
        if name not in _RELATED_DEFAULTS or value != _RELATED_DEFAULTS[name]
    }
    if out.get("class_name") == RelatedNodeInfo.class_name():
        del out["class_name"]
    return out


class GroundedNodeParser(NodeParser):
    """Split Documents into TextNodes that know their source boxes.

    **Input.** Documents of :class:`~llama_index_grounded.GroundedPDFReader` are chunked from their
    parse tree (resolved through the parse cache by the reference in their metadata; the tree is
    never copied into a node): every node gets pages, heading path, element ids and ``boxes``
    (exact per-line boxes by default, across page breaks). Nodes that already are chunks of such a
    Document (output of this parser or of another splitter) are re-split inside their own char span
    and every part gets the boxes of its own text. Any other node is chunked as plain text with the
    same strategy and token limit (no boxes).

    **Configuration.** ``strategy`` (a name, a :class:`~grounded.chunking.ChunkingStrategy` or a
    built :class:`~grounded.chunking.Chunker`), ``max_tokens`` (alias ``chunk_size``), ``overlap``
    (alias ``chunk_overlap``; tokens or a fraction in (0, 1)), ``tokenizer`` (None = MiniLM, a
    tiktoken name, a ``tokenizer.json`` path, a ``tokenizers.Tokenizer`` or any tokenizer
    :func:`grounded.chunking.load_tokenizer` takes), ``box_mode``, ``strategy_options`` (or the
    strategy's keywords directly: ``GroundedNodeParser(strategy="hierarchical", heading_budget=40)``).
    Changing a field later (``parser.max_tokens = 64``, ``model_copy(update=...)``) rebuilds the
    chunker; unknown keywords raise :class:`~grounded.errors.ChunkingError`.

    **Text and metadata.** With ``heading_context="text"`` the node text is the chunk content (the
    hierarchical strategy prepends its heading context to the body), otherwise the body only;
    ``"metadata"`` shows the heading path (``section``) to the embedder and the LLM instead, and
    what the embedder sees (``get_content(MetadataMode.EMBED)``) still fits ``max_tokens``.
    ``start_char_idx``/``end_char_idx`` locate the body in the source Document's text
    (``metadata["body_start"]`` is where the body starts in the node text). Metadata is flat by
    default (``flat_metadata=True``: scalars and compact JSON strings, safe for Chroma and every
    other store; read boxes back with :func:`~llama_index_grounded.node_boxes`). Box payload and
    ids are hidden from embedder and LLM; the LLM sees ``file_name``, ``page_label``, ``pages``
    and ``section``. Node ids are chunk ids (source + configuration + char span) unless
    ``id_func`` is set, and unique within one call: overlapping input nodes (``SentenceSplitter``
    at its default ``chunk_overlap``) can re-split into the same span twice; that part is kept once
    (the same chunk, same id as on every other surface), so the nodes go to Chroma in one ``add``.

    **Neighbours.** ``include_prev_next_rel=True`` by default, as in LlamaIndex's splitters: each
    node references its previous and next node (PREVIOUS/NEXT), which
    ``PrevNextNodePostprocessor``/``AutoPrevNextNodePostprocessor`` follow through a docstore
    holding the nodes. A reference is the neighbour's id only (LlamaIndex's splitters copy the
    neighbour's metadata, which would triple every node), written compactly
    (:class:`GroundedTextNode`). Nodes that only go to a vector store (``VectorStoreIndex`` on Chroma
    fills no docstore, so the ids point at nothing there) can leave them out with
    ``include_prev_next_rel=False``: a node's neighbours are also the nodes of the same
    ``ref_doc_id`` with ``metadata["index"]`` one lower / higher (a metadata filter every store supports).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True, populate_by_name=True)

    strategy: Any = Field(default="recursive", description="fixed | recursive | semantic | hierarchical, or a strategy object.")
    max_tokens: int = Field(
        default=256,
        validation_alias=AliasChoices("max_tokens", "chunk_size"),
        description="Upper bound of tokens per chunk (headings included; alias chunk_size).",
    )
    overlap: int | float = Field(
        default=0,
        validation_alias=AliasChoices("overlap", "chunk_overlap"),
        description="Overlap in tokens, or a fraction of max_tokens in (0, 1) (alias chunk_overlap).",
    )
    box_mode: str = Field(default="auto", description="auto | exact | line | element")
    tokenizer: Any = Field(default=None, description="None (all-MiniLM-L6-v2), a tiktoken name, a tokenizer.json path or object.")
    strategy_options: dict[str, Any] = Field(
        default_factory=dict, description="Strategy options: delimiters, percentile, min_tokens, heading_budget, ..."
    )
    heading_context: HeadingContext = Field(default="text", description="Where heading context goes: text | metadata | none")
    flat_metadata: bool = Field(default=True, description="Scalars and compact JSON strings only (any vector store).")
    line_boxes: bool = Field(default=True, description="Keep line boxes inside each box in the metadata.")
    cache_dir: str | None = Field(default=None, description="Parse cache folder (default $GROUNDED_CACHE_DIR/parses).")
    parse_sources: bool = Field(
        default=True,
        description="Documents of other readers (SimpleDirectoryReader, PyMuPDFReader, ...): parse the PDF their "
        "metadata names (once, kept in the parse cache) and ground each chunk in it for its boxes.",
    )
    include_prev_next_rel: bool = Field(
        default=True,
        description="Link each node to its neighbours (PREVIOUS/NEXT by id), for PrevNextNodePostprocessor over a "
        "docstore that holds the nodes (see the class docstring).",
    )

    _chunker: Chunker | None = PrivateAttr(default=None)
    _chunker_key: Any = PrivateAttr(default=None)
    _budget: dict[int, Chunker] = PrivateAttr(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        data.pop("fingerprint", None)  # derived, written by to_dict
        given = data.pop("chunker", None)
        if isinstance(data.get("strategy"), Chunker):
            given = data["strategy"]
        if given is not None:
            if not isinstance(given, Chunker):
                raise ChunkingError(f"chunker must be a grounded Chunker, got {type(given).__name__}")
            data.update(
                strategy=given.strategy, tokenizer=given.tokenizer, box_mode=given.box_mode,
                max_tokens=given.strategy.max_tokens, overlap=given.strategy.overlap,
            )
        strategy = data.get("strategy")
        if isinstance(strategy, ChunkingStrategy):  # its size is the parser's size
            size = data.get("max_tokens", data.get("chunk_size", strategy.max_tokens))
            if size != strategy.max_tokens:
                raise ChunkingError(
                    f"max_tokens={size} differs from the given {type(strategy).__name__} (max_tokens={strategy.max_tokens}); "
                    "pass a new strategy object or a strategy name"
                )
            if "max_tokens" not in data and "chunk_size" not in data:
                data["max_tokens"] = strategy.max_tokens
            if "overlap" not in data and "chunk_overlap" not in data:
                data["overlap"] = strategy.overlap
        box_mode = data.get("box_mode", "auto")
        if box_mode not in BOX_MODES:
            raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
        data = self._sort_keywords(data)
        super().__init__(**data)
        # invalid parameters fail here, not in the middle of an ingestion run
        self._get_chunker()
        from grounded.grounding.adapter import warn_long_chunk_size  # MiniLM embeds 256 tokens: say so, once

        warn_long_chunk_size(type(self).__name__, self.max_tokens, self.tokenizer)

    @classmethod
    def _sort_keywords(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Strategy keywords go to ``strategy_options``; anything else unknown is refused."""
        known = set(cls.model_fields) | set(_ALIASES)
        unknown = [k for k in data if k not in known]
        if not unknown:
            return data
        strategy = data.get("strategy", "recursive")
        accepted: set[str] = set()
        if isinstance(strategy, str):  # the strategy's declared options (an undeclared one: all, checked by its class)
            try:
                declared = strategy_class(strategy).options
                accepted = set(unknown) if declared is None else {o.name for o in declared}
            except ChunkingError:
                accepted = set()
        bad = [k for k in unknown if k not in accepted]
        if bad:
            valid = sorted((set(cls.model_fields) - {"callback_manager"}) | set(_ALIASES) | accepted)
            raise ChunkingError(
                f"GroundedNodeParser got unknown keyword(s) {', '.join(sorted(bad))}; valid keywords: {', '.join(valid)}"
            )
        options = dict(data.get("strategy_options") or {})
        options.update({k: data.pop(k) for k in unknown})
        data["strategy_options"] = options
        return data

    @classmethod
    def from_defaults(
        cls,
        strategy: str | ChunkingStrategy | Chunker = "recursive",
        chunk_size: int | None = None,
        chunk_overlap: int | float | None = None,
        *,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: Any = None,
        id_func: Any = None,
        **kwargs: Any,
    ) -> GroundedNodeParser:
        """LlamaIndex's constructor convention (``SentenceSplitter.from_defaults(chunk_size=...)``)."""
        if chunk_size is not None:
            kwargs["max_tokens"] = chunk_size
        if chunk_overlap is not None:
            kwargs["overlap"] = chunk_overlap
        if callback_manager is not None:
            kwargs["callback_manager"] = callback_manager
        if id_func is not None:
            kwargs["id_func"] = id_func
        return cls(strategy=strategy, include_metadata=include_metadata, include_prev_next_rel=include_prev_next_rel, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "GroundedNodeParser"

    # -- the names LlamaIndex users type -----------------------------------------------------------
    @property
    def chunk_size(self) -> int:
        return self.max_tokens

    @chunk_size.setter
    def chunk_size(self, value: int) -> None:
        self.max_tokens = value

    @property
    def chunk_overlap(self) -> int | float:
        return self.overlap

    @chunk_overlap.setter
    def chunk_overlap(self, value: int | float) -> None:
        self.overlap = value

    @property
    def chunker(self) -> Chunker:
        """The chunker of the current configuration (rebuilt when a field changed)."""
        return self._get_chunker()

    # -- validation, serialization, pickling -------------------------------------------------------
    @model_validator(mode="after")
    def _check(self) -> GroundedNodeParser:
        if self.box_mode not in BOX_MODES:
            raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {self.box_mode!r}")
        if isinstance(self.strategy, ChunkingStrategy):
            if self.strategy.max_tokens != self.max_tokens or (
                isinstance(self.overlap, int) and self.overlap and self.strategy.overlap != self.overlap
            ):
                raise ChunkingError(
                    f"max_tokens={self.max_tokens}/overlap={self.overlap} differ from the given {type(self.strategy).__name__} "
                    f"(max_tokens={self.strategy.max_tokens}, overlap={self.strategy.overlap}); pass a new strategy object "
                    "or a strategy name"
                )
        elif not isinstance(self.strategy, str):
            raise ChunkingError(f"strategy must be a name, a ChunkingStrategy or a Chunker, got {type(self.strategy).__name__}")
        return self

    @field_serializer("strategy", "tokenizer")
    def _identity(self, value: Any) -> Any:
        if value is None or isinstance(value, (str, int, float)):
            return value
        if isinstance(value, ChunkingStrategy):
            return {"name": value.name, "class": type(value).__qualname__, **value.params()}
        if isinstance(value, Tokenizer):
            return value.describe()
        return f"{type(value).__module__}.{type(value).__qualname__}"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        # the chunker fingerprint makes IngestionPipeline's cache key cover everything that decides
        # the chunks (a tokenizer object's vocabulary, a strategy object's parameters, ...)
        data = super().to_dict(**kwargs)
        data["fingerprint"] = self._get_chunker().fingerprint
        return data

    def __getstate__(self) -> dict[Any, Any]:
        # IngestionPipeline(num_workers>1) pickles transformations; chunkers are rebuilt on demand
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_chunker": None, "_chunker_key": None, "_budget": {}}
        return state

    def _config_key(self) -> tuple[Any, ...]:
        def ident(value: Any) -> Any:
            return value if value is None or isinstance(value, (str, int, float)) else id(value)

        options = json.dumps(self.strategy_options, sort_keys=True, default=repr)
        return (ident(self.strategy), self.max_tokens, self.overlap, self.box_mode, ident(self.tokenizer), options)

    def _get_chunker(self) -> Chunker:
        key = self._config_key()
        if self._chunker is None or self._chunker_key != key:
            chunker = build_chunker(
                self.strategy, self.max_tokens, self.overlap, tokenizer=self.tokenizer, box_mode=self.box_mode,
                options=self.strategy_options, owner="GroundedNodeParser", keywords=tuple(sorted(type(self).model_fields)),
            )
            self._chunker, self._chunker_key, self._budget = chunker, key, {}
        return self._chunker

    def _chunker_for(self, budget: int) -> Chunker | None:
        """The same configuration at a smaller ``max_tokens`` (room for metadata the embedder sees);
        None for strategy objects (they have one size)."""
        chunker = self._get_chunker()
        if budget >= self.max_tokens:
            return chunker
        if isinstance(self.strategy, ChunkingStrategy) or budget < 1:
            return None
        smaller = self._budget.get(budget)
        if smaller is None:
            overlap = chunker.strategy.overlap
            options = dict(self.strategy_options)
            if "heading_budget" in options:
                options["heading_budget"] = min(int(options["heading_budget"]), budget - 1)
            if "min_tokens" in options:
                options["min_tokens"] = min(int(options["min_tokens"]), budget)
            smaller = Chunker(
                self.strategy, budget, min(overlap, budget - 1) if overlap else 0, tokenizer=chunker.tokenizer,
                box_mode=self.box_mode, **options,
            )
            self._budget[budget] = smaller
        return smaller

    # -- NodeParser --------------------------------------------------------------------------------
    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        """Each input node's parts, without repeats: overlapping inputs (``SentenceSplitter``'s
        ``chunk_overlap``) can give two parts with one span, hence one chunk id. A part equal to an
        earlier part of the same call (same id, so same source and span, same text, metadata,
        offsets and SOURCE) is that chunk again and is dropped (one copy holds the same retrieval
        content; a vector store refuses one id twice in one ``add``); a part with an earlier part's
        id but other text or metadata (parents with different metadata) gets
        :func:`~grounded.text.ids.repeat_id` ``<id>~<n>``. PREVIOUS/NEXT link the kept parts of
        one input node."""
        out: list[BaseNode] = []
        seen: dict[str, TextNode] = {}
        for node in get_tqdm_iterable(nodes, show_progress, "Chunking with source boxes"):
            kept: list[TextNode] = []
            for part in self._split(node):
                first = seen.get(part.node_id)
                if first is not None and _same_part(first, part):
                    continue
                if first is not None:
                    n = 1
                    while repeat_id(part.node_id, n) in seen:
                        n += 1
                    part.id_ = repeat_id(part.node_id, n)
                seen[part.node_id] = part
                kept.append(part)
            if self.include_prev_next_rel:
                for prev, nxt in zip(kept, kept[1:], strict=False):
                    prev.relationships[NodeRelationship.NEXT] = _related(nxt)
                    nxt.relationships[NodeRelationship.PREVIOUS] = _related(prev)
            out.extend(kept)
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # offsets, relationships and metadata are set in _split; the base class would re-derive
        # offsets with str.find and link neighbours with their whole metadata
        return nodes

    # -- one input node -> chunk nodes ---------------------------------------------------------------
    def _split(self, node: BaseNode) -> list[TextNode]:
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        meta = node.metadata
        is_chunk = any(k in meta for k in ("chunk_id", "text_hash", "start_char"))
        inherited = self._inherited(meta, drop_chunk_keys=is_chunk)
        view, why = document_view(meta, cache=self.cache_dir, parse=self.parse_sources)
        name = meta.get("file_path") or meta.get("file_name") or node.node_id
        if view is not None and (meta.get(TREE_REF_KEY) or meta.get(TREE_KEY)):
            root = view.root
            key = view.key
            if meta.get(PAGE_KEY) not in (None, ""):
                key = f"{key}#p{int(meta[PAGE_KEY])}"
            if text == view.text:
                chunks = self._fit(root, list(self._get_chunker().iter_chunks(root, source_key=key)), inherited, key, node)
                return self._nodes(chunks, node, inherited, root, base_offset=0)
            span = view.span_of(text, meta, getattr(node, "start_char_idx", None))
            if span is not None:
                parts = self._sub_chunks(view, span, key, self._get_chunker(), meta)
                return self._nodes(self._fit(root, parts, inherited, key, node, whole=False), node, inherited, root, base_offset=0)
            # text from elsewhere (edited, or a rendering of the PDF): chunked as text, then grounded
        elif view is None and names_source(meta):  # plain text (no source named) has no boxes to give
            warnings.warn(f"{name}: its chunks get no boxes: {why}", GroundingWarning, stacklevel=4)
        plain = text_tree(text)
        plain_key = text_key(text, name=node.ref_doc_id or node.node_id)
        chunks = list(self._get_chunker().iter_chunks(plain, source_key=plain_key))
        base = node.start_char_idx if isinstance(node, TextNode) and node.start_char_idx is not None and not is_chunk else 0
        chunks = self._fit(plain, chunks, inherited, plain_key, node)
        if view is not None:
            chunks = self._grounded(view, chunks, name)
        return self._nodes(chunks, node, inherited, None, base_offset=base)

    def _grounded(self, view: SourceView, chunks: list[Chunk], name: Any) -> list[Chunk]:
        """Chunks of a text made elsewhere (a framework reader's page, another splitter's part) with
        the boxes of their grounding in the PDF; one warning when some could not be grounded."""
        records = ground_in_view(view, [ChunkRecord.from_chunk(c) for c in chunks], label=name, box_mode=self.box_mode)
        return [r.to_chunk() for r in records]

    def _inherited(self, meta: dict[str, Any], *, drop_chunk_keys: bool) -> dict[str, Any]:
        if not self.include_metadata:
            return {}
        return {k: v for k, v in meta.items() if k != TREE_KEY and not (drop_chunk_keys and k in CHUNK_KEYS)}

    def _sub_chunks(
        self, view: SourceView, span: tuple[int, int], key: str, chunker: Chunker, meta: dict[str, Any] | None = None
    ) -> list[Chunk]:
        """Chunks of document text ``[start, end)`` only (a re-split node's own span, or a chunk that
        does not fit once its metadata is counted), each with the boxes of exactly its span."""
        start, end = span
        doc_text = view.text
        heading_path = _heading_path(meta or {})
        out = []
        for part in chunker.iter_chunks(text_tree(doc_text[start:end]), source_key=key):
            own = ChunkRecord.from_chunk(part)
            s, e = start + (own.start_char or 0), start + (own.end_char or 0)
            record = ChunkRecord.of_boxes(
                chunk_id(key, chunker.fingerprint, s, e), doc_text[s:e],
                view.boxes(s, e, tokenizer=chunker.tokenizer, box_mode=chunker.box_mode),
                start_char=s, end_char=e, token_count=own.token_count, strategy=chunker.strategy.name, heading_path=heading_path,
            )
            out.append(record.to_chunk())
        return out

    @staticmethod
    def _view_of(root: ParsingResult) -> SourceView:
        view, _ = source_view({}, tree=root)
        assert view is not None
        return view

    # -- what the embedder sees must fit max_tokens ----------------------------------------------------
    def _section(self, chunk: Chunk) -> str:
        path = ChunkRecord.from_chunk(chunk).heading_path
        section = " > ".join(path)
        if self.heading_context != "metadata" or not section:
            return section
        tok = self._get_chunker().tokenizer
        limit = max(1, self.max_tokens // 4)
        _, offsets = tok.encode(section)
        if len(offsets) <= limit:
            return section
        return section[: offsets[limit - 2][1] if limit > 1 else 0].rstrip() + "…"

    def _overhead(self, chunk: Chunk, inherited: dict[str, Any], info: dict[str, Any] | None, source: BaseNode) -> int:
        """Tokens the embedder sees besides the chunk's text: its visible metadata block and the
        blank line after it (0 when every key is hidden)."""
        _, metadata = self._text_and_metadata(chunk, inherited, info)
        probe = TextNode(
            text="",
            metadata=metadata,
            excluded_embed_metadata_keys=self._hidden(inherited, embed=True, source=source),
            metadata_template=source.metadata_template,
            metadata_separator=source.metadata_separator,
            text_template=getattr(source, "text_template", TextNode.model_fields["text_template"].default),
        )
        if not probe.get_metadata_str(MetadataMode.EMBED):
            return 0
        # +1: tokenizers that merge across the boundary (byte-level BPE) may count one more
        return self._get_chunker().tokenizer.count(probe.get_content(MetadataMode.EMBED)) + 1

    def _hidden(self, inherited: dict[str, Any], *, embed: bool, source: BaseNode | None = None) -> list[str]:
        given = (source.excluded_embed_metadata_keys if embed else source.excluded_llm_metadata_keys) if source else []
        hidden = list(dict.fromkeys([*given, *(_EMBED_HIDDEN if embed else _LLM_HIDDEN)]))
        if embed:
            hidden += ["page_label", "file_name", "pages"]
            if self.heading_context != "metadata":
                hidden.append("section")
        elif self.heading_context == "none":
            hidden.append("section")
        return [k for k in dict.fromkeys(hidden) if k != TREE_KEY]

    def _fit(
        self,
        root: ParsingResult,
        chunks: list[Chunk],
        inherited: dict[str, Any],
        key: str,
        source: BaseNode,
        *,
        whole: bool = True,
    ) -> list[Chunk]:
        """Make room for the metadata the embedder sees (``heading_context="metadata"``, or inherited
        metadata left visible), so ``get_content(MetadataMode.EMBED)`` fits ``max_tokens``: the whole
        document is chunked again at the size that leaves room for the largest metadata block; what
        still does not fit (strategy objects, re-split parts) is split inside its own span."""
        hidden = set(self._hidden(inherited, embed=True, source=source))
        if self.heading_context != "metadata" and not any(k not in hidden for k in inherited):
            return chunks
        tok = self._get_chunker().tokenizer
        info = source_info(root) if root.metadata.get("source") else None
        overheads: dict[str, int] = {}

        def fits(c: Chunk) -> bool:
            if c.id not in overheads:
                overheads[c.id] = self._overhead(c, inherited, info, source)
            text = c.content if self.heading_context == "text" else c.body
            return tok.count(text) + overheads[c.id] <= self.max_tokens

        smaller: Chunker | None = None
        for _ in range(3):
            if all([fits(c) for c in chunks]):  # noqa: C419 - every overhead is needed below
                return chunks
            smaller = self._chunker_for(self.max_tokens - max(overheads.values()))
            if smaller is None or not whole:
                break
            chunks = list(smaller.iter_chunks(root, source_key=key))
        budget = self.max_tokens - max(overheads.values())
        if budget < 1:
            warnings.warn(
                f"the metadata the embedder sees takes {max(overheads.values())} of max_tokens={self.max_tokens} tokens; "
                "hide keys with excluded_embed_metadata_keys",
                UserWarning,
                stacklevel=5,
            )
            return chunks
        if smaller is None or smaller.max_tokens > budget:
            smaller = Chunker("recursive", budget, tokenizer=tok, box_mode=self.box_mode)
        out: list[Chunk] = []
        for c in chunks:
            record = ChunkRecord.from_chunk(c)
            if fits(c) or record.start_char is None or record.end_char is None:
                out.append(c)
                continue
            span = (record.start_char, record.end_char)
            out.extend(self._sub_chunks(self._view_of(root), span, key, smaller, {"heading_path": record.heading_path}))
        return out


    # -- chunks -> nodes ------------------------------------------------------------------------------
    def _nodes(
        self, chunks: list[Chunk], source: BaseNode, inherited: dict[str, Any], root: ParsingResult | None, base_offset: int
    ) -> list[TextNode]:
        embed_hidden = self._hidden(inherited, embed=True, source=source)
        llm_hidden = self._hidden(inherited, embed=False, source=source)
        if isinstance(source, Document) or source.source_node is None:
            # the Document by id; its metadata is on every node already (not copied once more)
            source_info_rel = RelatedNodeInfo(node_id=source.node_id, node_type=source.get_type())
        else:
            source_info_rel = source.source_node  # a re-split chunk: its parts belong to the same Document
        info = source_info(root) if root is not None else None
        use_id_func = self.id_func is not default_id_func
        built: list[TextNode] = []
        for i, chunk in enumerate(chunks):
            built.append(self._node(chunk, i, inherited, embed_hidden, llm_hidden, base_offset, source, source_info_rel, info, use_id_func))
        return built  # linked in _parse_nodes, once repeats are dropped

    def _text_and_metadata(
        self, chunk: Chunk, inherited: dict[str, Any], info: dict[str, Any] | None
    ) -> tuple[str, dict[str, Any]]:
        """A chunk's node text and node metadata (inherited keys + file keys + chunk keys)."""
        text = chunk.content if self.heading_context == "text" else chunk.body
        meta = chunk_metadata(chunk, flat=self.flat_metadata, line_spans=self.line_boxes, text=text)
        if self.heading_context != "text":
            meta["body_start"] = 0
        meta["section"] = self._section(chunk)
        pages = ChunkRecord.from_chunk(chunk).pages
        extra: dict[str, Any] = {"page_label": str(pages[0]) if pages else str(inherited.get("page_label", ""))}
        if pages:  # pymupdf4llm's key: the first page, 1-based (``pages`` lists them all)
            extra["page"] = pages[0]
        if info is not None:
            extra["file_name"] = inherited.get("file_name") or info["name"]
            extra["file_path"] = inherited.get("file_path", info["path"])
            extra["total_pages"] = inherited.get("total_pages", info["page_count"])
        merged = {**inherited, **extra, **meta}
        for key in _NODE_DROPPED:  # derivable, or on the source Document: a vector store keeps every key twice
            merged.pop(key, None)
        return text, merged

    def _node(
        self,
        chunk: Chunk,
        index: int,
        inherited: dict[str, Any],
        embed_hidden: list[str],
        llm_hidden: list[str],
        base_offset: int,
        source: BaseNode,
        source_rel: RelatedNodeInfo,
        info: dict[str, Any] | None,
        use_id_func: bool,
    ) -> TextNode:
        text, metadata = self._text_and_metadata(chunk, inherited, info)
        start = base_offset + (ChunkRecord.from_chunk(chunk).start_char or 0)
        node_id = self.id_func(index, source) if use_id_func else chunk.id
        if node_id == metadata.get("chunk_id"):
            del metadata["chunk_id"]  # the node id is the chunk id
        return GroundedTextNode(
            id_=node_id,
            text=text,
            metadata=metadata,
            excluded_embed_metadata_keys=[k for k in embed_hidden if k in metadata],
            excluded_llm_metadata_keys=[k for k in llm_hidden if k in metadata],
            start_char_idx=start,
            end_char_idx=start + len(chunk.body),
            relationships={NodeRelationship.SOURCE: source_rel},
            metadata_template=source.metadata_template,
            metadata_separator=source.metadata_separator,
            text_template=getattr(source, "text_template", TextNode.model_fields["text_template"].default),
        )


def _same_part(a: TextNode, b: TextNode) -> bool:
    """Whether two parts of one call are the same chunk: same id, text, metadata, offsets and SOURCE
    (what a store keeps of a node, neighbours aside)."""
    return (
        a.node_id == b.node_id
        and a.text == b.text
        and a.metadata == b.metadata
        and (a.start_char_idx, a.end_char_idx) == (b.start_char_idx, b.end_char_idx)
        and a.source_node == b.source_node
    )


def _related(node: TextNode) -> RelatedNodeInfo:
    """A PREVIOUS/NEXT reference: the neighbour's id only, all LlamaIndex reads of a neighbour
    (``PrevNextNodePostprocessor``, ``AutoPrevNextNodePostprocessor``, the auto-merging retriever and
    the property-graph ``ImplicitPathExtractor`` fetch or link it by ``node_id``). Its metadata
    (LlamaIndex's splitters copy it: the boxes would triple every node), hash and type (a chunk's
    neighbour is a TextNode) are left at RelatedNodeInfo's defaults, which serialize to nothing."""
    return RelatedNodeInfo(node_id=node.node_id)


def _heading_path(meta: dict[str, Any]) -> list[str]:
    value = meta.get("heading_path")
    if value is None:  # nodes keep the path as ``section`` only
        section = str(meta.get("section") or "")
        return section.split(" > ") if section else []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return [str(h) for h in value] if isinstance(value, list) else []
