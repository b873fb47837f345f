"""The boxes of any node's own text, and :class:`GroundingNodeParser` (any node parser, its nodes
grounded in the PDF).

Both sit on the adapter core (:mod:`grounded.grounding.sources`, :mod:`grounded.grounding.stored`):
a node's PDF is found through grounded's tree reference (``grounded_tree_ref`` of
:class:`~llama_index_grounded.GroundedPDFReader`) or, for Documents of LlamaIndex's own readers
(``SimpleDirectoryReader``, ``PyMuPDFReader``, pymupdf4llm's ``LlamaMarkdownReader``), through the
``file_path`` their metadata names. :func:`node_boxes` gives the boxes of a node's *own* text (a part
made by ``SentenceSplitter``, a ``CitationQueryEngine`` citation chunk, a node of the default
splitter): never the boxes of a parent.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode

from grounded.errors import SchemaError
from grounded.grounding.adapter import (
    GROUNDING_KEYS,
    PAGE_KEY,
    PARSER_OPTIONS_KEY,
    PAYLOAD_KEYS,
    TREE_REF_KEY,
    GroundingWarning,
    SourceView,
    boxes_of,
    document_text,
    document_view,
    flatten_metadata,
    ground_records,
    locate,
    page_tree,
    part_fields,
    refused_records,
    splitter_fingerprint,
    stable_hash,
)
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
    """The boxes of ``node``'s own text (a LlamaIndex node, or a ``NodeWithScore``), whatever made it:
    its recorded ``boxes`` when they were made for its text, else the boxes of its text made again
    from the PDF behind it (located exactly, else grounded), else ``[]`` with one
    :class:`~grounded.metadata.GroundingWarning` naming the node and the cause
    (:func:`grounded.grounding.stored.boxes_of`)."""
    return boxes_of(node, cache=cache_dir, box_mode=box_mode)


# -- GroundingNodeParser: any node parser, its nodes grounded in the PDF ------------------------------

#: node metadata an embedder / LLM never sees (machine payload of the grounding)
GROUNDING_HIDDEN = (
    *PAYLOAD_KEYS, TREE_REF_KEY, PARSER_OPTIONS_KEY, PAGE_KEY, *GROUNDING_KEYS,
    "source_sha256", "file_path", "total_pages", "parser",
)
#: keys describing the parent's own text: recomputed for each node (or dropped when refused)
_PARENT_KEYS = (*PAYLOAD_KEYS, *GROUNDING_KEYS, "pages", "section")


class GroundingNodeParser(NodeParser):
    """Wraps any LlamaIndex node parser (``SentenceSplitter``, ``MarkdownNodeParser``,
    ``SemanticSplitterNodeParser``, ...) so every node it makes carries the boxes, pages and char
    offsets of its own text, grounded (:mod:`grounded.grounding`) in the parse tree its source
    Document refers to (``grounded_tree_ref`` of :class:`~llama_index_grounded.GroundedPDFReader`;
    ``tree=`` for Documents without one). The Document's text may be the reader's text or any
    rendering of the same PDF (Markdown from ``pymupdf4llm.to_markdown``).

    Each node keeps the wrapped parser's id, text, relationships and metadata and gets (flat,
    store-safe): ``chunk_id``, ``strategy`` (``grounding:<parser class>``), ``token_count``,
    ``start_char``/``end_char`` and ``start_char_idx``/``end_char_idx`` (the grounded span in the
    tree's document text - the reader Document's own text - never found with ``str.find``),
    ``body_start`` 0, ``pages``, ``page_start``/``page_end``, ``element_ids``, ``boxes``, ``text_hash``,
    ``grounding_status``, ``grounding_score``, ``grounding_reason`` and ``grounding_spans`` - the
    fields of the node's chunk record (:func:`grounded.io.chunk_metadata.part_fields`); the payload
    keys are excluded from embedding and LLM metadata. A node that cannot be grounded gets no boxes, offsets or
    pages, ``grounding_status="refused"`` and the reason (one
    :class:`~grounded.metadata.GroundingWarning` per call).
    """

    node_parser: NodeParser = Field(description="the wrapped node parser")
    min_score: float | None = Field(default=None, description="Grounder min_score (default: the Grounder's)")
    box_mode: str = Field(default="auto", description="box mode of the grounded boxes")
    cache_dir: str | None = Field(default=None, description="parse cache directory (default: the reader's default)")
    line_boxes: bool = Field(default=True, description="keep each box's line boxes")
    tree: Any = Field(default=None, exclude=True, description="parse tree for Documents without grounded_tree_ref")
    password: str | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="password of encrypted source PDFs: grounding reads their page furniture (never serialized)",
    )
    def __init__(self, node_parser: NodeParser, *, tree: ParsingResult | None = None, **data: Any) -> None:
        if isinstance(node_parser, GroundingNodeParser):
            raise SchemaError("the node parser is already a GroundingNodeParser")
        if tree is not None and not isinstance(tree, ParsingResult):
            raise SchemaError(f"tree must be a grounded ParsingResult, got {type(tree).__name__}")
        super().__init__(node_parser=node_parser, tree=tree, **data)  # type: ignore[call-arg]

    @classmethod
    def class_name(cls) -> str:
        return "GroundingNodeParser"

    def _view(self, meta: Mapping[str, Any]) -> tuple[SourceView | None, str]:
        try:
            return document_view(meta, tree=self.tree, cache=self.cache_dir, password=self.password)
        except SchemaError as exc:
            return None, f"its parse tree cannot be read ({exc})"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        refused: list[str] = []
        for node in nodes:
            out.extend(self._ground(node, refused))
        if refused:
            warnings.warn(
                f"{len(refused)} of {len(out)} nodes could not be grounded and carry no boxes "
                f"(grounding_status='refused'; first reason: {refused[0]})",
                GroundingWarning,
                stacklevel=4,
            )
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # the wrapped parser linked and merged already; offsets come from the grounding, not str.find
        return nodes

    def _ground(self, source: BaseNode, refused: list[str]) -> list[BaseNode]:
        parts = self.node_parser.get_nodes_from_documents([source])  # type: ignore[list-item]
        view, why = self._view(source.metadata)
        texts = [p.get_content(metadata_mode=MetadataMode.NONE) for p in parts]
        fingerprint = splitter_fingerprint(self.node_parser)
        strategy = f"grounding:{type(self.node_parser).__name__}"
        if view is None:
            records = refused_records(texts, why, key=stable_hash([source.node_id, texts], 24), fingerprint=fingerprint, strategy=strategy)
        else:
            grounder = view.grounder(box_mode=self.box_mode, min_score=self.min_score, password=self.password)
            records = ground_records(grounder, texts, fingerprint=fingerprint, strategy=strategy)
        for part, (record, g) in zip(parts, records, strict=True):
            if not g.ok:  # status "furniture" (page text outside the tree) has boxes of its own
                refused.append(g.reason)
            meta = {k: v for k, v in part.metadata.items() if k not in _PARENT_KEYS}
            meta.update(part_fields(record, flat=True, line_spans=self.line_boxes))
            part.metadata = flatten_metadata(meta)
            if isinstance(part, TextNode):
                part.start_char_idx = record.start_char
                part.end_char_idx = record.end_char
            part.excluded_embed_metadata_keys = list(
                dict.fromkeys([*part.excluded_embed_metadata_keys, *(k for k in (*GROUNDING_HIDDEN, "pages") if k in part.metadata)])
            )
            part.excluded_llm_metadata_keys = list(
                dict.fromkeys([*part.excluded_llm_metadata_keys, *(k for k in GROUNDING_HIDDEN if k in part.metadata)])
            )
        return list(parts)
