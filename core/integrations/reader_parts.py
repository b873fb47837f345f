"""What LlamaIndex's ``GroundedPDFReader`` makes of a parse tree, framework-free: the Documents'
ids, texts and metadata (:class:`ReaderPart`), which keys the embedder and the LLM see; the
Documents refer to their tree in the parse cache (``grounded_tree_ref``), never carry it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EmptyDocumentError, InputError
from ..io.tree_payload import TREE_KEY, source_info
from ..model import ParsingResult
from ..parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY, ParseCache
from ..text.stream import document_text
from .profiles import reader_hidden_keys
from .sources import PAGE_KEY, page_tree

__all__ = ["ReaderPart", "reader_parts", "read_stream", "pdf_source"]


@dataclass
class ReaderPart:
    """One reader Document: id, text, metadata and the keys hidden from the embedder / the LLM."""

    id: str
    text: str
    metadata: dict[str, Any]
    embed_hidden: list[str]
    llm_hidden: list[str]


def _doc_id(identity: str, parser: str, page: int | None = None) -> str:
    """Stable per (file path or name, parser, page) - not per content, so ``DocstoreStrategy.UPSERTS``
    replaces the nodes of a PDF rewritten in place (the Document hash changes with the content)."""
    digest = hashlib.sha256(f"{identity}\0{parser}".encode()).hexdigest()[:16]
    name = identity.replace("\\", "/").rsplit("/", 1)[-1][:64] or "document.pdf"
    return f"{name}-{parser}-{digest}" + (f"-p{page}" if page is not None else "")


def reader_parts(
    root: ParsingResult,
    extra_info: Mapping[str, Any] | None = None,
    *,
    keep_tree: bool = True,
    cache: ParseCache | None = None,
    parser_options: Mapping[str, Any] | None = None,
    file_path: str | None = None,
    file_name: str | None = None,
    pdf_info: Mapping[str, Any] | None = None,
    split_pages: bool = False,
) -> list[ReaderPart]:
    """The Documents of one parse tree: one for the whole PDF, or one per page (``split_pages``).

    ``keep_tree=True`` stores the tree in ``cache`` (default :class:`ParseCache`) and records its
    reference; ``keep_tree=False`` records none (the node parser then chunks the text without
    boxes). The text of a Document is the tree's document text (of its page) - what chunk offsets
    index."""
    info = source_info(root)
    sha = info["sha256"]
    path = file_path if file_path is not None else info["path"]
    name = file_name or ("document.pdf" if file_path == "" else info["name"] or (Path(path).name if path else "document.pdf"))
    metadata: dict[str, Any] = {
        "file_name": name,
        "file_path": path,
        "source_sha256": sha,
        "total_pages": info["page_count"],
        "parser": info["parser"],
    }
    metadata.update({k: v for k, v in (pdf_info or {}).items() if v not in (None, "")})
    if keep_tree:
        metadata[TREE_REF_KEY] = (cache or ParseCache()).put(root, parser_options)
        if parser_options:
            metadata[PARSER_OPTIONS_KEY] = json.dumps(dict(parser_options), sort_keys=True, default=repr)
    metadata.update({k: v for k, v in (extra_info or {}).items() if k not in (TREE_KEY, TREE_REF_KEY)})
    # bytes without a name: the content is all that names them (two unnamed PDFs never share an id)
    identity = os.path.abspath(path) if path else (file_name or sha)
    parts: list[tuple[int | None, ParsingResult]]
    if split_pages:
        parts = [(page, page_tree(root, page)) for page in range(1, int(info["page_count"]) + 1)]
    else:
        parts = [(None, root)]
    docs = []
    for page, tree in parts:
        text = document_text(tree).text
        if not text.strip():
            continue
        meta = dict(metadata)
        if page is not None:
            meta["page_label"] = str(page)
            meta[PAGE_KEY] = page
        docs.append(
            ReaderPart(
                _doc_id(identity, str(meta.get("parser") or ""), page),
                text,
                meta,
                *reader_hidden_keys(meta),
            )
        )
    if not docs:
        raise EmptyDocumentError(path or name or "<tree>", "no text was extracted, nothing to index")
    return docs


def read_stream(stream: Any) -> bytes:
    data = stream.read()
    if isinstance(data, str):
        raise InputError(str(getattr(stream, "name", "<stream>")), "open the PDF in binary mode ('rb')")
    return bytes(data)


def pdf_source(source: Any, name: str | None) -> tuple[str | bytes, str, str, bytes | None]:
    """What the reader parses: ``(PDF path or bytes, absolute file path or "", file name, the bytes
    when given as bytes or a file object)``; the file name of a file object when ``name`` is None."""
    data: bytes | None = None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif hasattr(source, "read"):
        data = read_stream(source)
        name = name or Path(str(getattr(source, "name", "") or "")).name or None
    path = None if data is not None else str(source)
    label = name or (Path(path).name if path else "")
    return (data if data is not None else str(path)), os.path.abspath(path) if path else "", label, data
