"""``GroundedPDFReader``: one LlamaIndex ``Document`` per PDF, carrying its parse tree."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document

from grounded.chunking.stream import document_text
from grounded.errors import EmptyDocumentError, InputError
from grounded.metadata import TREE_KEY, encode_tree, source_info
from grounded.model import ParsingResult
from grounded.parsers import BaseParser, get_parser

__all__ = ["GroundedPDFReader", "document_from_tree", "DOCUMENT_KEYS"]

#: metadata the reader sets (besides ``extra_info``); only ``file_name`` is shown to the LLM
DOCUMENT_KEYS = ("file_name", "file_path", "source_sha256", "page_count", "parser", "parser_version", TREE_KEY)
_LLM_VISIBLE = ("file_name",)


def document_from_tree(root: ParsingResult, extra_info: Mapping[str, Any] | None = None, *, keep_tree: bool = True) -> Document:
    """A Document whose ``text`` is the tree's document text (what chunk offsets index).

    The compressed tree rides along in ``metadata["grounded_tree"]`` (hidden from embedder and
    LLM) so :class:`~llama_index_grounded.GroundedNodeParser` can chunk with boxes - also in
    ``IngestionPipeline`` worker processes and from its cache, since it is a plain string.
    """
    info = source_info(root)
    sha = info["sha256"]
    text = document_text(root).text
    if not text.strip():
        raise EmptyDocumentError(info["path"] or "<tree>", "no text was extracted, nothing to index")
    metadata: dict[str, Any] = {
        "file_name": info["name"],
        "file_path": info["path"],
        "source_sha256": sha,
        "page_count": info["page_count"],
        "parser": info["parser"],
        "parser_version": info["parser_version"],
    }
    metadata.update({k: v for k, v in (extra_info or {}).items() if k != TREE_KEY})
    if keep_tree:
        metadata[TREE_KEY] = encode_tree(root)
    hidden = [k for k in metadata if k in DOCUMENT_KEYS and k not in _LLM_VISIBLE]
    doc_id = f"{sha[:20]}-{metadata['parser']}" if sha else None
    kwargs: dict[str, Any] = {"id_": doc_id} if doc_id else {}
    return Document(
        text=text,
        metadata=metadata,
        excluded_embed_metadata_keys=[k for k in metadata if k in DOCUMENT_KEYS],
        excluded_llm_metadata_keys=hidden,
        **kwargs,
    )


class GroundedPDFReader(BaseReader):
    """Parse PDFs with a grounded backend (default ``pymupdf``) into Documents for
    :class:`~llama_index_grounded.GroundedNodeParser`.

    ``parser`` is a registry name or a built :class:`~grounded.parsers.BaseParser`;
    ``parser_options`` go to the backend's constructor. ``keep_tree=False`` drops the parse tree
    (Documents get smaller but the node parser then chunks them as plain text, without boxes).
    Works as a ``SimpleDirectoryReader`` file extractor: ``file_extractor={".pdf": reader}``.
    """

    def __init__(
        self, parser: str | BaseParser = "pymupdf", *, parser_options: Mapping[str, Any] | None = None, keep_tree: bool = True
    ) -> None:
        if isinstance(parser, BaseParser):
            if parser_options:
                raise ValueError("parser_options cannot be combined with a built parser")
            self._parser: BaseParser | None = parser
            self.parser_name = parser.name
        else:
            self._parser = None
            self.parser_name = parser
        self.parser_options = dict(parser_options or {})
        self.keep_tree = keep_tree

    @property
    def parser(self) -> BaseParser:
        if self._parser is None:
            self._parser = get_parser(self.parser_name, **self.parser_options)
        return self._parser

    def lazy_load_data(
        self, file_path: str | Path | Iterable[str | Path], extra_info: Mapping[str, Any] | None = None, fs: Any = None
    ) -> Iterator[Document]:
        """Yield one Document per PDF (``file_path`` may be one path or several); ``fs`` (a
        non-local fsspec filesystem passed by SimpleDirectoryReader) is refused: parsers read local files."""
        paths = [file_path] if isinstance(file_path, (str, Path)) else list(file_path)
        for path in paths:
            if fs is not None:
                raise InputError(path, "remote filesystems are not supported; copy the PDF to a local path first")
            root = self.parser.parse(path)
            yield document_from_tree(root, extra_info, keep_tree=self.keep_tree)
