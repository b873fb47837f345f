"""The boxes of any node's own text (:func:`node_boxes`) and :class:`GroundingNodeParser` (any node
parser, its nodes grounded in the PDF), on the adapter core; see docs/adapters.md#node_boxes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode

from grounded.chunking import document_text
from grounded.errors import SchemaError
from grounded.integrations import splitter_fingerprint, stable_hash
from grounded.integrations.boxes import boxes_of, ground_parts, warn_refused
from grounded.integrations.profiles import grounded_node_fields
from grounded.integrations.sources import PAGE_KEY, document_view, locate, page_tree
from grounded.metadata import GroundingWarning
from grounded.model import ParsingBoundingBox, ParsingResult

__all__ = [
    "PAGE_KEY",
    "tree_for",
    "page_tree",
    "document_text_of",
    "locate",
    "node_boxes",
    "GroundingWarning",
    "GroundingNodeParser",
]


def tree_for(metadata: Mapping[str, Any], cache_dir: str | None = None) -> ParsingResult | None:
    """The parse tree a Document's (or node's) metadata refers to - grounded's tree reference, a tree
    embedded by an older release, or the PDF a framework reader named (parsed once, cached) -
    restricted to its page for a grounded per-page Document; ``None`` when there is none."""
    view, _ = document_view(metadata, cache=cache_dir)
    return None if view is None else view.root


def document_text_of(root: ParsingResult) -> str:
    """``document_text(root).text`` (kept with the tree's view when it has one)."""
    return document_text(root).text


def node_boxes(node: Any, *, cache_dir: str | None = None, box_mode: str = "auto") -> list[ParsingBoundingBox]:
    """The boxes of ``node``'s own text (a node or ``NodeWithScore``), whatever made it: recorded, else
    made again from the PDF behind it, else ``[]`` with one ``GroundingWarning`` naming the cause
    (:func:`grounded.integrations.boxes.boxes_of`)."""
    return boxes_of(node, cache=cache_dir, box_mode=box_mode)


# -- GroundingNodeParser: any node parser, its nodes grounded in the PDF ------------------------------

class GroundingNodeParser(NodeParser):
    """Wraps any LlamaIndex node parser (``SentenceSplitter``, ``MarkdownNodeParser``, ...) so every
    node it makes keeps its id, text and relationships and gets the boxes, pages and offsets of its
    own text, grounded in the PDF behind its source Document (``tree=`` for Documents without one);
    a node that cannot be grounded gets ``grounding_status="refused"`` and the reason (one
    :class:`GroundingWarning` per call). Metadata: docs/adapters.md#groundingnodeparser."""

    node_parser: NodeParser = Field(description="the wrapped node parser")
    min_score: float | None = Field(default=None, description="Grounder min_score (default: the Grounder's)")
    box_mode: str = Field(default="auto", description="box mode of the grounded boxes")
    cache_dir: str | None = Field(default=None, description="parse cache directory (default: the reader's default)")
    line_boxes: bool = Field(default=True, description="keep each box's line boxes")
    tree: Any = Field(default=None, exclude=True, description="parse tree for Documents without grounded_tree_ref")
    password: str | None = Field(default=None, exclude=True, repr=False, description="password of encrypted source PDFs")

    def __init__(self, node_parser: NodeParser, *, tree: ParsingResult | None = None, **data: Any) -> None:
        if isinstance(node_parser, GroundingNodeParser):
            raise SchemaError("the node parser is already a GroundingNodeParser")
        if tree is not None and not isinstance(tree, ParsingResult):
            raise SchemaError(f"tree must be a grounded ParsingResult, got {type(tree).__name__}")
        super().__init__(node_parser=node_parser, tree=tree, **data)  # type: ignore[call-arg]

    @classmethod
    def class_name(cls) -> str:
        return "GroundingNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        refused: list[str] = []
        for node in nodes:
            out.extend(self._ground(node, refused))
        warn_refused(refused, len(out), "nodes")
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # the wrapped parser linked and merged already; offsets come from the grounding, not str.find
        return nodes

    def _ground(self, source: BaseNode, refused: list[str]) -> list[BaseNode]:
        parts = self.node_parser.get_nodes_from_documents([source])  # type: ignore[list-item]
        texts = [p.get_content(metadata_mode=MetadataMode.NONE) for p in parts]
        records = ground_parts(
            source.metadata, texts, tree=self.tree, cache=self.cache_dir, password=self.password,
            fingerprint=splitter_fingerprint(self.node_parser), strategy=f"grounding:{type(self.node_parser).__name__}",
            refused_key=stable_hash([source.node_id, texts], 24), box_mode=self.box_mode, min_score=self.min_score,
        )
        for part, (record, g) in zip(parts, records, strict=True):
            if not g.ok:  # status "furniture" (page text outside the tree) has boxes of its own
                refused.append(g.reason)
            part.metadata, part.excluded_embed_metadata_keys, part.excluded_llm_metadata_keys = grounded_node_fields(
                part.metadata, record, part.excluded_embed_metadata_keys, part.excluded_llm_metadata_keys, line_spans=self.line_boxes
            )
            if isinstance(part, TextNode):
                part.start_char_idx = record.start_char
                part.end_char_idx = record.end_char
        return list(parts)
