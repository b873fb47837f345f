"""``GroundedPDFLoader`` (a ``BaseLoader``) and ``GroundedPDFParser`` (a ``BaseBlobParser`` for
``GenericLoader``): PDFs -> LangChain Documents with exact source boxes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from langchain_core.document_loaders import BaseBlobParser, BaseLoader
from langchain_core.documents import Document
from langchain_core.documents.base import Blob

from grounded.chunking import Chunker
from grounded.integrations import ParseCache
from grounded.integrations.loader_parts import DocPart
from grounded.integrations.loaders import LoaderPipeline, OCRMode, PDFInput, pdf_inputs, read_input
from grounded.integrations.options import aliased
from grounded.parsers import BaseParser

__all__ = ["GroundedPDFLoader", "GroundedPDFParser", "Mode"]

Mode = Literal["chunks", "elements", "page", "single"]


def as_document(part: DocPart) -> Document:
    """A core part as a LangChain Document."""
    return Document(page_content=part.text, metadata=part.metadata, id=part.id)


class _Configured:
    """What a loader and a blob parser show of their settings."""

    _pipeline: LoaderPipeline

    @property
    def mode(self) -> str:
        return self._pipeline.mode

    @property
    def chunker(self) -> Chunker | None:
        return self._pipeline.chunker

    @property
    def parser(self) -> BaseParser:
        return self._pipeline.parser

    @property
    def parser_options(self) -> dict[str, Any]:
        """The parser's constructor options (``parser_options`` plus ``ocr`` when set)."""
        return dict(self._pipeline.parser_options)


class GroundedPDFLoader(_Configured, BaseLoader):
    """Load PDFs with a grounded parser (default ``pymupdf``, offline).

    ``file_path``: a path, the PDF's bytes, a binary file object, a parse tree
    (:class:`~grounded.model.ParsingResult`, e.g. from ``grounded.load_parsing_result``: not parsed
    again), or an iterable of these (``name`` names bytes input in ``source``/``file_name``);
    ``password`` opens encrypted PDFs. ``parser_options`` go to the parser's constructor; ``ocr``
    ("auto", "always", "never": the pymupdf parser's OCR of scanned pages) is added to them when set.

    Modes:

    * ``"chunks"`` (default): one Document per chunk of grounded's chunker (``strategy``,
      ``max_tokens`` (alias ``chunk_size``), ``overlap`` (alias ``chunk_overlap``), ``box_mode``,
      ``tokenizer`` and the strategy's declared options as keywords, e.g. ``percentile=0.8``; an option
      the strategy does not declare is a :class:`~grounded.errors.OptionError`);
    * ``"elements"``: one Document per element (a table or list as one element) for
      :class:`~langchain_grounded.GroundedTextSplitter`, which re-chunks them with exact boxes;
    * ``"page"``: one Document per page (its text and exact boxes), like ``PyMuPDFLoader``'s
      default mode;
    * ``"single"``: one Document per PDF (its whole text, no boxes); ``GroundedTextSplitter`` chunks
      it with boxes from its parse tree.

    Metadata (see :mod:`grounded.integrations.loader_parts`): ``PyMuPDFLoader``'s keys (``source``,
    ``file_path``, ``page`` **0-based**, ``total_pages``, ``title``, ``author``, ``creationdate``,
    ``moddate``, ...) plus grounded's ``pages``/``page_start``/``page_end`` (1-based), ``section``,
    ``heading_path``, ``boxes``, ``text_hash`` and ids. By default every value is a scalar (lists as
    compact JSON strings: any vector store keeps them; read boxes back with
    ``boxes_from_metadata``); ``flat_metadata=False`` keeps lists. ``add_start_index=True`` adds
    ``start_index`` as LangChain's splitters do.

    The parse tree is stored once in a :class:`~grounded.parsers.cache.ParseCache` (``cache``: a
    cache, a directory, ``None`` for the default directory or ``False`` for none) and Documents
    carry only a reference to it, so splitting them again gives exact boxes per part; an unchanged
    PDF (same bytes, parser, options and grounded version) is not parsed again unless
    ``use_cache=False``. ``element_payload=True`` (implied by ``cache=False``) makes element Documents self-contained
    instead: each carries its own subtree (larger metadata) and re-chunks without the cache.
    """

    def __init__(
        self,
        file_path: PDFInput | Iterable[PDFInput],
        *,
        mode: Mode = "chunks",
        parser: str | BaseParser = "pymupdf",
        parser_options: Mapping[str, Any] | None = None,
        ocr: OCRMode | None = None,
        password: str | None = None,
        name: str | None = None,
        strategy: Any = "recursive",
        max_tokens: int | None = None,
        overlap: int | float | None = None,
        box_mode: str = "auto",
        tokenizer: Any = None,
        flat_metadata: bool = True,
        line_boxes: bool = True,
        add_start_index: bool = False,
        cache: ParseCache | str | Path | bool | None = None,
        element_payload: bool = False,
        use_cache: bool = True,
        chunk_size: int | None = None,
        chunk_overlap: int | float | None = None,
        **strategy_options: Any,
    ) -> None:
        max_tokens = aliased("max_tokens", max_tokens, "chunk_size", chunk_size, 256)
        overlap = aliased("overlap", overlap, "chunk_overlap", chunk_overlap, 0)
        self.inputs = pdf_inputs(file_path)
        self.name = name
        self._pipeline = LoaderPipeline(
            mode=mode,
            parser=parser,
            parser_options=parser_options,
            ocr=ocr,
            password=password,
            strategy=strategy,
            max_tokens=max_tokens,
            overlap=overlap,
            box_mode=box_mode,
            tokenizer=tokenizer,
            flat_metadata=flat_metadata,
            line_boxes=line_boxes,
            add_start_index=add_start_index,
            cache=cache,
            element_payload=element_payload,
            use_cache=use_cache,
            strategy_options=strategy_options,
        )

    @property
    def file_paths(self) -> list[Any]:
        return self.inputs

    def lazy_load(self) -> Iterator[Document]:
        for item in self.inputs:
            pdf, name = read_input(item, self.name)
            yield from map(as_document, self._pipeline.parts(pdf, name))


class GroundedPDFParser(_Configured, BaseBlobParser):
    """The loader as a LangChain blob parser: ``GenericLoader(FileSystemBlobLoader(folder,
    glob="*.pdf"), blob_parser=GroundedPDFParser(mode="chunks"))``. Takes the keywords of
    :class:`GroundedPDFLoader` (except the input); a blob with a path is parsed from its file,
    otherwise from its bytes (named by ``blob.source``)."""

    def __init__(self, **options: Any) -> None:
        for key in ("file_path", "name"):
            if key in options:
                raise TypeError(f"GroundedPDFParser takes no {key!r}: the blob loader gives the PDFs")
        self._pipeline = GroundedPDFLoader((), **options)._pipeline

    def lazy_parse(self, blob: Blob) -> Iterator[Document]:
        if blob.data is None and blob.path is not None:
            yield from map(as_document, self._pipeline.parts(Path(str(blob.path))))
            return
        name = str(blob.source) if blob.source else None
        yield from map(as_document, self._pipeline.parts(blob.as_bytes(), name))
