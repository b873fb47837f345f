"""What LangChain's ``GroundedPDFLoader`` and ``GroundedPDFParser`` do, framework-free: inputs
(paths, bytes, file objects, parse trees) -> parse (through the parse cache) -> the parts of a
loader mode (:mod:`.loader_parts`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ..chunking.chunker import Chunker
from ..errors import ChunkingError, InputError
from ..io.pdf_info import pdf_metadata
from ..io.tree_payload import source_info
from ..model import ParsingResult
from ..parsers import BaseParser, get_parser, parser_class, public_options
from ..parsers.cache import ParseCache, cached_parse, with_ocr
from ..parsers.ocr.engine import OCRMode
from ..text.tokenizer import load_tokenizer
from .loader_parts import DocPart, chunk_part, element_parts, page_parts, single_part
from .profiles import source_metadata
from .sources import SourceView

__all__ = [
    "LoaderPipeline", "ParserChoice", "given_parser", "MODES", "PDFInput", "pdf_inputs", "read_input",
    # what a reader passes on to the parse cache
    "OCRMode", "ParseCache", "cached_parse", "with_ocr",
]

MODES = ("chunks", "elements", "page", "single")
PDFInput = str | Path | bytes | bytearray | memoryview | IO[bytes]


_BUILT_WITH_OPTIONS = "parser_options and ocr cannot be combined with a built parser (configure the parser)"


def given_parser(parser: str | BaseParser, options: Mapping[str, Any] | None, ocr: Any) -> tuple[str, BaseParser | None]:
    """``(registry name, the parser when given built)``; options or OCR beside a built parser are refused."""
    if isinstance(parser, BaseParser):
        if options or ocr is not None:
            raise ValueError(_BUILT_WITH_OPTIONS)
        return parser.name, parser
    return parser, None


class ParserChoice:
    """The parser of a reader's current settings: the one given built while the settings name it and
    set no options, else one built from the registry (again whenever the name or options change).
    Options the parser does not declare fail when the choice is made (a typed ``OptionError``)."""

    def __init__(self, name: str, options: Mapping[str, Any], given: BaseParser | None = None) -> None:
        if given is None:
            parser_class(name).check_options(dict(options))
        self.given = given
        self._built: tuple[str, BaseParser] | None = None

    def get(self, name: str, options: Mapping[str, Any]) -> BaseParser:
        if self.given is not None and name == self.given.name:
            if options:
                raise ValueError(_BUILT_WITH_OPTIONS)
            return self.given
        key = json.dumps([name, dict(options)], sort_keys=True, default=repr)
        if self._built is None or self._built[0] != key:
            self._built = (key, get_parser(name, **options))
        return self._built[1]


class LoaderPipeline:
    """What ``GroundedPDFLoader`` and ``GroundedPDFParser`` share: parse one PDF (through the parse
    cache), build the parts of a mode (``chunks``, ``elements``, ``page``, ``single``)."""

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
        self.mode = mode
        self.parser_name, given = given_parser(parser, parser_options, ocr)
        self.parser_options = with_ocr(parser_options, ocr)
        self._choice = ParserChoice(self.parser_name, self.parser_options, given)  # bad options fail now
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
        return self._choice.get(self.parser_name, self.parser_options)

    def parts(self, pdf: str | Path | bytes | ParsingResult, name: str | None = None) -> Iterator[DocPart]:
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
            yield from element_parts(root, source, flat=flat, line_spans=spans, payload=self.element_payload or ref is None)
        elif self.mode == "chunks":
            assert self.chunker is not None
            for chunk in self.chunker.iter_chunks(root):
                yield chunk_part(chunk, source, flat=flat, line_spans=spans, add_start_index=self.add_start_index)
        else:
            view = SourceView(root)
            if self.mode == "page":
                tokenizer = load_tokenizer(self._tokenizer_spec)
                yield from page_parts(root, source, view, tokenizer=tokenizer, box_mode=self.box_mode, flat=flat, line_spans=spans)
            else:
                yield single_part(root, source, view.text, flat=flat)


def _has_sha(root: ParsingResult) -> bool:
    return bool(source_info(root)["sha256"])


def pdf_inputs(file_path: Any) -> list[Any]:
    if isinstance(file_path, (str, Path, bytes, bytearray, memoryview, ParsingResult)) or hasattr(file_path, "read"):
        return [file_path]
    try:
        return list(file_path)
    except TypeError as exc:
        raise TypeError(f"file_path must be a path, bytes, a binary file or an iterable of these, got {type(file_path).__name__}") from exc


def read_input(item: Any, name: str | None) -> tuple[str | Path | bytes | ParsingResult, str | None]:
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
