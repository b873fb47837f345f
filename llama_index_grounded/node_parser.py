"""``GroundedNodeParser``: grounded's chunker as a LlamaIndex ``NodeParser``."""

from __future__ import annotations

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

from grounded.chunking import Chunker, ChunkingStrategy
from grounded.integrations.options import (
    build_chunker,
    check_fields,
    chunker_fields,
    refuse_raw_bytes,
    setting_identity,
    sort_keywords,
    without_defaults,
)
from grounded.integrations.profiles import (
    inherited_metadata,
    node_hidden_keys,
    node_text_and_metadata,
    section_of,
)
from grounded.integrations.split_nodes import ChunkerMemo, NodeChunker, Repeats, settings_key
from grounded.metadata import source_info
from grounded.model import Chunk, ParsingResult

__all__ = ["GroundedNodeParser", "GroundedTextNode"]

HeadingContext = Literal["text", "metadata", "none"]
#: TextNode fields a chunk node leaves out of its serialized form while they hold TextNode's
#: declared default (reading it back as a TextNode restores exactly that value)
_DEFAULTED_FIELDS = ("embedding", "metadata_template", "metadata_separator", "mimetype", "text_template")
#: RelatedNodeInfo's defaulted fields and their defaults (left out of a serialized relationship)
_RELATED_DEFAULTS = {
    name: field.get_default(call_default_factory=True)
    for name, field in RelatedNodeInfo.model_fields.items()
    if not field.is_required()
}


def _compact(entry: Any) -> Any:
    """A serialized ``RelatedNodeInfo`` without the fields at their defaults and its class name."""
    return without_defaults(entry, _RELATED_DEFAULTS, RelatedNodeInfo.class_name())


class GroundedTextNode(TextNode):
    """The node :class:`GroundedNodeParser` makes: a ``TextNode`` (same ``class_name``: read back as
    an equal ``TextNode``) whose serialized form leaves out fields and relationship fields that hold
    their defaults (~150 + ~220 bytes a node); what the embedder and the LLM see is unchanged.
    Details: docs/adapters.md#groundedtextnode."""

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
                key: [_compact(r) for r in value] if isinstance(value, list) else _compact(value)
                for key, value in relationships.items()
            }
        data["class_name"] = self.class_name()
        return data


class GroundedNodeParser(NodeParser):
    """Split Documents into TextNodes that know their source boxes (pages, heading path, element ids,
    exact per-line ``boxes`` across page breaks). Documents of :class:`GroundedPDFReader` are chunked
    from their parse tree, re-split chunk nodes inside their own span, any other text as plain text
    grounded in the PDF its metadata names. ``strategy``, ``max_tokens`` (``chunk_size``), ``overlap``
    (``chunk_overlap``), ``tokenizer``, ``box_mode``, strategy options as keywords; ``heading_context``
    text | metadata | none; flat, store-safe metadata; chunk ids as node ids; PREVIOUS/NEXT by id.
    Full contract: docs/adapters.md#groundednodeparser."""

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True, populate_by_name=True)

    strategy: Any = Field(default="recursive", description="fixed | recursive | semantic | hierarchical, or a strategy object.")
    max_tokens: int = Field(default=256, validation_alias=AliasChoices("max_tokens", "chunk_size"),
                            description="Upper bound of tokens per chunk (headings included; alias chunk_size).")
    overlap: int | float = Field(default=0, validation_alias=AliasChoices("overlap", "chunk_overlap"),
                                 description="Overlap in tokens, or a fraction of max_tokens in (0, 1) (alias chunk_overlap).")
    box_mode: str = Field(default="auto", description="auto | exact | line | element")
    tokenizer: Any = Field(default=None, description="None (all-MiniLM-L6-v2), a tiktoken name, a tokenizer.json path or object.")
    strategy_options: dict[str, Any] = Field(default_factory=dict, description="Strategy options (delimiters, percentile, ...).")
    heading_context: HeadingContext = Field(default="text", description="Where heading context goes: text | metadata | none")
    flat_metadata: bool = Field(default=True, description="Scalars and compact JSON strings only (any vector store).")
    line_boxes: bool = Field(default=True, description="Keep line boxes inside each box in the metadata.")
    cache_dir: str | None = Field(default=None, description="Parse cache folder (default $GROUNDED_CACHE_DIR/parses).")
    parse_sources: bool = Field(default=True, description="Ground other readers' Documents in the PDF they name (parsed once).")
    include_prev_next_rel: bool = Field(default=True, description="Link each node to its neighbours (PREVIOUS/NEXT by id).")

    _memo: ChunkerMemo = PrivateAttr(default_factory=ChunkerMemo)

    def __init__(self, **data: Any) -> None:
        data = sort_keywords(chunker_fields(data), set(type(self).model_fields), "GroundedNodeParser")
        super().__init__(**data)
        # invalid parameters fail here, not in the middle of an ingestion run
        self._get_chunker()
        from grounded.integrations.embedding import warn_long_chunk_size

        warn_long_chunk_size(type(self).__name__, self.max_tokens, self.tokenizer)

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
        given = {"max_tokens": chunk_size, "overlap": chunk_overlap, "callback_manager": callback_manager, "id_func": id_func}
        kwargs.update({k: v for k, v in given.items() if v is not None})
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
        check_fields(self.strategy, self.max_tokens, self.overlap, self.box_mode)
        return self

    @field_serializer("strategy", "tokenizer")
    def _identity(self, value: Any) -> Any:
        return setting_identity(value)

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        # the chunker fingerprint makes IngestionPipeline's cache key cover everything that decides
        # the chunks (a tokenizer object's vocabulary, a strategy object's parameters, ...)
        data = super().to_dict(**kwargs)
        data["fingerprint"] = self._get_chunker().fingerprint
        return data

    def __getstate__(self) -> dict[Any, Any]:
        # IngestionPipeline(num_workers>1) pickles transformations; chunkers are rebuilt on demand.
        # Its spawned workers import the main script again: unguarded, they die and are replaced for
        # ever, so that pickle refuses at once (UnguardedMainError names the script line)
        from grounded.integrations import check_pickled_for_spawned_pool  # only when pickled

        check_pickled_for_spawned_pool(f"IngestionPipeline.run(num_workers=...) with {type(self).__name__}")
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_memo": ChunkerMemo()}
        return state

    def _get_chunker(self) -> Chunker:
        key = settings_key(self.strategy, self.max_tokens, self.overlap, self.box_mode, self.tokenizer, self.strategy_options)
        return self._memo.get(key, lambda: build_chunker(
            self.strategy, self.max_tokens, self.overlap, tokenizer=self.tokenizer, box_mode=self.box_mode,
            options=self.strategy_options, owner="GroundedNodeParser", keywords=tuple(sorted(type(self).model_fields)),
        ))

    # -- NodeParser --------------------------------------------------------------------------------
    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        """Each input node's parts without repeats (overlapping inputs can give one span twice: kept
        once, so a store gets each id once; :class:`Repeats`); PREVIOUS/NEXT link the kept parts."""
        refuse_raw_bytes([(n.get_content(metadata_mode=MetadataMode.NONE), n.metadata, n.node_id) for n in nodes], "llama_index")
        out: list[BaseNode] = []
        repeats = Repeats()
        for node in get_tqdm_iterable(nodes, show_progress, "Chunking with source boxes"):
            kept = []
            for part in self._split(node):
                part_id = repeats.id_for(part.node_id, part, _same_part)
                if part_id is not None:
                    if part_id != part.node_id:
                        part.id_ = part_id
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

    # -- one input node -> chunk nodes (grounded.integrations.split_nodes) --------------------------------------
    def _split(self, node: BaseNode) -> list[TextNode]:
        meta = node.metadata
        inherited = inherited_metadata(meta, include=self.include_metadata)
        core = NodeChunker(
            self._get_chunker(), strategy=self.strategy, strategy_options=self.strategy_options, budgets=self._memo.budgets,
            heading_context=self.heading_context, cache=self.cache_dir, parse_sources=self.parse_sources,
        )
        made = core.split(
            node.get_content(metadata_mode=MetadataMode.NONE), meta, start=getattr(node, "start_char_idx", None),
            name=meta.get("file_path") or meta.get("file_name") or node.node_id, ref=node.ref_doc_id or node.node_id,
            inherited=inherited, embed_hidden=self._hidden(inherited, embed=True, source=node),
            overhead=lambda chunk, info: self._overhead(chunk, inherited, info, node),
        )
        return self._nodes(made.chunks, node, inherited, made.root, base_offset=made.base_offset)

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
        return node_hidden_keys(given, embed=embed, heading_context=self.heading_context)

    # -- chunks -> nodes ------------------------------------------------------------------------------
    def _nodes(
        self, chunks: list[Chunk], source: BaseNode, inherited: dict[str, Any], root: ParsingResult | None, base_offset: int
    ) -> list[TextNode]:
        embed_hidden = self._hidden(inherited, embed=True, source=source)
        llm_hidden = self._hidden(inherited, embed=False, source=source)
        if isinstance(source, Document) or source.source_node is None:  # the Document by id, its metadata not copied
            source_rel = RelatedNodeInfo(node_id=source.node_id, node_type=source.get_type())
        else:  # a re-split chunk: its parts belong to the same Document
            source_rel = source.source_node
        info = source_info(root) if root is not None else None
        use_id_func = self.id_func is not default_id_func
        text_template = getattr(source, "text_template", TextNode.model_fields["text_template"].default)
        built: list[TextNode] = []
        for i, chunk in enumerate(chunks):
            text, metadata = self._text_and_metadata(chunk, inherited, info)
            start = base_offset + (chunk.start_char or 0)
            node_id = self.id_func(i, source) if use_id_func else chunk.id
            if node_id == metadata.get("chunk_id"):
                del metadata["chunk_id"]  # the node id is the chunk id
            built.append(GroundedTextNode(
                id_=node_id, text=text, metadata=metadata, start_char_idx=start, end_char_idx=start + len(chunk.body),
                excluded_embed_metadata_keys=[k for k in embed_hidden if k in metadata],
                excluded_llm_metadata_keys=[k for k in llm_hidden if k in metadata],
                relationships={NodeRelationship.SOURCE: source_rel}, metadata_template=source.metadata_template,
                metadata_separator=source.metadata_separator, text_template=text_template,
            ))
        return built  # linked in _parse_nodes, once repeats are dropped

    def _text_and_metadata(self, chunk: Chunk, inherited: dict[str, Any], info: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        section = section_of(chunk, self.heading_context, self._get_chunker().tokenizer, self.max_tokens)
        return node_text_and_metadata(
            chunk, inherited, info, heading_context=self.heading_context, flat=self.flat_metadata, line_spans=self.line_boxes,
            section=section,
        )


def _same_part(a: TextNode, b: TextNode) -> bool:
    """Whether two nodes of one call are the same chunk: same id, text, metadata, offsets and SOURCE
    (what a store keeps of a node, neighbours aside)."""
    return (
        a.node_id == b.node_id and a.text == b.text and a.metadata == b.metadata
        and (a.start_char_idx, a.end_char_idx) == (b.start_char_idx, b.end_char_idx) and a.source_node == b.source_node
    )


def _related(node: TextNode) -> RelatedNodeInfo:
    """A PREVIOUS/NEXT reference: the neighbour's id only, all LlamaIndex reads of a neighbour
    (``PrevNextNodePostprocessor``, ``AutoPrevNextNodePostprocessor``, the auto-merging retriever and
    the property-graph ``ImplicitPathExtractor`` fetch or link it by ``node_id``). Its metadata
    (LlamaIndex's splitters copy it: the boxes would triple every node), hash and type (a chunk's
    neighbour is a TextNode) are left at RelatedNodeInfo's defaults, which serialize to nothing."""
    return RelatedNodeInfo(node_id=node.node_id)
