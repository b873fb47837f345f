"""``GroundedPDFReader``: PDFs -> LlamaIndex Documents that refer to their parse tree.

A Document never carries the tree: the reader stores it in a :class:`~grounded.parsers.cache.ParseCache`
and puts a ~100-byte reference (``grounded_tree_ref``) into the metadata, so docstores, ingestion
caches, vector stores and node relationships stay small whatever the splitter.
:class:`~llama_index_grounded.GroundedNodeParser` resolves the reference to chunk with boxes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.readers.base import BasePydanticReader
from llama_index.core.schema import Document

from grounded.errors import EmptyDocumentError, InputError
from grounded.grounding.adapter import (
    PAGE_KEY,
    PARSER_OPTIONS_KEY,
    TREE_KEY,
    TREE_REF_KEY,
    BaseParser,
    OCRMode,
    ParseCache,
    cached_parse,
    document_text,
    get_parser,
    page_tree,
    parser_class,
    pdf_metadata,
    public_options,
    source_info,
    with_ocr,
)
from grounded.model import ParsingResult

__all__ = ["GroundedPDFReader", "document_from_tree", "DOCUMENT_KEYS", "LLM_VISIBLE_KEYS"]

#: metadata the reader sets (besides ``extra_info`` and the PDF's own title/author/... keys)
DOCUMENT_KEYS = (
    "file_name",
    "file_path",
    "source_sha256",
    "total_pages",
    "page_label",
    "parser",
    TREE_REF_KEY,
    PARSER_OPTIONS_KEY,
    PAGE_KEY,
    TREE_KEY,
)
#: reader keys an LLM sees (to cite): the file name, the page of a per-page Document, the title
LLM_VISIBLE_KEYS = ("file_name", "page_label", "title")
_PDF_KEYS = ("title", "author", "subject", "keywords", "creator", "producer", "creationdate", "moddate")


def _doc_id(identity: str, parser: str, page: int | None = None) -> str:
    """Stable per (file path or name, parser, page) - not per content, so ``DocstoreStrategy.UPSERTS``
    replaces the nodes of a PDF rewritten in place (the Document hash changes with the content)."""
    digest = hashlib.sha256(f"{identity}\0{parser}".encode()).hexdigest()[:16]
    name = identity.replace("\\", "/").rsplit("/", 1)[-1][:64] or "document.pdf"
    return f"{name}-{parser}-{digest}" + (f"-p{page}" if page is not None else "")


def document_from_tree(
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
) -> list[Document]:
    """Documents for one parse tree: one for the whole PDF, or one per page (``split_pages``).

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
            Document(
                id_=_doc_id(identity, str(meta.get("parser") or ""), page),
                text=text,
                metadata=meta,
                excluded_embed_metadata_keys=[k for k in meta if k in DOCUMENT_KEYS or k in _PDF_KEYS],
                excluded_llm_metadata_keys=[k for k in meta if (k in DOCUMENT_KEYS or k in _PDF_KEYS) and k not in LLM_VISIBLE_KEYS],
            )
        )
    if not docs:
        raise EmptyDocumentError(path or name or "<tree>", "no text was extracted, nothing to index")
    return docs


class GroundedPDFReader(BasePydanticReader):
    """Parse PDFs with a grounded backend (default ``pymupdf``) into Documents for
    :class:`~llama_index_grounded.GroundedNodeParser`.

    * ``parser``: a registry name or a built :class:`~grounded.parsers.BaseParser`;
      ``parser_options`` go to the backend's constructor; ``ocr`` ("auto", "always", "never")
      is added to them when set (the pymupdf parser's OCR of scanned pages).
    * ``split_pages=True``: one Document per page (``page_label`` "1", "2", ...), like LlamaIndex's
      PDF readers; default one Document per PDF.
    * ``keep_tree`` (default True): keep the parse tree in the parse cache (``cache_dir``, default
      ``$GROUNDED_CACHE_DIR/parses`` or ``~/.cache/grounded/parses``) and record only its reference
      in the metadata. The tree never enters a Document, node, docstore or vector store. With
      ``keep_tree=False`` nothing is cached and the node parser chunks the text without boxes.
    * ``use_cache`` (default True): an unchanged PDF (same bytes, parser, options and grounded
      version) is not parsed again.

    Metadata: ``file_name``, ``file_path`` (absolute), ``total_pages``, ``parser``,
    ``source_sha256``, the PDF's own ``title``/``author``/``subject``/``keywords``/``creator``/
    ``producer``/``creationdate``/``moddate`` when set, ``page_label`` for page Documents; none of
    them is embedded, the LLM sees ``file_name``, ``page_label`` and ``title``.

    ``load_data`` takes a path, several paths, PDF bytes or a binary file object (``name=`` names
    those), and ``password=`` for encrypted PDFs. Works as a ``SimpleDirectoryReader`` file
    extractor (``file_extractor={".pdf": reader}``) and in ``IngestionPipeline(readers=[ReaderConfig(
    reader=GroundedPDFReader(), reader_kwargs={"file_path": ...})])``.
    """

    parser: str = Field(default="pymupdf", description="Parser registry name (or the name of the given parser).")
    parser_options: dict[str, Any] = Field(default_factory=dict, description="Options for the parser's constructor.")
    ocr: OCRMode | None = Field(default=None, description="OCR of scanned pages (pymupdf parser): auto, always or never.")
    split_pages: bool = Field(default=False, description="One Document per page instead of one per PDF.")
    keep_tree: bool = Field(default=True, description="Cache the parse tree and reference it (boxes for the node parser).")
    use_cache: bool = Field(default=True, description="Reuse the cached parse of an unchanged PDF.")
    cache_dir: str | None = Field(default=None, description="Parse cache folder (default $GROUNDED_CACHE_DIR/parses).")
    read_pdf_metadata: bool = Field(default=True, description="Add the PDF's title, author, dates, ... to the metadata.")

    #: the parser given built (used while ``parser`` names it and no options are set)
    _given: BaseParser | None = PrivateAttr(default=None)
    #: the last parser built from the registry, keyed by its name and options
    _built: tuple[str, BaseParser] | None = PrivateAttr(default=None)

    def __init__(self, parser: str | BaseParser = "pymupdf", **data: Any) -> None:
        built: BaseParser | None = None
        if isinstance(parser, BaseParser):
            if data.get("parser_options") or data.get("ocr") is not None:
                raise ValueError("parser_options and ocr cannot be combined with a built parser (configure the parser)")
            built, parser = parser, parser.name
        data["parser"] = parser
        super().__init__(**data)
        config = self.parser_config()  # a contradicting ocr fails here, not at the first load
        if built is None:  # options the parser does not declare fail here too (a typed OptionError)
            parser_class(self.parser).check_options(config)
        self._given = built

    @classmethod
    def class_name(cls) -> str:
        return "GroundedPDFReader"

    def get_parser(self) -> BaseParser:
        """The parser of the current ``parser``, ``parser_options`` and ``ocr``: built again when
        they change (assigned, or ``model_copy(update=...)``), never a parser of older settings."""
        config = self.parser_config()
        given = self._given
        if given is not None and self.parser == given.name:
            if config:
                raise ValueError("parser_options and ocr cannot be combined with a built parser (configure the parser)")
            return given
        key = json.dumps([self.parser, config], sort_keys=True, default=repr)
        if self._built is None or self._built[0] != key:
            self._built = (key, get_parser(self.parser, **config))
        return self._built[1]

    def parser_config(self) -> dict[str, Any]:
        """The parser's constructor options: ``parser_options`` plus ``ocr`` when set."""
        return with_ocr(self.parser_options, self.ocr)

    # -- input -----------------------------------------------------------------------------------
    def _parse(self, source: Any, *, password: str | None, name: str | None) -> tuple[ParsingResult, str, str, bytes | None]:
        """-> (tree, absolute file path or "", file name, the PDF bytes when given as bytes or a
        file object). The PDF is read once here (for the parse cache); parsing, password checks
        and decryption are the parser's."""
        data: bytes | None = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
        elif hasattr(source, "read"):
            data = _read_stream(source)
            name = name or Path(str(getattr(source, "name", "") or "")).name or None
        path = None if data is not None else str(source)
        label = name or (Path(path).name if path else "")
        pdf: str | bytes = data if data is not None else str(path)
        cache = self._cache() if self.use_cache and self.keep_tree else None
        root = cached_parse(
            self.get_parser(), pdf, cache=cache, options=self.parser_config(), password=password, name=label or None
        )
        return root, os.path.abspath(path) if path else "", label, data

    def _cache(self) -> ParseCache:
        return ParseCache(self.cache_dir)

    # -- BaseReader ------------------------------------------------------------------------------
    def lazy_load_data(
        self,
        file_path: str | Path | bytes | BinaryIO | Iterable[str | Path],
        extra_info: Mapping[str, Any] | None = None,
        fs: Any = None,
        *,
        password: str | None = None,
        name: str | None = None,
    ) -> Iterator[Document]:
        """Yield the Documents of each PDF (``file_path``: a path, several paths, PDF bytes or a
        binary file object). ``fs`` (a non-local fsspec filesystem passed by SimpleDirectoryReader)
        is refused: parsers read local files."""
        single = isinstance(file_path, (str, Path, bytes, bytearray, memoryview)) or hasattr(file_path, "read")
        sources = [file_path] if single else list(file_path)  # type: ignore[arg-type]
        for source in sources:
            if fs is not None and type(fs).__name__ != "LocalFileSystem":
                raise InputError(str(source), "remote filesystems are not supported; copy the PDF to a local path first")
            root, path, file_name, data = self._parse(source, password=password, name=name)
            pdf_info: dict[str, str] = {}
            if self.read_pdf_metadata:
                pdf_info = pdf_metadata(data if data is not None else path, password=password, root=root)
            yield from document_from_tree(
                root,
                extra_info,
                keep_tree=self.keep_tree,
                cache=self._cache(),
                parser_options=public_options(self.parser, self.parser_config()),  # no API key in metadata
                file_path=path,
                file_name=file_name,
                pdf_info=pdf_info,
                split_pages=self.split_pages,
            )

    def load_data(self, *args: Any, **kwargs: Any) -> list[Document]:
        return list(self.lazy_load_data(*args, **kwargs))


def _read_stream(stream: Any) -> bytes:
    data = stream.read()
    if isinstance(data, str):
        raise InputError(str(getattr(stream, "name", "<stream>")), "open the PDF in binary mode ('rb')")
    return bytes(data)
