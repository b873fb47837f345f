"""Parts of re-split chunk nodes get their own boxes, offsets, pages and token count in metadata
(another splitter copied the parent's); see docs/adapters.md#groundedparts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from grounded.integrations.boxes import own_part_metadata

__all__ = ["GroundedParts", "part_node_metadata"]


def part_node_metadata(node: Any, *, cache_dir: str | None = None, box_mode: str = "auto") -> dict[str, Any]:
    """The metadata ``node`` (a node or ``NodeWithScore``) should carry for its own text: its
    metadata unchanged when it is the chunk its metadata describes (or names no PDF at all), else
    :func:`grounded.metadata.part_metadata` with the span and boxes of its own text
    (:func:`grounded.integrations.boxes.chunk_of`: located or grounded in the PDF behind it; withheld,
    with one :class:`GroundingWarning` naming why, when that is impossible)."""
    inner = getattr(node, "node", node)
    text = inner.get_content(metadata_mode=MetadataMode.NONE)
    made = own_part_metadata(node, text, dict(inner.metadata), cache=cache_dir, box_mode=box_mode)
    return dict(inner.metadata) if made is None else made[0]


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
