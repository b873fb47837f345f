"""``GroundedPDFReader``: PDFs -> LlamaIndex Documents that refer to their parse tree.

A Document never carries the tree: the reader stores it in a :class:`~grounded.parsers.cache.ParseCache`
and puts a ~100-byte reference (``grounded_tree_ref``) into the metadata, so docstores, ingestion
caches, vector stores and node relationships stay small whatever the splitter.
:class:`~llama_index_grounded.GroundedNodeParser` resolves the reference to chunk with boxes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.readers.base import BasePydanticReader
from llama_index.core.schema import Document

from grounded.errors import InputError
from grounded.integrations import ParseCache
from grounded.integrations.loaders import OCRMode, ParserChoice, cached_parse, given_parser, with_ocr
from grounded.integrations.profiles import DOCUMENT_KEYS, LLM_VISIBLE_KEYS
from grounded.integrations.reader_parts import pdf_source, reader_parts
from grounded.metadata import pdf_metadata
from grounded.model import ParsingResult
from grounded.parsers import BaseParser, public_options

__all__ = ["GroundedPDFReader", "document_from_tree", "DOCUMENT_KEYS", "LLM_VISIBLE_KEYS"]

def document_from_tree(root: ParsingResult, extra_info: Mapping[str, Any] | None = None, **options: Any) -> list[Document]:
    """Documents for one parse tree (:func:`grounded.integrations.reader_parts.reader_parts`: one
    for the whole PDF, or one per page with ``split_pages``; ``keep_tree=True`` stores the tree in
    ``cache`` and records its reference). The text of a Document is the tree's document text."""
    return [
        Document(id_=p.id, text=p.text, metadata=p.metadata, excluded_embed_metadata_keys=p.embed_hidden,
                 excluded_llm_metadata_keys=p.llm_hidden)
        for p in reader_parts(root, extra_info, **options)
    ]


class GroundedPDFReader(BasePydanticReader):
    """Parse PDFs with a grounded backend (default ``pymupdf``) into Documents for
    :class:`~llama_index_grounded.GroundedNodeParser`: one per PDF (or per page, ``split_pages``),
    the parse tree kept in the parse cache and referenced (``keep_tree``), an unchanged PDF not
    parsed again (``use_cache``); ``parser``, ``parser_options``, ``ocr``; ``load_data`` takes paths,
    bytes or binary files (``name=``, ``password=``). Works as a ``SimpleDirectoryReader`` file
    extractor. Metadata and the rest: docs/adapters.md#groundedpdfreader."""

    parser: str = Field(default="pymupdf", description="Parser registry name (or the name of the given parser).")
    parser_options: dict[str, Any] = Field(default_factory=dict, description="Options for the parser's constructor.")
    ocr: OCRMode | None = Field(default=None, description="OCR of scanned pages (pymupdf parser): auto, always or never.")
    split_pages: bool = Field(default=False, description="One Document per page instead of one per PDF.")
    keep_tree: bool = Field(default=True, description="Cache the parse tree and reference it (boxes for the node parser).")
    use_cache: bool = Field(default=True, description="Reuse the cached parse of an unchanged PDF.")
    cache_dir: str | None = Field(default=None, description="Parse cache folder (default $GROUNDED_CACHE_DIR/parses).")
    read_pdf_metadata: bool = Field(default=True, description="Add the PDF's title, author, dates, ... to the metadata.")

    _choice: ParserChoice = PrivateAttr()

    def __init__(self, parser: str | BaseParser = "pymupdf", **data: Any) -> None:
        data["parser"], given = given_parser(parser, data.get("parser_options"), data.get("ocr"))
        super().__init__(**data)
        self._choice = ParserChoice(self.parser, self.parser_config(), given)  # bad options or ocr fail here

    @classmethod
    def class_name(cls) -> str:
        return "GroundedPDFReader"

    def get_parser(self) -> BaseParser:
        """The parser of the current ``parser``, ``parser_options`` and ``ocr``: built again when
        they change (assigned, or ``model_copy(update=...)``), never a parser of older settings."""
        return self._choice.get(self.parser, self.parser_config())

    def parser_config(self) -> dict[str, Any]:
        """The parser's constructor options: ``parser_options`` plus ``ocr`` when set."""
        return with_ocr(self.parser_options, self.ocr)

    # -- input -----------------------------------------------------------------------------------
    def _parse(self, source: Any, *, password: str | None, name: str | None) -> tuple[ParsingResult, str, str, bytes | None]:
        """-> (tree, absolute file path or "", file name, the PDF bytes when given as bytes or a
        file object). The PDF is read once here (for the parse cache); parsing, password checks
        and decryption are the parser's."""
        pdf, path, label, data = pdf_source(source, name)
        cache = self._cache() if self.use_cache and self.keep_tree else None
        root = cached_parse(
            self.get_parser(), pdf, cache=cache, options=self.parser_config(), password=password, name=label or None
        )
        return root, path, label, data

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
                root, extra_info, keep_tree=self.keep_tree, cache=self._cache(), file_path=path, file_name=file_name,
                parser_options=public_options(self.parser, self.parser_config()),  # no API key in metadata
                pdf_info=pdf_info, split_pages=self.split_pages,
            )

    def load_data(self, *args: Any, **kwargs: Any) -> list[Document]:
        return list(self.lazy_load_data(*args, **kwargs))
