"""``GroundedPDFLoader`` (a ``BaseLoader``) and ``GroundedPDFParser`` (a ``BaseBlobParser`` for
``GenericLoader``): PDFs -> LangChain Documents with exact source boxes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal

from langchain_core.document_loaders import BaseBlobParser, BaseLoader
from langchain_core.documents import Document
from langchain_core.documents.base import Blob

from grounded.errors import ChunkingError, InputError
from grounded.grounding.adapter import (
    BaseParser,
    Chunker,
    OCRMode,
    ParseCache,
    SourceView,
    cached_parse,
    get_parser,
    load_tokenizer,
    parser_class,
    pdf_metadata,
    public_options,
    source_info,
    with_ocr,
)
from grounded.model import ParsingResult

from .documents import (
    chunk_document,
    element_documents,
    page_documents,
    single_document,
    source_metadata,
)

__all__ = ["GroundedPDFLoader", "GroundedPDFParser", "Mode"]

Mode = Literal["chunks", "elements", "page", "single"]
MODES = ("chunks", "elements", "page", "single")
PDFInput = str | Path | bytes | bytearray | memoryview | IO[bytes]


class _Pipeline:
    """What the loader and the blob parser share: parse one PDF, build the Documents of a mode."""

    def __init__(
        self,
        *,
        mode: str,
        parser: str | BaseParser,
        parser_options: Mapping[str, Any] | None,
        ocr: str | None,
        password: str | None,
        strategy: Any,
        max_tokens: int,
        overlap: int | float,
        box_mode: str,
        tokenizer: Any,
        flat_metadata: bool,
        line_boxes: bool,
        add_start_index: bool,
        cache: ParseCache | str | Path | bool | None,
        element_payload: bool,
        use_cache: bool,
        strategy_options: Mapping[str, Any],
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(repr(m) for m in MODES)}, got {mode!r}")
        if isinstance(parser, BaseParser) and (parser_options or ocr is not None):
            raise ValueError("parser_options and ocr cannot be combined with a built parser (configure the parser)")
        self.mode = mode
        self._parser = parser if isinstance(parser, BaseParser) else None
        self.parser_name = parser.name if isinstance(parser, BaseParser) else parser
        self.parser_options = with_ocr(parser_options, ocr)
        if self._parser is None:  # options the parser does not declare fail now (OptionError), not at the first PDF
            parser_class(self.parser_name).check_options(self.parser_options)
        self.password = password
        self.box_mode = box_mode
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes
        self.add_start_index = add_start_index
        # built now so bad chunking parameters fail before any PDF is parsed
        self.chunker: Chunker | None = None
        if mode == "chunks":
            self.chunker = Chunker(strategy, max_tokens, overlap, tokenizer=tokenizer, box_mode=box_mode, **strategy_options)
        elif strategy_options:
            raise ChunkingError(f"chunking options {sorted(strategy_options)} apply to mode='chunks' only (mode={mode!r})")
        self._tokenizer_spec = tokenizer
        self.element_payload = element_payload or cache is False
        self.use_cache = use_cache
        if cache is False:
            self.cache: ParseCache | None = None
        elif cache is None or cache is True:
            self.cache = ParseCache()
        elif isinstance(cache, ParseCache):
            self.cache = cache
        else:
            self.cache = ParseCache(cache)

    @property
    def parser(self) -> BaseParser:
        if self._parser is None:
            self._parser = get_parser(self.parser_name, **self.parser_options)
        return self._parser

    def documents(self, pdf: str | Path | bytes | ParsingResult, name: str | None = None) -> Iterator[Document]:
        if isinstance(pdf, ParsingResult):  # parsed before: its PDF's information when the file is here
            root = pdf
            path = source_info(root)["path"]
            readable = path if path and Path(path).is_file() else None
            info = pdf_metadata(readable, password=self.password, root=root)
        else:
            cache = self.cache if self.use_cache else None
            options = self.parser_options or None
            root = cached_parse(self.parser, pdf, cache=cache, options=options, password=self.password, name=name)
            info = pdf_metadata(pdf, password=self.password, root=root)
        ref = None
        if self.cache is not None and _has_sha(root):
            ref = self.cache.put(root, self.parser_options or None)
        source = source_metadata(root, info, tree_ref=ref, parser_options=public_options(self.parser_name, self.parser_options))
        if isinstance(pdf, (str, Path)):  # a cached parse may have read the same bytes elsewhere
            source["source"] = source["file_path"] = str(Path(pdf))
            source["file_name"] = Path(pdf).name
        elif isinstance(pdf, bytes) and name:
            source["source"] = source["file_path"] = source["file_name"] = name
        flat, spans = self.flat_metadata, self.line_boxes
        if self.mode == "elements":
            yield from element_documents(root, source, flat=flat, line_spans=spans, payload=self.element_payload or ref is None)
        elif self.mode == "chunks":
            assert self.chunker is not None
            for chunk in self.chunker.iter_chunks(root):
                yield chunk_document(chunk, source, flat=flat, line_spans=spans, add_start_index=self.add_start_index)
        else:
            view = SourceView(root)
            if self.mode == "page":
                tokenizer = load_tokenizer(self._tokenizer_spec)
                yield from page_documents(root, source, view, tokenizer=tokenizer, box_mode=self.box_mode, flat=flat, line_spans=spans)
            else:
                yield single_document(root, source, view.text, flat=flat)


class _Configured:
    """What a loader and a blob parser show of their settings."""

    _pipeline: _Pipeline

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

    Metadata (see :mod:`langchain_grounded.documents`): ``PyMuPDFLoader``'s keys (``source``,
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
        max_tokens = _alias("max_tokens", max_tokens, "chunk_size", chunk_size, 256)
        overlap = _alias("overlap", overlap, "chunk_overlap", chunk_overlap, 0)
        self.inputs = _inputs(file_path)
        self.name = name
        self._pipeline = _Pipeline(
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
            pdf, name = _read_input(item, self.name)
            yield from self._pipeline.documents(pdf, name)


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
            yield from self._pipeline.documents(Path(str(blob.path)))
            return
        name = str(blob.source) if blob.source else None
        yield from self._pipeline.documents(blob.as_bytes(), name)


def _alias(name: str, value: Any, alias: str, alias_value: Any, default: Any) -> Any:
    """``value`` or its LangChain spelling ``alias`` (``chunk_size`` / ``chunk_overlap``, as the
    splitters take them); both given with different values is a :class:`~grounded.errors.ChunkingError`."""
    if alias_value is None:
        return default if value is None else value
    if value is not None and value != alias_value:
        raise ChunkingError(f"{name}={value!r} and {alias}={alias_value!r} contradict each other: pass one of them")
    return alias_value


def _has_sha(root: ParsingResult) -> bool:
    return bool(source_info(root)["sha256"])


def _inputs(file_path: Any) -> list[Any]:
    if isinstance(file_path, (str, Path, bytes, bytearray, memoryview, ParsingResult)) or hasattr(file_path, "read"):
        return [file_path]
    try:
        return list(file_path)
    except TypeError as exc:
        raise TypeError(f"file_path must be a path, bytes, a binary file or an iterable of these, got {type(file_path).__name__}") from exc


def _read_input(item: Any, name: str | None) -> tuple[str | Path | bytes | ParsingResult, str | None]:
    """A path or tree as is; bytes and file objects as bytes (named by ``name`` or the file's name)."""
    if isinstance(item, (str, Path, ParsingResult)):
        return item, None
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item), name
    if hasattr(item, "read"):
        data = item.read()
        if not isinstance(data, (bytes, bytearray)):
            raise InputError(str(getattr(item, "name", "<file object>")), "a text-mode file: open the PDF in binary mode ('rb')")
        return bytes(data), name or (Path(str(item.name)).name if isinstance(getattr(item, "name", None), str) else None)
    raise TypeError(f"cannot load a PDF from {type(item).__name__}")
