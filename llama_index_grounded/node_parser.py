"""``GroundedNodeParser``: grounded's chunker as a LlamaIndex ``NodeParser``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.node_parser.interface import NodeParser
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, TextNode
from llama_index.core.utils import get_tqdm_iterable

from grounded.chunking.assembly import BOX_MODES
from grounded.chunking.chunker import Chunker
from grounded.chunking.stream import document_text
from grounded.errors import ChunkingError, SchemaError
from grounded.metadata import PAYLOAD_KEYS, TREE_KEY, chunk_metadata, decode_tree, text_tree
from grounded.model import Chunk, ParsingResult

__all__ = ["GroundedNodeParser"]

HeadingContext = Literal["text", "metadata", "none"]


class GroundedNodeParser(NodeParser):
    """Split Documents into TextNodes that know their source boxes.

    Documents from :class:`~llama_index_grounded.GroundedPDFReader` are chunked from their parse
    tree, so every node gets pages, heading path, element ids and ``boxes`` (exact per-line boxes
    by default, across page breaks). Any other node is chunked as plain text with the same
    strategy and token limit (no boxes).

    Node ``text``: with ``heading_context="text"`` the chunk content (the hierarchical strategy
    prepends its heading context to the body), otherwise the body only; ``"metadata"`` shows the
    heading path (``section``) to the embedder and LLM instead. ``start_char_idx``/``end_char_idx``
    always locate the body in the source text (``metadata["body_start"]`` is where the body starts
    inside ``text``). Box payload and ids are excluded from embed and LLM metadata; the LLM sees
    ``file_name``, ``pages`` and ``section``. ``flat_metadata=True`` stores lists as compact JSON
    strings for flat-metadata vector stores (read back with ``boxes_from_metadata``).
    """

    strategy: str = Field(default="recursive", description="fixed | recursive | semantic | hierarchical")
    max_tokens: int = Field(default=256, description="Upper bound of tokens per chunk (headings included).")
    overlap: int | float = Field(default=0, description="Overlap in tokens, or a fraction of max_tokens in (0, 1).")
    box_mode: str = Field(default="auto", description="auto | exact | line | element")
    tokenizer: str | None = Field(
        default=None, description="None (all-MiniLM-L6-v2), a tiktoken name or a tokenizer.json path."
    )
    strategy_options: dict[str, Any] = Field(
        default_factory=dict, description="Strategy options: delimiters, percentile, min_tokens, heading_budget, ..."
    )
    heading_context: HeadingContext = Field(default="text", description="Where heading context goes: text | metadata | none")
    flat_metadata: bool = Field(default=False, description="Lists as compact JSON strings (flat vector stores).")
    line_boxes: bool = Field(default=True, description="Keep line boxes inside each box in the metadata.")

    _chunker: Chunker | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # invalid parameters fail here with a ChunkingError, not in the middle of an ingestion run
        if self.box_mode not in BOX_MODES:
            raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {self.box_mode!r}")
        self._get_chunker()

    @classmethod
    def class_name(cls) -> str:
        return "GroundedNodeParser"

    def __getstate__(self) -> dict[Any, Any]:
        # IngestionPipeline(num_workers>1) pickles transformations; the chunker is rebuilt on demand
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_chunker": None}
        return state

    def _get_chunker(self) -> Chunker:
        if self._chunker is None:
            self._chunker = Chunker(
                self.strategy,
                self.max_tokens,
                self.overlap,
                tokenizer=self.tokenizer,
                box_mode=self.box_mode,
                **self.strategy_options,
            )
        return self._chunker

    # -- NodeParser ----------------------------------------------------------------------------
    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Chunking with source boxes"):
            out.extend(self._split(node))
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # offsets, relationships and metadata are set in _split; the base class would re-derive
        # offsets with str.find and copy the parse tree into every node
        return nodes

    # -- one input node -> chunk nodes ---------------------------------------------------------
    def _tree_of(self, node: BaseNode, text: str) -> ParsingResult:
        stored = node.metadata.get(TREE_KEY)
        if stored is None:
            return text_tree(text)
        source = str(node.metadata.get("file_path") or node.node_id)
        root = decode_tree(stored, source=source)
        if document_text(root).text != text:
            raise SchemaError(
                f"{source}: the node text differs from its stored parse tree; put GroundedNodeParser "
                "directly after GroundedPDFReader (no transformation may edit the text before it)"
            )
        return root

    def _split(self, node: BaseNode) -> list[TextNode]:
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        root = self._tree_of(node, text)
        base_offset = node.start_char_idx if isinstance(node, TextNode) and node.start_char_idx is not None else 0
        inherited = {k: v for k, v in node.metadata.items() if k != TREE_KEY} if self.include_metadata else {}
        embed_hidden = _keys(node.excluded_embed_metadata_keys, PAYLOAD_KEYS, ("pages",))
        llm_hidden = _keys(node.excluded_llm_metadata_keys, PAYLOAD_KEYS)
        if self.heading_context != "metadata":
            embed_hidden.append("section")
        if self.heading_context == "none":
            llm_hidden.append("section")
        source_info = node.as_related_node_info()
        built: list[TextNode] = []
        for chunk in self._get_chunker().iter_chunks(root):
            built.append(self._node(chunk, inherited, embed_hidden, llm_hidden, base_offset, node, source_info))
        if self.include_prev_next_rel:
            for prev, nxt in zip(built, built[1:], strict=False):
                prev.relationships[NodeRelationship.NEXT] = nxt.as_related_node_info()
                nxt.relationships[NodeRelationship.PREVIOUS] = prev.as_related_node_info()
        return built

    def _node(
        self,
        chunk: Chunk,
        inherited: dict[str, Any],
        embed_hidden: list[str],
        llm_hidden: list[str],
        base_offset: int,
        source: BaseNode,
        source_info: Any,
    ) -> TextNode:
        meta = chunk_metadata(chunk, flat=self.flat_metadata, line_spans=self.line_boxes)
        body = chunk.body
        if self.heading_context == "text":
            text = chunk.content
        else:
            text, meta["body_start"] = body, 0
        start = base_offset + int(chunk.metadata["start_char"])
        return TextNode(
            id_=chunk.id,
            text=text,
            metadata={**inherited, **meta},
            excluded_embed_metadata_keys=list(embed_hidden),
            excluded_llm_metadata_keys=list(llm_hidden),
            start_char_idx=start,
            end_char_idx=start + len(body),
            relationships={NodeRelationship.SOURCE: source_info},
            metadata_template=source.metadata_template,
            metadata_separator=source.metadata_separator,
            text_template=getattr(source, "text_template", TextNode.model_fields["text_template"].default),
        )


def _keys(*groups: Sequence[str]) -> list[str]:
    """Union of key lists, order kept, without the parse tree key (nodes never carry the tree)."""
    seen: dict[str, None] = {}
    for group in groups:
        for key in group:
            if key != TREE_KEY:
                seen.setdefault(key, None)
    return list(seen)
