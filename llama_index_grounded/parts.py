"""Parts of re-split chunk nodes get their own numbers in metadata.

A LlamaIndex splitter run over :class:`~llama_index_grounded.GroundedNodeParser` nodes
(``SentenceSplitter(chunk_size=128)`` in an ``IngestionPipeline``, ``CitationQueryEngine``'s
citation chunks) copies the parent's metadata onto every part: its ``boxes``, ``token_count`` and
``start_char`` describe the parent. :func:`part_metadata` / :class:`GroundedParts` rewrite a part's
metadata by the chunk field table (:mod:`grounded.io.chunk_fields`): the part's own boxes (from the
parse tree, as :func:`~llama_index_grounded.node_boxes`), offsets, pages and token count; the
parent's heading path and source keys are kept; what cannot be recomputed is withheld.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from grounded.grounding.adapter import (
    TEXT_HASH_KEY,
    load_tokenizer,
    names_pdf,
    part_metadata,
    record_of,
    text_hash,
)

__all__ = ["GroundedParts", "part_node_metadata"]


def part_node_metadata(node: Any, *, cache_dir: str | None = None, box_mode: str = "auto") -> dict[str, Any]:
    """The metadata ``node`` (a node or ``NodeWithScore``) should carry for its own text: its
    metadata unchanged when it is the chunk its metadata describes (or names no PDF at all), else
    :func:`grounded.metadata.part_metadata` with the span and boxes of its own text
    (:func:`grounded.grounding.stored.record_of`: located or grounded in the PDF behind it; withheld,
    with one :class:`GroundingWarning` naming why, when that is impossible)."""
    inner = getattr(node, "node", node)
    meta = dict(inner.metadata)
    text = inner.get_content(metadata_mode=MetadataMode.NONE)
    recorded = meta.get(TEXT_HASH_KEY)
    if (recorded is not None and str(recorded) == text_hash(text)) or (recorded is None and not names_pdf(meta)):
        return meta
    tokens = load_tokenizer(None).count(text)
    record = record_of(node, cache=cache_dir, box_mode=box_mode)
    if record.start_char is None or record.end_char is None:
        return part_metadata(meta, text, token_count=tokens)
    return part_metadata(meta, text, span=(record.start_char, record.end_char), boxes=record.boxes, token_count=tokens)


class GroundedParts(TransformComponent):
    """A pipeline step after any splitter: each part of a re-split grounded node gets its own
    boxes, offsets, pages and token count in metadata (see the module docstring)."""

    box_mode: str = "auto"
    cache_dir: str | None = None

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        for node in nodes:
            meta = part_node_metadata(node, cache_dir=self.cache_dir, box_mode=self.box_mode)
            if meta != node.metadata:
                node.metadata = meta
                hidden = [k for k in meta if k in set(node.excluded_embed_metadata_keys)]
                node.excluded_embed_metadata_keys = hidden
                node.excluded_llm_metadata_keys = [k for k in meta if k in set(node.excluded_llm_metadata_keys)]
        return list(nodes)
