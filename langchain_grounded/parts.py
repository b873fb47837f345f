"""Parts of re-split grounded Documents get their own numbers in metadata.

LangChain's own splitters (``RecursiveCharacterTextSplitter`` over the loader's chunk or element
Documents) copy the parent's metadata onto every part: its ``boxes``, ``token_count``,
``start_char``/``end_char`` and pages describe the parent. :class:`GroundedParts` (a document
transformer to run after any splitter) rewrites each part's metadata by the chunk field table
(:mod:`grounded.model.chunk_fields`): the part's own boxes from the parse tree (resolved through the
parse cache, as the splitter does), offsets, pages, LangChain's 0-based ``page`` and token count;
what cannot be recomputed is withheld, with one warning naming the actual cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import BaseDocumentTransformer, Document

from grounded.chunking import Tokenizer, load_tokenizer
from grounded.integrations import ParseCache
from grounded.integrations.boxes import own_part_metadata
from grounded.integrations.profiles import page_keys
from grounded.metadata import flatten_metadata, unflatten_metadata

__all__ = ["GroundedParts"]


class GroundedParts(BaseDocumentTransformer):
    """Run after any LangChain splitter over grounded Documents (see the module docstring).
    ``tokenizer``: what ``token_count`` counts with (default: the library's MiniLM tokenizer)."""

    def __init__(self, *, tokenizer: Any = None, cache: ParseCache | None = None, box_mode: str = "auto") -> None:
        self.tokenizer: Tokenizer = load_tokenizer(tokenizer)
        self.cache = cache
        self.box_mode = box_mode

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        return [self.part(d) for d in documents]

    def part(self, doc: Document) -> Document:
        """``doc`` with the metadata of its own text (unchanged when it already has it, or when its
        metadata names no PDF): offsets, boxes, pages located or grounded in the PDF behind it
        (:func:`grounded.integrations.boxes.chunk_of`), withheld with one warning when impossible."""
        text = doc.page_content
        made = own_part_metadata(doc, text, unflatten_metadata(doc.metadata), self.tokenizer, cache=self.cache, box_mode=self.box_mode)
        if made is None:
            return doc
        out, pages = made
        if pages is None:
            out.pop("page", None)
        else:
            out.update(page_keys(pages))
        flat = any(isinstance(doc.metadata.get(k), str) for k in ("pages", "boxes"))
        return Document(page_content=text, metadata=flatten_metadata(out) if flat else out, id=doc.id)
