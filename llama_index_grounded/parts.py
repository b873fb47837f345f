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

import warnings
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from grounded.errors import SchemaError
from grounded.io.chunk_metadata import TEXT_HASH_KEY, TREE_KEY, GroundingWarning, part_metadata, text_hash
from grounded.parsers.cache import TREE_REF_KEY

from .grounding import _default_chunker, assembler_for, document_text_of, span_of, tree_for

__all__ = ["GroundedParts", "part_node_metadata"]


def part_node_metadata(node: Any, *, cache_dir: str | None = None, box_mode: str = "auto") -> dict[str, Any]:
    """The metadata ``node`` (a node or ``NodeWithScore``) should carry for its own text: its
    metadata unchanged when it is the chunk its metadata describes (or was never a chunk), else
    :func:`grounded.metadata.part_metadata` with the part's span and boxes found in the parse tree
    (recomputed keys withheld, with one :class:`GroundingWarning` naming why, when the tree or the
    text cannot be found)."""
    inner = getattr(node, "node", node)
    meta = dict(inner.metadata)
    text = inner.get_content(metadata_mode=MetadataMode.NONE)
    recorded = meta.get(TEXT_HASH_KEY)
    if recorded is None or str(recorded) == text_hash(text):
        return meta
    chunker = _default_chunker(box_mode)
    tokens = chunker.tokenizer.count(text)
    root = None
    if meta.get(TREE_REF_KEY) or meta.get(TREE_KEY):
        try:
            root = tree_for(meta, cache_dir)
        except SchemaError:
            root = None
    found = span_of(text, meta, document_text_of(root), getattr(inner, "start_char_idx", None)) if root is not None else None
    if found is None:
        cause = ("its source's parse tree is not cached and the PDF is gone or changed" if root is None and meta.get(TREE_REF_KEY)
                 else "it records no parse tree" if root is None else "its text is not in the source's document text")
        warnings.warn(f"node {getattr(inner, 'node_id', '?')}: boxes and offsets of the part withheld: {cause}", GroundingWarning, stacklevel=2)
        return part_metadata(meta, text, token_count=tokens)
    assert root is not None
    boxes = assembler_for(root, chunker).boxes_for_chars(*found)
    return part_metadata(meta, text, span=found, boxes=boxes, token_count=tokens)


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
