"""Parse trees and chunks -> LangChain ``Document`` objects (shared by the loader and the splitter)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.documents import Document

from grounded.metadata import boxes_to_metadata, chunk_metadata, flatten_metadata, source_info
from grounded.model import Chunk, ParsingResult

from .elements import ELEMENT_KEY, iter_blocks

__all__ = ["KIND_KEY", "SOURCE_KEYS", "source_metadata", "chunk_document", "element_documents"]

#: "chunk" or "element": which loader mode produced a document
KIND_KEY = "grounded_kind"
#: document-level keys (copied from the loader's documents onto re-split chunks)
SOURCE_KEYS = ("source", "file_name", "source_sha256", "parser", "page_count")


def source_metadata(root: ParsingResult) -> dict[str, Any]:
    info = source_info(root)
    return {
        "source": info["path"],
        "file_name": info["name"],
        "source_sha256": info["sha256"],
        "parser": info["parser"],
        "page_count": info["page_count"],
    }


def chunk_document(chunk: Chunk, source: Mapping[str, Any], *, flat: bool = False, line_spans: bool = True) -> Document:
    """One chunk as a Document: ``page_content`` is the chunk content (headings prepended by the
    hierarchical strategy included), metadata = source keys + :func:`grounded.metadata.chunk_metadata`."""
    metadata = {**source, **chunk_metadata(chunk, flat=flat, line_spans=line_spans), KIND_KEY: "chunk"}
    metadata["start_index"] = metadata["start_char"]
    return Document(page_content=chunk.content, metadata=metadata, id=chunk.id)


def element_documents(root: ParsingResult, *, flat: bool = False, line_spans: bool = True) -> Iterator[Document]:
    """One Document per block (text element, or a whole table/list), in reading order, with its
    boxes and the lossless payload :class:`~langchain_grounded.GroundedTextSplitter` re-chunks from."""
    source = source_metadata(root)
    sha = source["source_sha256"][:12]
    headings: dict[str, str] = {}
    for block in iter_blocks(root):
        node = block.node
        path = [headings[a.id] for a in reversed(node.ancestors()) if a.id in headings]
        if node.type.value in ("SECTION_HEADER", "TITLE"):
            headings[node.id] = " ".join(node.content.split())
        pages = sorted({b.page for b in block.geom})
        metadata: dict[str, Any] = {
            **source,
            KIND_KEY: "element",
            "element_id": node.id,
            "element_type": node.type.value,
            "start_char": block.start_char,
            "end_char": block.end_char,
            "start_index": block.start_char,
            "pages": pages,
            "page_start": pages[0] if pages else 0,
            "page_end": pages[-1] if pages else 0,
            "section": " > ".join(path),
            "heading_path": path,
            "boxes": boxes_to_metadata(block.geom, line_spans=line_spans),
            ELEMENT_KEY: block.payload(),
        }
        yield Document(
            page_content=block.text,
            metadata=flatten_metadata(metadata) if flat else metadata,
            id=f"{sha}-element-{node.id}" if sha else None,
        )
