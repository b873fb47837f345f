"""Parts of re-split grounded Documents get their own numbers in metadata.

LangChain's own splitters (``RecursiveCharacterTextSplitter`` over the loader's chunk or element
Documents) copy the parent's metadata onto every part: its ``boxes``, ``token_count``,
``start_char``/``end_char`` and pages describe the parent. :class:`GroundedParts` (a document
transformer to run after any splitter) rewrites each part's metadata by the chunk field table
(:mod:`grounded.io.chunk_fields`): the part's own boxes from the parse tree (resolved through the
parse cache, as the splitter does), offsets, pages, LangChain's 0-based ``page`` and token count;
what cannot be recomputed is withheld, with one warning naming the actual cause.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import BaseDocumentTransformer, Document

from grounded.errors import SchemaError
from grounded.io.chunk_metadata import (
    TEXT_HASH_KEY,
    GroundingWarning,
    flatten_metadata,
    part_metadata,
    text_hash,
    unflatten_metadata,
)
from grounded.parsers.cache import TREE_REF_KEY, ParseCache, resolve_tree
from grounded.text.tokenizer import Tokenizer, load_tokenizer

from .documents import SpanBoxer, page_keys

__all__ = ["GroundedParts"]


class GroundedParts(BaseDocumentTransformer):
    """Run after any LangChain splitter over grounded Documents (see the module docstring).
    ``tokenizer``: what ``token_count`` counts with (default: the library's MiniLM tokenizer)."""

    def __init__(self, *, tokenizer: Any = None, cache: ParseCache | None = None, box_mode: str = "auto") -> None:
        self.tokenizer: Tokenizer = load_tokenizer(tokenizer)
        self.cache = cache
        self.box_mode = box_mode
        self._boxers: dict[str, SpanBoxer | None] = {}

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        return [self.part(d) for d in documents]

    def part(self, doc: Document) -> Document:
        """``doc`` with the metadata of its own text (unchanged when it already has it)."""
        recorded = doc.metadata.get(TEXT_HASH_KEY)
        text = doc.page_content
        if recorded is None or str(recorded) == text_hash(text):
            return doc
        meta = unflatten_metadata(doc.metadata)
        tokens = self.tokenizer.count(text)
        boxer = self._boxer(doc.metadata)
        found = _locate(text, meta, boxer.text) if boxer is not None else None
        if boxer is None or found is None:
            cause = ("it records no parse tree" if not doc.metadata.get(TREE_REF_KEY)
                     else "its parse tree is not cached and the PDF is gone or changed" if boxer is None
                     else "its text is not in the source's document text")
            warnings.warn(f"document {doc.id or '?'}: boxes and offsets of the part withheld: {cause}", GroundingWarning, stacklevel=2)
            out = part_metadata(meta, text, token_count=tokens)
            out.pop("page", None)
        else:
            boxes = boxer.boxes(*found)
            out = {**part_metadata(meta, text, span=found, boxes=boxes, token_count=tokens), **page_keys([b.page for b in boxes])}
        flat = any(isinstance(doc.metadata.get(k), str) for k in ("pages", "boxes"))
        return Document(page_content=text, metadata=flatten_metadata(out) if flat else out, id=doc.id)

    def _boxer(self, metadata: dict[str, Any]) -> SpanBoxer | None:
        ref = metadata.get(TREE_REF_KEY)
        if not ref:
            return None
        if str(ref) not in self._boxers:
            try:
                root = resolve_tree(metadata, self.cache)
            except SchemaError:
                root = None
            self._boxers[str(ref)] = None if root is None else SpanBoxer(root, self.tokenizer, self.box_mode)
        return self._boxers[str(ref)]


def _locate(text: str, meta: dict[str, Any], doc_text: str) -> tuple[int, int] | None:
    """Where the part ``text`` lies in the document text: inside its parent's recorded span
    (``start_char``..``end_char``) first, else its first occurrence anywhere."""
    part = text.strip()
    if not part:
        return None
    try:
        lo, hi = int(meta["start_char"]), int(meta["end_char"])
    except (KeyError, TypeError, ValueError):
        lo, hi = 0, 0
    at = doc_text.find(part, lo, max(hi, lo) + 1 + len(part)) if hi > lo else -1
    if at < 0:
        at = doc_text.find(part)
    return (at, at + len(part)) if at >= 0 else None
