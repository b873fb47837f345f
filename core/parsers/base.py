"""The parsing module's base class (thesis §3.3, Table 3.1) -- the backend contract.

A backend implements two steps and a label table:

* ``_parse(pdf_path) -> native``: call the tool (behind its optional extra, see
  :func:`grounded.runtime.optional.require`),
* ``_transform(native) -> ParsingResult``: native output -> ROOT tree with normalized boxes, every
  native label mapped through :attr:`BaseParser.label_map` (the class's ``LABEL_MAP`` plus the
  ``label_map=`` overrides given to the constructor),
* ``LABEL_MAP``: native label -> :class:`~grounded.model.ParsingResultType`.

Optionally ``_get_md(native) -> str`` returns the tool's own Markdown; without it (the default
returns None) the Markdown is rendered from the post-processed tree (:func:`grounded.io.markdown.to_markdown`).
Recorded native outputs are replayed with the public :meth:`BaseParser.load_native` and
:meth:`BaseParser.parse_native`.

:class:`BaseParser` owns everything shared: input validation (typed errors naming the file),
timing, post-processing (list grouping, element filtering, heading levels and hierarchy -- one
algorithm for every backend, see :mod:`.hierarchy` -- line spans + character boxes from the PDF
text layer), stable element ids, root metadata, and atomic persistence of
``<name>.json`` (lossless) + ``<name>.md`` (lossy).
"""

from __future__ import annotations

import json
import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import EmptyDocumentError, GroundedError, ParserError
from ..io.atomic import refuse_overwriting_inputs
from ..io.codec import save_parse_pair
from ..io.markdown import to_markdown
from ..model.element_info import RelabelHistory
from ..model.elements import ParsingResult, ParsingResultType
from ..model.options import Option, check_options
from ..runtime.memory import release_memory
from . import hierarchy, postprocess
from .pdf_input import PDFInfo
from .source import BYTES_NAME, PDFSource, prepared_source

__all__ = ["BaseParser", "ParseOutput", "DEFAULT_DROP_TYPES", "map_label", "checked_label_map"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: Element types removed by post-processing (thesis §3.3 step 1); configurable per parser.
DEFAULT_DROP_TYPES: frozenset[ParsingResultType] = frozenset(
    {T.REFERENCE_LIST, T.REFERENCE_ITEM, T.PAGE_FOOTER, T.PAGE_HEADER, T.FORM_AREA, T.WATERMARK}
)


def map_label(label: str, table: Mapping[str, ParsingResultType]) -> tuple[ParsingResultType, dict[str, Any]]:
    """Map a native label through ``table``; unmapped labels become MISSING with the label kept."""
    key = str(label)
    mapped = table.get(key)
    if mapped is None:
        mapped = table.get(key.lower())
    if mapped is None:
        return T.MISSING, RelabelHistory.new(native_label=key)
    return mapped, RelabelHistory.new(native_label=key)


def checked_label_map(table: Mapping[str, ParsingResultType | str]) -> dict[str, ParsingResultType]:
    """``table`` with every value as a :class:`ParsingResultType` (names like ``"PARAGRAPH"`` are
    accepted); raises ValueError naming the label whose value is not a type."""
    out: dict[str, ParsingResultType] = {}
    for label, value in table.items():
        try:
            out[str(label)] = ParsingResultType(value)
        except ValueError:
            choices = ", ".join(t.value for t in ParsingResultType)
            raise ValueError(f"label_map[{label!r}] = {value!r} is not an element type; choose one of: {choices}") from None
    return out


@dataclass
class ParseOutput:
    """A finished parse: the post-processed tree and the backend's Markdown."""

    root: ParsingResult
    markdown: str

    def save(self, out_dir: str | Path, name: str | None = None) -> tuple[Path, Path]:
        """Write ``<name>.json`` and ``<name>.md`` into ``out_dir`` as a consistent pair.

        Both files are written to temp files first and then renamed (JSON first); the JSON
        records the Markdown's sha256 so :func:`~grounded.serialization.load_parse_pair` detects
        a pair mixed by a crash. Stale temp files of interrupted writes in ``out_dir`` are removed.
        An output that is the source PDF itself (e.g. a PDF named ``paper.md``) is refused with
        :class:`~grounded.errors.OutputError`, as is any file that cannot be written.
        """
        out = Path(out_dir)
        source = self.root.info.source
        source_path = source.get("path") if isinstance(source, dict) else None
        stem = name or Path(str(source_path or "document")).stem
        json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
        if source_path:
            refuse_overwriting_inputs((json_path, md_path), [source_path])
        return save_parse_pair(self.root, self.markdown, json_path, md_path)


class BaseParser(ABC):
    """Shared work of every backend; subclasses implement ``_parse``, ``_transform`` and ``LABEL_MAP``
    (and ``_get_md`` when the tool writes Markdown of its own).

    Parameters
    ----------
    drop_types:
        Element types removed after the transform (default: the thesis' filter list).
    infer_hierarchy:
        Decide heading levels (one algorithm for every backend, :func:`.hierarchy.assign_heading_levels`;
        it may also relabel a heading set smaller than the body text as a paragraph, or the first
        large one as the title) and nest content under section headers by level (keeps
        table/list hierarchy). False leaves headings as the backend labelled them (its levels in
        ``heading.native_level``).
    line_spans:
        Attach line boxes (and per-character extents) from the PDF text layer to text elements.
    line_merge_overlap:
        Two fragments on one page belong to the same line when their vertical overlap exceeds
        this fraction of the smaller height.
    label_map:
        Native label -> element type, overriding or extending the backend's ``LABEL_MAP`` for this
        parser (values are :class:`ParsingResultType` members or their names).
    """

    #: registry name, e.g. "pymupdf"
    name: ClassVar[str] = ""
    #: native label -> ParsingResultType (documented in the README table)
    LABEL_MAP: ClassVar[Mapping[str, ParsingResultType]] = {}
    #: parsers that read the PDF's text layer refuse image-only documents instead of returning nothing
    requires_text_layer: ClassVar[bool] = False
    #: the constructor options this class adds, declared once (:class:`~grounded.model.options.Option`);
    #: a subclass declares only its own (:meth:`declared_options` joins them along the class tree).
    #: A subclass with its own ``__init__`` and no ``options`` is undeclared: its keywords go unchecked.
    options: ClassVar[tuple[Option, ...] | None] = (
        Option("drop_types", None, help="element types removed after the transform (default: the thesis' filter list)"),
        Option("infer_hierarchy", bool, True, "decide heading levels and nest content under headings", cli=False),
        Option("line_spans", bool, True, "line boxes and character extents from the PDF text layer", cli=False),
        Option("line_merge_overlap", float, 0.5, "vertical overlap (fraction) that puts two fragments on one line",
               low=0.0, high=1.0, open_low=True, cli=False),
        Option("label_map", None, help="native label -> element type overrides"),
    )
    #: the options of every :meth:`run` / :meth:`parse` call (not of the constructor)
    run_options: ClassVar[tuple[Option, ...]] = (
        Option("password", str, None, "password of an encrypted PDF", secret=True),
    )

    @classmethod
    def declared_options(cls) -> tuple[Option, ...] | None:
        """The constructor options of this class and its bases (None: a class in the tree defines its
        own ``__init__`` without declaring ``options``)."""
        out: list[Option] = []
        for klass in reversed(cls.__mro__):
            if not (isinstance(klass, type) and issubclass(klass, BaseParser)):
                continue
            own = klass.__dict__.get("options")
            if own is None:
                if "__init__" in klass.__dict__:
                    return None
                continue
            out.extend(o for o in own if o.name not in {x.name for x in out})
        return tuple(out)

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """``options`` checked against :meth:`declared_options` (:class:`~grounded.errors.OptionError`
        naming the parser and the option); unchanged for an undeclared class."""
        declared = cls.declared_options()
        if declared is None:
            return dict(options)
        return check_options(declared, options, f"parser {cls.name or cls.__name__!r}")

    def __init__(
        self,
        *,
        drop_types: Iterable[ParsingResultType | str] | None = None,
        infer_hierarchy: bool = True,
        line_spans: bool = True,
        line_merge_overlap: float = 0.5,
        label_map: Mapping[str, ParsingResultType | str] | None = None,
    ) -> None:
        self.drop_types = frozenset(
            ParsingResultType(t) for t in (DEFAULT_DROP_TYPES if drop_types is None else drop_types)
        )
        self.infer_hierarchy = infer_hierarchy
        self.line_spans = line_spans
        if not 0.0 < line_merge_overlap <= 1.0:
            raise ValueError("line_merge_overlap must be in (0, 1]")
        self.line_merge_overlap = line_merge_overlap
        self._label_overrides = checked_label_map(label_map or {})

    @property
    def label_map(self) -> dict[str, ParsingResultType]:
        """The table ``_transform`` maps native labels through: ``LABEL_MAP`` (as the class or a
        subclass defines it) updated with the ``label_map=`` overrides of the constructor."""
        return {**checked_label_map(self.LABEL_MAP), **self._label_overrides}

    # -- the backend steps ----------------------------------------------------------------------
    @abstractmethod
    def _parse(self, pdf_path: Path) -> Any:
        """Run the tool on ``pdf_path`` and return its native output."""

    @abstractmethod
    def _transform(self, native: Any) -> ParsingResult:
        """Native output -> ParsingResult tree (ROOT node, reading order, normalized boxes, labels
        mapped through :attr:`label_map`)."""

    def _parse_inspected(self, pdf_path: Path, info: PDFInfo) -> Any:
        """``_parse`` given what the input check already read (:class:`PDFInfo`). A backend that
        can use it (PyMuPDF: which pages need OCR) overrides this instead of reading pages again."""
        return self._parse(pdf_path)

    def _get_md(self, native: Any) -> str | None:
        """The tool's own Markdown of ``native``; None (the default) renders the post-processed tree."""
        return None

    # -- recorded outputs -----------------------------------------------------------------------
    @classmethod
    def load_native(cls, path: str | Path) -> Any:
        """A recorded native output (as ``_parse`` returns it) read from ``path``.

        The default reads JSON; backends whose native output is not plain JSON override it.
        Unreadable or invalid files raise :class:`~grounded.errors.ParserError` naming the file.
        """
        source = Path(path)
        try:
            return json.loads(source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ParserError(source, f"not a readable recorded {cls.name or cls.__name__} output: {exc}") from exc

    def record_native(self, pdf: PDFSource, *, password: str | None = None, name: str | None = None) -> Any:
        """Check ``pdf`` and run only the tool on it: its native output, to keep (e.g. a paid cloud
        reply) and replay later with :meth:`parse_native`. A native output may refer to the PDF's
        path (PyMuPDF's does): replay it with the same PDF, given as a path."""
        with prepared_source(pdf, require_text=self.requires_text_layer, password=password, name=name) as source:
            path = source.info.path
            with self._failures_named(path):
                return self._parse_inspected(path, source.info)

    def parse_native(
        self, native: Any, pdf: PDFSource, *, password: str | None = None, name: str | None = None
    ) -> ParseOutput:
        """Like :meth:`run`, but with ``native`` (e.g. from :meth:`load_native`) in place of running
        the tool: transform, post-process against ``pdf`` (the document ``native`` was made from),
        and Markdown as :meth:`run` makes it."""
        return self._pipeline(lambda _path, _info: native, pdf, password=password, name=name)

    def version(self) -> str:
        """Version of the underlying tool (recorded in the root metadata)."""
        return "unknown"

    # -- shared pipeline ------------------------------------------------------------------------
    def parse(self, pdf: PDFSource, *, password: str | None = None, name: str | None = None) -> ParsingResult:
        """Parse ``pdf`` and return the tree (see :meth:`run` for the arguments)."""
        return self.run(pdf, password=password, name=name).root

    def save(
        self, pdf: PDFSource, out_dir: str | Path, *, password: str | None = None, name: str | None = None
    ) -> tuple[Path, Path]:
        """Parse ``pdf`` and write ``<stem>.json`` + ``<stem>.md`` into ``out_dir`` (the stem of
        the path, or of ``name`` for bytes; ``document`` without one)."""
        output = self.run(pdf, password=password, name=name)
        if isinstance(pdf, (str, os.PathLike)):
            stem = Path(pdf).stem
        else:
            given = name or str((output.root.info.source or {}).get("name") or "")
            stem = Path(given).stem if given and given != BYTES_NAME else "document"
        return output.save(out_dir, stem)

    def run(self, pdf: PDFSource, *, password: str | None = None, name: str | None = None) -> ParseOutput:
        """Check the input, run the backend (``_parse``, ``_transform``, ``_get_md``) and post-process.

        ``pdf`` is a path, PDF bytes, or a binary file object (``.read()``); ``name`` names bytes
        in messages and the root's ``source`` metadata (default: the file object's ``name``, else
        ``<bytes>``). An encrypted PDF needs ``password`` (user or owner password): it is parsed
        from a decrypted copy in a private temporary directory that is removed afterwards, and the
        source metadata records the original file, its sha256 and ``encrypted: true``. A missing
        or wrong password raises :class:`~grounded.errors.EncryptedPDFError`.
        """
        return self._pipeline(self._parse_inspected, pdf, password=password, name=name)

    def _pipeline(
        self, produce: Callable[[Path, PDFInfo], Any], pdf: PDFSource, *, password: str | None, name: str | None
    ) -> ParseOutput:
        with prepared_source(pdf, require_text=self.requires_text_layer, password=password, name=name) as source:
            info = source.info
            started = time.perf_counter()
            with self._failures_named(info.path):
                native = produce(info.path, info)
                root = self._transform(native)
                markdown = self._get_md(native)
                del native
                output = self.finish(root, markdown, info, started)
            source.stamp(output.root.info)
            return output

    @contextmanager
    def _failures_named(self, path: Path) -> Iterator[None]:
        """A backend's own failure -> :class:`ParserError` naming the file; memory handed back after."""
        try:
            yield
        except GroundedError:
            raise
        except Exception as exc:
            raise ParserError(path, f"parser '{self.name}' failed: {type(exc).__name__}: {exc}") from exc
        finally:
            release_memory()  # a long-lived process stays flat (#14.7)

    def finish(self, root: ParsingResult, markdown: str | None, info: PDFInfo, started: float) -> ParseOutput:
        """Post-process a transformed tree and fill the root metadata (public so fixtures can use it).

        ``markdown`` None renders the post-processed tree as Markdown."""
        if root.type != T.ROOT:
            raise ParserError(info.path, f"parser '{self.name}' returned a {root.type} node, not ROOT")
        # page facts a backend recorded (e.g. how the layout saw the page), merged below
        backend_pages = {
            int(p["page"]): p for p in root.info.pages or [] if isinstance(p, dict) and "page" in p
        }
        kept = postprocess.keep_body_furniture(root, self.drop_types, info.path, info.page_count)
        hierarchy.group_lists(root, self.drop_types)
        dropped = postprocess.dropped_text(root, self.drop_types)
        postprocess.filter_elements(root, self.drop_types)
        report, total = postprocess.page_report(
            root, info.page_count, info.text_pages, info.damaged_pages, info.page_warnings, dropped,
            info.damage_reasons(),
        )
        if not total:  # checked after filtering: text that was filtered away is not a result
            raise EmptyDocumentError(info.path, _empty_reason(info, self.name))
        if self.infer_hierarchy:
            hierarchy.measure_styles(root, info.path)
            hierarchy.assign_heading_levels(root)
            postprocess.infer_hierarchy(root)
        if self.line_spans:
            postprocess.attach_line_spans(root, info.path, merge_overlap=self.line_merge_overlap)
        postprocess.assign_ids(root)
        described = root.info  # written in this order (an existing key keeps its place)
        described.parser = self.name
        described.parser_version = self.version()
        described.elapsed_seconds = round(time.perf_counter() - started, 4)
        described.source = {"path": str(info.path), "sha256": info.sha256, "name": info.path.name}
        described.page_count = info.page_count
        described.pages = [
            {
                **{k: v for k, v in backend_pages.get(i + 1, {}).items() if k not in ("width", "height")},
                "page": i + 1,
                "width": w,
                "height": h,
                **report[i + 1],
                # the backend's own page warnings (e.g. a page beyond a budget) after MuPDF's
                "warnings": _page_warnings(report[i + 1], backend_pages.get(i + 1, {})),
                **({"furniture_kept_chars": kept[i + 1]} if i + 1 in kept else {}),
                **({"unmapped_glyphs": info.unmapped_glyphs[i + 1]} if i + 1 in info.unmapped_glyphs else {}),
            }
            for i, (w, h) in enumerate(info.page_sizes)
        ]
        if info.warnings or info.repaired:
            described.pdf_warnings = list(info.warnings)
            described.pdf_repaired = info.repaired
        if markdown is None:
            markdown = to_markdown(root)
        markdown = postprocess.replace_lone_surrogates(root, markdown)
        return ParseOutput(root=root, markdown=markdown)


def _empty_reason(info: PDFInfo, parser: str) -> str:
    if not info.text_pages:
        return f"parser '{parser}' found no text and no page has a text layer (blank or image-only PDF)"
    return (
        f"no text left: parser '{parser}' found no text to keep on the {len(info.text_pages)} page(s) with a "
        "text layer (after removing the element types it drops)"
    )


def _page_warnings(report: dict[str, object], backend: dict[str, Any]) -> list[str]:
    """A page's warnings: MuPDF's (from the report), then the backend's own (e.g. a budget)."""
    mupdf = report.get("warnings")
    return [*(mupdf if isinstance(mupdf, list) else []), *(backend.get("warnings") or [])]
