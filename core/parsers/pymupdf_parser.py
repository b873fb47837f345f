"""Default backend: PyMuPDF >= 2.0 with its bundled ONNX layout model (offline).

``_parse`` runs :func:`pymupdf4llm.helpers.document_layout.parse_document` (layout classes,
reading order of multi-column pages, table grids, header font sizes), optionally over page
ranges in worker processes. ``_transform`` builds the tree: every text element's content is
rebuilt from the PDF text layer inside its layout box, so its line spans and per-character
extents are attached right here (exact, no re-alignment needed). Tables become TABLE ->
TABLE_ROW -> TABLE_CELL with cell boxes from the layout grid (``find_tables`` as fallback),
and headings carry their style (``font_size``, ``font_bold``) and the root the body text size
(``body_font_size``) as evidence for the heading levels and list grouping that post-processing
decides for every backend (:mod:`.hierarchy`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import multiprocessing
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import BackendUnavailableError, ParserError
from ..markdown import table_to_markdown
from ..model import HEADING_TYPES, ParsingBoundingBox, ParsingResult, ParsingResultType
from ._memory import release_memory
from ._process import ParentInfo, die_with_parent
from .base import BaseParser, map_label
from .column_split import split_columns
from .hierarchy import HeadingStyle, all_caps
from .hyphenation import HYPHENS_KEY, resolve_document
from .ocr import (
    DEFAULT_OCR,
    DEFAULT_OCR_DPI,
    OCR_LANGUAGE,
    OCRMode,
    check_mode,
    ocr_copy,
    pages_needing_ocr,
    plan_ocr,
    require_ocr,
    tessdata_dir,
)
from .ocr_text import (
    OCR_FROM_PICTURES_KEY,
    OCR_LEFT_OUT_KEY,
    readable_unclaimed,
    text_in_picture,
    text_layer_rects,
)
from .pdf_input import NoTextLayerWarning, PDFInfo, format_pages, mupdf_quiet
from .reading_order import Rect, reading_order, upright
from .running_furniture import mark_running_furniture
from .textlayer import PageChars, TextLayer, build_lines, clip_to_page, lines_to_spans

__all__ = ["PyMuPDFParser", "PyMuPDFNative"]

log = logging.getLogger(__name__)
T = ParsingResultType

#: progress callback: (pages done, pages total)
ProgressCallback = Callable[[int, int], None]


@dataclass
class PyMuPDFNative:
    """Native output: pymupdf4llm's ParsedDocument (pages -> layout boxes in reading order).

    With worker processes, each worker also builds its pages' elements from the text layer
    (``prebuilt``: page number -> elements; ``body_sizes``: paragraph font sizes -> chars), so the
    per-page part of the transform runs in parallel too; :meth:`PyMuPDFParser._transform` builds
    the pages that are not prebuilt.
    """

    path: Path
    document: Any  # pymupdf4llm.helpers.document_layout.ParsedDocument
    layout_seconds: float = 0.0
    prebuilt: dict[int, list[ParsingResult]] = field(default_factory=dict)
    body_sizes: Counter[float] = field(default_factory=Counter)
    #: 1-based page -> why it was OCR'd (its text then comes from the OCR'd copy at ``path``)
    ocr_pages: dict[int, str] = field(default_factory=dict)
    ocr_seconds: float = 0.0
    #: owns the OCR'd copy; removed when the native output is dropped
    scratch: tempfile.TemporaryDirectory[str] | None = None


# ---------------------------------------------------------------------------------------------
# layout pass (in process or in worker processes)
# ---------------------------------------------------------------------------------------------


def _require_layout() -> Any:
    """Import pymupdf4llm's document parser (loads the ONNX layout model once per process)."""
    try:
        from pymupdf4llm.helpers import document_layout
    except ImportError as exc:  # pragma: no cover - pymupdf4llm is a core dependency
        raise BackendUnavailableError("PyMuPDF layout parser", "pymupdf", "pymupdf4llm pymupdf-layout") from exc
    return document_layout


#: ONNX Runtime threads the layout model of this process was loaded with (None: not by us)
_threads_loaded: int | None = None


def _load_layout(threads: int | None) -> bool:
    """Load the layout model with ``threads`` ONNX Runtime threads (None: runtime default).

    Only possible before the model is first loaded in this process -- PyMuPDF >= 2.0 imports
    ``pymupdf.layout`` (which loads it) on ``import pymupdf`` -- so returns whether it took effect.
    """
    import sys

    global _threads_loaded
    if "pymupdf.layout" in sys.modules:
        _require_layout()
        return threads is None or threads == _threads_loaded
    if threads is None:
        _require_layout()
        return True
    import onnxruntime as ort

    original = ort.InferenceSession

    class _ThreadLimitedSession(original):  # type: ignore[misc, valid-type]
        def __init__(self, path: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
            options = sess_options if sess_options is not None else ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            # no busy-waiting threads: they steal the CPU of the other worker processes
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            super().__init__(path, options, *args, **kwargs)

    ort.InferenceSession = _ThreadLimitedSession
    try:
        _require_layout()
    finally:
        ort.InferenceSession = original
    _threads_loaded = threads
    return True


def _strip_page(page: Any) -> Any:
    """Drop the bulky per-page extras the tree and Markdown do not need (keeps memory flat)."""
    page.fulltext = None
    page.words = None
    page.links = None
    return page


#: The layout model renders a page at 72 dpi: a page whose longer side is outside
#: [LAYOUT_MIN_SIDE, LAYOUT_MAX_SIDE] points gives it a few pixels or a giant image (it then calls
#: all text page furniture, or finds no text at all), so such a page is laid out scaled to
#: LAYOUT_TARGET_SIDE points and the boxes are scaled back.
LAYOUT_MIN_SIDE = 288.0
LAYOUT_MAX_SIDE = 2448.0
LAYOUT_TARGET_SIDE = 842.0
#: A page with at least this many non-space characters none of which the layout model put in a
#: text or table box gets its text from MuPDF's text blocks instead (see _TreeBuilder).
FALLBACK_MIN_CHARS = 20
#: The same fallback takes the characters the layout left in no box at all when they are at least
#: this share of the page's text (a failed layout, not a stray margin note) ...
FALLBACK_UNBOXED_SHARE = 0.10
#: ... or all unclaimed characters, pictures' included, when they are at least this share (a text
#: page the model saw as one picture); text inside genuine figures stays out of the body.
FALLBACK_UNCLAIMED_SHARE = 0.50
#: Text in this outer band of the page (share of its width/height) is printer's marks and
#: running furniture (slugs, side stamps) when the layout put it in no box: it neither triggers
#: the fallback nor is taken by it.
FALLBACK_MARGIN_SHARE = 0.06
#: A page is laid out turned upright when at least this share of its characters reads in one
#: direction other than left to right as displayed (a /Rotate page whose content was not turned
#: with it, a landscape table set sideways): the model labels sideways text page header/footer.
UPRIGHT_SHARE = 0.5


@dataclass
class _View:
    """How the layout model saw a page: turned ``turn`` degrees clockwise from the displayed page
    and scaled by ``scale``; ``matrix`` maps the layout's coordinates back to the displayed page."""

    turn: int
    scale: float
    matrix: Any  # pymupdf.Matrix

    def info(self) -> dict[str, Any]:
        return {"layout_turn": self.turn, "layout_scale": round(self.scale, 6)}


def _upright_turn(page: Any) -> int:
    """Degrees (clockwise, multiple of 90) to turn the displayed page so that most of its text
    reads left to right (0 when it does already or when no direction has UPRIGHT_SHARE)."""
    from .textlayer import DOWN, LEFT, RIGHT, UP, _direction

    m = page.rotation_matrix
    weights = [0, 0, 0, 0]
    for block in page.get_text("dict", flags=0)["blocks"]:
        for line in block.get("lines", ()):
            dx, dy = line.get("dir", (1.0, 0.0))
            direction = _direction(m.a * dx + m.c * dy, m.b * dx + m.d * dy)
            weights[direction] += sum(len(span["text"].strip()) for span in line["spans"])
    total = sum(weights)
    best = max(range(4), key=weights.__getitem__)
    if not total or best == RIGHT or weights[best] < UPRIGHT_SHARE * total:
        return 0
    return {DOWN: 270, LEFT: 180, UP: 90}[best]


def _layout_scale(width: float, height: float) -> float:
    side = max(width, height)
    if side <= 0 or LAYOUT_MIN_SIDE <= side <= LAYOUT_MAX_SIDE:
        return 1.0
    return LAYOUT_TARGET_SIDE / side


def _prepare_views(doc: Any, pages: Sequence[int]) -> tuple[dict[int, _View], Any, dict[int, int]]:
    """Turn (in ``doc``, which must be private to the layout pass) or copy scaled into a scratch
    document the pages the model would not see upright at a normal size. Returns the views by
    0-based page, the scratch document (or None) and source page -> scratch page."""
    import pymupdf

    views: dict[int, _View] = {}
    scratch: Any = None
    in_scratch: dict[int, int] = {}
    for pno in pages:
        page = doc.load_page(pno)
        turn = _upright_turn(page)
        scale = _layout_scale(page.rect.width, page.rect.height)
        if not turn and scale == 1.0:
            continue
        shown = page.rotation_matrix  # unrotated -> displayed (as the text layer uses it)
        rotation = (page.rotation + turn) % 360
        if scale == 1.0:
            page.set_rotation(rotation)
            back = page.derotation_matrix * shown  # layout frame -> unrotated -> displayed
        else:
            page.set_rotation(0)
            if scratch is None:
                scratch = pymupdf.open()
            copy = scratch.new_page(width=page.rect.width * scale, height=page.rect.height * scale)
            copy.show_pdf_page(copy.rect, doc, pno)
            copy.set_rotation(rotation)
            back = copy.derotation_matrix * pymupdf.Matrix(1.0 / scale, 1.0 / scale) * shown
            in_scratch[pno] = copy.number
        views[pno] = _View(turn, scale, back)
    return views, scratch, in_scratch


def _map_rect(rect: Sequence[float], m: Any) -> tuple[float, float, float, float]:
    import pymupdf

    r = (pymupdf.Rect(rect[:4]) * m).normalize()
    return (float(r.x0), float(r.y0), float(r.x1), float(r.y1))


def _map_layout(layout: Any, view: _View, width: float, height: float) -> Any:
    """Boxes of a page laid out under ``view`` -> the displayed page (``width`` x ``height``)."""
    m = view.matrix
    upright_width = float(layout.width)
    for box in layout.boxes:
        box.upright_x0 = box.x0 / upright_width if upright_width else 0.0  # list indent as the reader sees it
        box.x0, box.y0, box.x1, box.y1 = _map_rect((box.x0, box.y0, box.x1, box.y1), m)
        table = box.table
        if table:
            if table.get("bbox"):
                table["bbox"] = list(_map_rect(table["bbox"], m))
            if table.get("cells"):
                table["cells"] = [
                    [None if cell is None else _map_rect(cell, m) for cell in row] for row in table["cells"]
                ]
    layout.width, layout.height = width, height
    layout.view = view.info()
    return layout


def _layout_pages(doc_or_path: Any, pages: Sequence[int]) -> list[Any]:
    """Layout pass over 0-based ``pages``; returns pymupdf4llm PageLayout objects whose boxes are
    in the displayed page's coordinates (pages turned upright / scaled for the model, see
    :func:`_prepare_views`, are mapped back; ``layout.view`` records how the model saw them).

    ``doc_or_path``: a path, or a document private to the layout pass (pages may be turned)."""
    import pymupdf

    document_layout = _require_layout()
    own = not isinstance(doc_or_path, pymupdf.Document)
    doc = pymupdf.open(doc_or_path) if own else doc_or_path
    scratch = None
    try:
        sizes = {pno: (float(doc[pno].rect.width), float(doc[pno].rect.height)) for pno in pages}
        views, scratch, in_scratch = _prepare_views(doc, pages)
        direct = sorted(pno for pno in pages if pno not in in_scratch)
        found: dict[int, Any] = {}
        if direct:
            parsed = document_layout.parse_document(doc, pages=direct, use_ocr=0, force_text=False)
            found.update(zip(direct, parsed.pages, strict=True))
        if scratch is not None:
            order = sorted(in_scratch, key=in_scratch.__getitem__)
            parsed = document_layout.parse_document(
                scratch, pages=[in_scratch[p] for p in order], use_ocr=0, force_text=False
            )
            for pno, layout in zip(order, parsed.pages, strict=True):
                layout.page_number = pno + 1
                found[pno] = layout
        out = []
        for pno in pages:
            layout = found[pno]
            if pno in views:
                _map_layout(layout, views[pno], *sizes[pno])
            out.append(_strip_page(layout))
        return out
    finally:
        if scratch is not None:
            scratch.close()
        if own:
            doc.close()


def _worker_init(parent: ParentInfo | None = None) -> None:
    die_with_parent(parent)  # no orphaned workers after a kill -9 of the parent (#14.6)
    _load_layout(1)


def _worker_task(task: _PageTask) -> tuple[list[Any], dict[int, list[ParsingResult]], dict[float, int]]:
    """One pool task: :func:`_worker_pages`, then hand the worker's freed memory back (#14.7)."""
    try:
        return _worker_pages(task)
    finally:
        release_memory()


@dataclass
class _PageTask:
    path: str
    pages: list[int]  # 0-based
    image_dir: str | None
    image_dpi: int
    label_map: dict[str, ParsingResultType] = field(default_factory=dict)  # the parser's label_map
    ocr_pages: frozenset[int] = frozenset()  # 1-based pages whose text layer is OCR (_TreeBuilder.ocr_pages)


def _worker_pages(task: _PageTask) -> tuple[list[Any], dict[int, list[ParsingResult]], dict[float, int]]:
    """In a worker: layout pass + elements of ``task.pages`` from the text layer."""
    with mupdf_quiet():
        layouts = _layout_pages(task.path, task.pages)
    builder = _TreeBuilder(
        Path(task.path), Path(task.image_dir) if task.image_dir else None, task.image_dpi, ocr_pages=task.ocr_pages
    )
    builder.label_map = task.label_map or builder.label_map
    built: dict[int, list[ParsingResult]] = {}
    with mupdf_quiet(), TextLayer(task.path, cache_pages=1) as layer:
        for page in layouts:
            start = len(builder.elements)
            builder.add_page(page, layer.page(page.page_number), layer)
            built[page.page_number] = builder.elements[start:]
    return layouts, built, dict(builder.body_sizes)


def _page_batches(page_count: int, batch: int) -> list[list[int]]:
    return [list(range(i, min(page_count, i + batch))) for i in range(0, page_count, batch)]


def _guided_batches(page_count: int, workers: int, largest: int) -> list[list[int]]:
    """Batches that shrink towards the end (guided scheduling): few tasks, yet the workers
    finish together (the last tasks are single pages)."""
    out: list[list[int]] = []
    start = 0
    while start < page_count:
        size = max(1, min(largest, math.ceil((page_count - start) / (4 * workers))))
        out.append(list(range(start, min(page_count, start + size))))
        start += size
    return out


# ---------------------------------------------------------------------------------------------
# the parser
# ---------------------------------------------------------------------------------------------


class PyMuPDFParser(BaseParser):
    """PyMuPDF layout model + text layer; offline, CPU only.

    Parameters
    ----------
    workers:
        Processes for the layout pass (>= 2 uses a spawn pool, started on first use and reused
        across documents; call :meth:`close` or use the parser as a context manager).
    image_dir:
        Write each FIGURE's region as PNG there and set ``node.image`` (default: no images).
    image_dpi:
        Resolution of those PNGs.
    batch_pages:
        Pages per layout call (granularity of progress reports and worker tasks).
    progress:
        ``callback(pages_done, pages_total)`` during the layout pass.
    layout_threads:
        ONNX Runtime threads of the layout model in this process (default: the runtime's own
        choice, which already puts part of the model on a second core). Takes effect only if
        nothing imported ``pymupdf`` before (that loads the model); worker processes use 1.
    pool:
        An executor owned by the caller that runs the page tasks instead of a pool of the
        parser's own (``grounded.ingest`` lends its worker processes; they load the layout model
        with one thread like the parser's workers). :meth:`close` leaves it running.
    ocr:
        ``"auto"`` (default): OCR the pages that are image-only or whose text layer is garbage,
        read the others' text layer; ``"always"``: OCR every page; ``"never"``: text layer only
        (image-only pages are reported, an image-only document refused). OCR is Tesseract inside
        PyMuPDF and needs the ``[ocr]`` extra (or ``tesseract-ocr-eng``): without it ``"auto"``
        behaves as ``"never"`` and ``"always"`` raises BackendUnavailableError. Each page's
        ``root.metadata["pages"][i]["text_source"]`` says ``"ocr"`` or ``"text_layer"``.
    ocr_dpi:
        Resolution the pages are rendered at for OCR.
    """

    name: ClassVar[str] = "pymupdf"
    #: layout classes of the bundled model (pymupdf/layout/resources/onnx/*.yaml ``class_list``)
    LABEL_MAP: ClassVar[dict[str, ParsingResultType]] = {
        "title": T.TITLE,
        "section-header": T.SECTION_HEADER,
        "text": T.PARAGRAPH,
        "list-item": T.LIST_ITEM,
        "table": T.TABLE,
        "picture": T.FIGURE,
        "caption": T.CAPTION,
        "footnote": T.FOOTNOTE,
        "formula": T.FORMULA,
        "page-header": T.PAGE_HEADER,
        "page-footer": T.PAGE_FOOTER,
    }

    def __init__(
        self,
        *,
        workers: int = 1,
        image_dir: str | Path | None = None,
        image_dpi: int = 150,
        batch_pages: int = 4,
        progress: ProgressCallback | None = None,
        layout_threads: int | None = None,
        pool: Any = None,
        ocr: OCRMode = DEFAULT_OCR,
        ocr_dpi: int = DEFAULT_OCR_DPI,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.ocr = check_mode(ocr)
        if not 72 <= int(ocr_dpi) <= 600:
            raise ValueError(f"ocr_dpi must be in [72, 600] (got {ocr_dpi})")
        self.ocr_dpi = int(ocr_dpi)
        # the language data OCR runs with (None: no OCR -- "never", or "auto" without the engine)
        self._tessdata = (
            require_ocr("PyMuPDF parser with ocr='always'")
            if self.ocr == "always"
            else tessdata_dir() if self.ocr == "auto" else None
        )
        if batch_pages < 1:
            raise ValueError("batch_pages must be >= 1")
        self.workers = int(workers)
        self.image_dir = Path(image_dir) if image_dir is not None else None
        self.image_dpi = int(image_dpi)
        self.batch_pages = int(batch_pages)
        self.progress = progress
        self.layout_threads = layout_threads
        self._pool: Any = None
        self._lent_pool: Any = pool
        if importlib.util.find_spec("pymupdf") is None:  # pragma: no cover - core dependency
            raise BackendUnavailableError("PyMuPDF parser", "pymupdf", "pymupdf")
        if layout_threads is not None and not _load_layout(layout_threads):
            # ``import pymupdf`` loads the layout model, so the setting must come first
            warnings.warn(
                f"layout_threads={layout_threads} ignored: PyMuPDF's layout model was already loaded in this "
                "process (create the parser before anything imports pymupdf)",
                stacklevel=2,
            )

    @property  # per instance: a ClassVar on BaseParser
    def requires_text_layer(self) -> bool:  # type: ignore[override]
        """Image-only pages are refused/reported (as before OCR) unless OCR can read them."""
        return self._tessdata is None

    def ocr_setting(self) -> str:
        """The OCR configuration a tree depends on (part of :meth:`version`, so of the parse
        cache's fingerprint): the mode and, when OCR can run, engine, language and dpi."""
        if self._tessdata is None:
            return f"ocr {self.ocr} (off)" if self.ocr == "auto" else f"ocr {self.ocr}"
        return f"ocr {self.ocr} (tesseract {OCR_LANGUAGE} @ {self.ocr_dpi} dpi)"

    def version(self) -> str:
        import pymupdf

        try:
            import pymupdf4llm

            tool = f"pymupdf {pymupdf.__version__}, pymupdf4llm {pymupdf4llm.__version__}"
        except ImportError:  # pragma: no cover
            tool = f"pymupdf {pymupdf.__version__}"
        return f"{tool}, {self.ocr_setting()}"

    # -- resources ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the worker pool (if one was started)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> PyMuPDFParser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; explicit close() is preferred
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()

    def _get_pool(self) -> Any:
        if self._lent_pool is not None:
            return self._lent_pool
        if self._pool is None:
            from concurrent.futures import ProcessPoolExecutor

            # spawn: no fork of a process whose ONNX Runtime threads already run
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=_worker_init, initargs=(ParentInfo(),)
            )
        return self._pool

    # -- step 1: layout -------------------------------------------------------------------------
    def _parse_inspected(self, pdf_path: Path, info: PDFInfo) -> PyMuPDFNative:
        # the input check judged every page's text layer: the OCR plan needs no second read
        return self._parse(pdf_path, verdicts=info.text_verdicts)

    def _parse(self, pdf_path: Path, verdicts: Sequence[str | None] | None = None) -> PyMuPDFNative:
        """Layout pass (after OCR of the pages that need it). ``verdicts``: per page, why its text
        layer needs OCR (``PDFInfo.text_verdicts``); without them the pages are read to decide."""
        import time

        import pymupdf

        document_layout = _require_layout()
        started = time.perf_counter()
        source = pdf_path
        ocr_pages, scratch, pdf_path = self._ocr_pages(pdf_path, verdicts)
        ocr_seconds = time.perf_counter() - started
        prebuilt: dict[int, list[ParsingResult]] = {}
        body_sizes: Counter[float] = Counter()
        # MuPDF's messages about damaged content were collected by inspect_pdf: keep stderr clean
        with mupdf_quiet(), pymupdf.open(pdf_path) as doc:
            count = doc.page_count
            toc = doc.get_toc(simple=True)
            metadata = dict(doc.metadata or {})
            pages: list[Any] = []
            for layouts, built, sizes in self._layout_iter(doc, pdf_path, count, frozenset(ocr_pages)):
                pages.extend(layouts)
                prebuilt.update(built)
                body_sizes.update(sizes)
                if self.progress is not None:
                    self.progress(len(pages), count)
        # header levels as pymupdf4llm computes them, but over the whole document
        fontsizes = {b.max_fontsize for p in pages for b in p.boxes if b.boxclass in ("title", "section-header")}
        if fontsizes:
            document_layout.update_header_tags(pages, fontsizes)
        parsed = document_layout.ParsedDocument(
            filename=str(source), page_count=count, toc=toc, pages=pages, metadata=metadata
        )
        return PyMuPDFNative(
            path=pdf_path,
            document=parsed,
            layout_seconds=time.perf_counter() - started - ocr_seconds,
            prebuilt=prebuilt,
            body_sizes=body_sizes,
            ocr_pages=ocr_pages,
            ocr_seconds=ocr_seconds,
            scratch=scratch,
        )

    def _ocr_pages(
        self, pdf_path: Path, verdicts: Sequence[str | None] | None = None
    ) -> tuple[dict[int, str], tempfile.TemporaryDirectory[str] | None, Path]:
        """OCR the pages that need it (see :func:`~grounded.parsers.ocr.plan_ocr`) into a private
        copy: (1-based page -> reason, the copy's directory, the path to read from)."""
        if self._tessdata is None:
            return {}, None, pdf_path
        if verdicts is not None:
            plan, count = plan_ocr(verdicts, self.ocr), len(verdicts)
        else:
            import pymupdf

            with mupdf_quiet(), pymupdf.open(pdf_path) as doc:
                plan = pages_needing_ocr(doc, self.ocr)
                count = doc.page_count
        if plan.blank:  # as inspect_pdf warns when OCR is off: these pages yield no text either way
            warnings.warn(
                f"{pdf_path}: {len(plan.blank)} of {count} page(s) have no text layer and will yield no text: "
                f"pages {format_pages([p + 1 for p in plan.blank])} (blank: nothing to OCR)",
                NoTextLayerWarning,
                stacklevel=4,
            )
        if not plan.reasons:
            return {}, None, pdf_path
        scratch = tempfile.TemporaryDirectory(prefix="grounded-ocr-")
        target = Path(scratch.name) / "ocr.pdf"
        try:
            with mupdf_quiet():
                ocr_copy(pdf_path, plan.pages, target, dpi=self.ocr_dpi, tessdata=self._tessdata)
        except BaseException:
            scratch.cleanup()
            raise
        log.info("%s: OCR'd %d page(s) at %d dpi", pdf_path, len(plan.pages), self.ocr_dpi)
        return {p + 1: why for p, why in plan.reasons.items()}, scratch, target

    def _layout_iter(
        self, doc: Any, pdf_path: Path, count: int, ocr_pages: frozenset[int] = frozenset()
    ) -> Iterator[tuple[list[Any], dict, dict]]:
        """(layouts, prebuilt elements, body font sizes) per batch of pages, in page order
        (``ocr_pages``: the 1-based pages whose text layer is OCR, for the workers' tree builders)."""
        if self.workers > 1 and count > 1:
            image_dir = str(self.image_dir) if self.image_dir is not None else None
            batches = _guided_batches(count, self.workers, self.batch_pages)
            tasks = [_PageTask(str(pdf_path), b, image_dir, self.image_dpi, self.label_map, ocr_pages) for b in batches]
            from concurrent.futures.process import BrokenProcessPool

            try:
                yield from self._get_pool().map(_worker_task, tasks)
            except BrokenProcessPool as exc:
                self._pool = None
                raise ParserError(
                    pdf_path,
                    "layout worker processes died (a script that uses workers > 1 must start work under "
                    "`if __name__ == '__main__':`, as multiprocessing's spawn start method requires)",
                ) from exc
            return
        for batch in _page_batches(count, self.batch_pages):
            yield _layout_pages(doc, batch), {}, {}

    # -- step 2: tree ---------------------------------------------------------------------------
    def _transform(self, native: PyMuPDFNative) -> ParsingResult:
        root = ParsingResult("root", T.ROOT)
        builder = _TreeBuilder(native.path, self.image_dir, self.image_dpi, ocr_pages=frozenset(native.ocr_pages))
        builder.label_map = self.label_map
        builder.body_sizes.update(native.body_sizes)
        layer: TextLayer | None = None
        try:
            with mupdf_quiet():
                for page in native.document.pages:
                    done = native.prebuilt.get(page.page_number)
                    if done is not None:
                        builder.elements.extend(done)
                        continue
                    if layer is None:
                        layer = TextLayer(native.path, cache_pages=2)
                    builder.add_page(page, layer.page(page.page_number), layer)
        finally:
            if layer is not None:
                layer.close()
        elements = builder.finish()
        if builder.body_sizes:  # evidence for the heading levels (post-processing decides them)
            root.metadata["body_font_size"] = builder.body_sizes.most_common(1)[0][0]
        # emptiness is checked by BaseParser.finish, after the element filter
        for node in elements:
            root.add_child(node)
        root.metadata["layout_seconds"] = round(native.layout_seconds, 4)
        # per page: where its text came from, and how the layout model saw it (merged into "pages")
        pages = []
        for p in native.document.pages:
            entry: dict[str, Any] = {"page": p.page_number, **(getattr(p, "view", None) or {})}
            why = native.ocr_pages.get(p.page_number)
            entry["text_source"] = "ocr" if why else "text_layer"
            if why:
                entry["ocr_reason"] = why
            left_out = getattr(p, OCR_LEFT_OUT_KEY, None)
            if left_out is not None:
                entry[OCR_LEFT_OUT_KEY] = left_out
            from_pictures = getattr(p, OCR_FROM_PICTURES_KEY, None)
            if from_pictures is not None:
                entry[OCR_FROM_PICTURES_KEY] = from_pictures
            pages.append(entry)
        root.metadata["pages"] = pages
        root.metadata["ocr"] = {"setting": self.ocr_setting(), "pages": sorted(native.ocr_pages)}
        if native.ocr_pages:
            root.metadata["ocr"]["seconds"] = round(native.ocr_seconds, 4)
        return root

    # -- step 3: markdown -----------------------------------------------------------------------
    def _get_md(self, native: PyMuPDFNative) -> str:
        md = str(native.document.to_markdown(header=False, footer=False, write_images=False, embed_images=False))
        return re.sub(r"\n{3,}", "\n\n", md).strip() + "\n"


# ---------------------------------------------------------------------------------------------
# native -> tree
# ---------------------------------------------------------------------------------------------

_TEXT_CLASSES = frozenset(
    {"title", "section-header", "text", "list-item", "caption", "footnote", "formula", "page-header", "page-footer"}
)
_FURNITURE = (T.PAGE_HEADER, T.PAGE_FOOTER)


#: How an element's layout box grows to the text lines it holds (#13.5), by type (others: "grow"):
#: "grow" = to the lines' full height and width (whole words are taken, so a line may stick out of
#: a tight box), "width" = sideways only (the model's top and bottom kept), "layout" = the model's
#: box as is. Chosen per class from DLA F1@50:95 (docs/results/dla.md).
BOX_GROWTH: dict[ParsingResultType, str] = {}

_FURNITURE_STYLE_KEY = "_furniture_style"  # PAGE_HEADER style [size, caps, bold]; removed in finish()
#: a page header is a heading when set at least this much larger than the body text (or bold)
HEADING_SIZE_RATIO = 1.15


def _in_margin(pc: PageChars) -> np.ndarray:
    """Characters whose centre lies in the page's outer FALLBACK_MARGIN_SHARE band."""
    cx, cy = (pc.x0 + pc.x1) / 2, (pc.y0 + pc.y1) / 2
    mx, my = FALLBACK_MARGIN_SHARE * pc.width, FALLBACK_MARGIN_SHARE * pc.height
    return np.asarray((cx < mx) | (cx > pc.width - mx) | (cy < my) | (cy > pc.height - my))


def _insert_boxes(
    boxes: list[Any],
    small: list[bool],
    nodes: dict[int, ParsingResult],
    notes: dict[int, int],
    added: dict[int, list[tuple[bool, ParsingResult]]],
    width: float,
    height: float,
) -> tuple[list[Any], list[bool], dict[int, ParsingResult], dict[int, int]]:
    """The page's boxes, small-print flags, elements and table notes (by box index) with the
    elements ``added`` next to box ``i`` (``added[i]``: each before it or not) as text boxes of
    their own: where a page without columns reads them (in the model's order)."""
    out_boxes: list[Any] = []
    out_small: list[bool] = []
    out_nodes: dict[int, ParsingResult] = {}
    moved: dict[int, int] = {}

    def add(node: ParsingResult) -> None:
        out_nodes[len(out_boxes)] = node
        out_boxes.append(Rect(*node.geom[0].to_points(width, height), "text"))
        out_small.append(False)

    for i, box in enumerate(boxes):
        for node in (n for before, n in added.get(i, []) if before):
            add(node)
        moved[i] = len(out_boxes)
        out_boxes.append(box)
        out_small.append(small[i])
        if i in nodes:
            out_nodes[moved[i]] = nodes[i]
        for node in (n for before, n in added.get(i, []) if not before):
            add(node)
    return out_boxes, out_small, out_nodes, {moved[k]: moved[v] for k, v in notes.items()}


def _layout_lost_text(
    pc: PageChars, claimed: np.ndarray, in_picture: np.ndarray, readable: np.ndarray | None = None
) -> bool:
    """Whether the layout pass lost enough of the page's text to take it from the text layer:
    no character claimed at all, or the characters in no box (or in none but pictures) are at
    least :data:`FALLBACK_UNBOXED_SHARE` (:data:`FALLBACK_UNCLAIMED_SHARE`) of the page's text.
    On an OCR'd page (``readable`` given, see :func:`readable_unclaimed`) only unclaimed text
    that reads as text counts, pictures' included, against :data:`FALLBACK_UNBOXED_SHARE` of the
    page's text without the rest: that is Tesseract's reading of figures, not text the layout lost."""
    text = pc.solid if readable is None else pc.solid & (claimed | readable)
    total = int(text.sum())
    if total < FALLBACK_MIN_CHARS:
        return False
    if not claimed.any():
        return True
    unclaimed = text & ~claimed & ~_in_margin(pc)
    if readable is not None:
        return int(unclaimed.sum()) >= FALLBACK_UNBOXED_SHARE * total
    if int((unclaimed & ~in_picture).sum()) >= FALLBACK_UNBOXED_SHARE * total:
        return True
    return int(unclaimed.sum()) >= FALLBACK_UNCLAIMED_SHARE * total


@dataclass
class _TreeBuilder:
    """Layout boxes + text layer -> elements, page by page; :meth:`finish` does the document-wide
    part (line-break hyphens, first-line headings). Pages may be built in different processes."""

    path: Path
    image_dir: Path | None = None
    image_dpi: int = 150
    elements: list[ParsingResult] = field(default_factory=list)
    label_map: dict[str, ParsingResultType] = field(default_factory=lambda: dict(PyMuPDFParser.LABEL_MAP))
    body_sizes: Counter[float] = field(default_factory=Counter)  # paragraph font size -> chars
    #: 1-based pages whose text layer is Tesseract's (figures' insides included: see OCR_TEXT_MIN_WORD_SHARE)
    ocr_pages: frozenset[int] = frozenset()

    def add_page(self, page: Any, pc: PageChars, layer: TextLayer) -> None:
        claimed = np.zeros(len(pc), dtype=bool)
        w, h = pc.width, pc.height
        if abs(w - page.width) > 0.5 or abs(h - page.height) > 0.5:
            log.warning("%s: page %d size differs between layout and text layer", self.path, page.page_number)
        figures = 0
        pictures: dict[int, int] = {}  # OCR'd page: box index of a picture -> its figure number
        in_picture = np.zeros(len(pc), dtype=bool)
        self._table_leftover: list[np.ndarray] = []
        self._captions: dict[int, ParsingResult] = {}  # id(table) -> its caption taken from its grid
        # the turn that shows the page as the layout model saw it (text reading left to right)
        self._turn = int((getattr(page, "view", None) or {}).get("layout_turn", 0))
        nodes: dict[int, ParsingResult] = {}  # box index -> element; appended in reading order below
        boxes = _merge_image_strips(page.boxes, layer, pc.page)
        if not self._turn:  # panels stacked top to bottom as the page is shown
            boxes = _split_panels(boxes, layer, pc.page)
        if not self._turn:  # a text box over a column gutter: one part per column (scans)
            boxes = split_columns(boxes, pc)
        small = _small_print(boxes, pc, w, h)
        table_notes = _table_notes(boxes, upright(boxes, self._turn, w, h), small, pc)
        if not self._turn:  # one box per marked note (lines run across only on an upright page)
            boxes, small, table_notes = _split_table_notes(boxes, small, table_notes, pc)
        for index, box in enumerate(boxes):
            label = box.boxclass
            type_, meta = map_label(label, self.label_map)
            if index in table_notes:  # a table's notes: footnotes read right after the table
                meta = {**meta, "table_note": True}
                type_ = T.FOOTNOTE
            x0, y0, x1, y1 = clip_to_page(box.x0, box.y0, box.x1, box.y1, w, h)
            if x1 - x0 <= 0 or y1 - y0 <= 0:
                continue
            geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, w, h)
            node: ParsingResult | None
            if label == "table":
                node = self._table(box, pc, claimed, geom, meta, layer)
            elif label == "picture":
                in_picture[pc.select(x0, y0, x1, y1)] = True
                figures += 1
                if getattr(box, "strips", 0):
                    meta = {**meta, "image_strips": box.strips}
                if getattr(box, "panel", None):
                    meta = {**meta, "panel": box.panel}
                node = ParsingResult("", T.FIGURE, geom=[geom], metadata=meta)
                if pc.page in self.ocr_pages:  # its image once text it swallowed is taken out
                    pictures[index] = figures
                else:
                    node.image = self._figure_image(layer, pc.page, figures, (x0, y0, x1, y1))
            elif label in _TEXT_CLASSES or type_ == T.MISSING:
                node = self._text(type_, pc, claimed, (x0, y0, x1, y1), geom, meta)
                if node is None:
                    continue
                if type_ == T.LIST_ITEM:
                    node.metadata["indent"] = round(getattr(box, "upright_x0", x0 / w), 4)
            else:  # pragma: no cover - every class of the model is handled above
                node = ParsingResult("", type_, geom=[geom], metadata=meta)
            nodes[index] = node
        # an OCR'd page: its text-layer blocks, for the text pictures swallowed and the fallback
        rects = text_layer_rects(pc, layer) if pc.page in self.ocr_pages else []
        if pictures:  # an OCR'd page: text the pictures swallowed, next to its picture in the model's order
            boxes = list(boxes)  # the pictures' boxes shrink: never the layout's own list
            taken = self._picture_text(page, pc, claimed, pictures, boxes, nodes, layer, rects)
            boxes, small, nodes, table_notes = _insert_boxes(boxes, small, nodes, table_notes, taken, w, h)
        in_output = claimed.copy()  # claimed chars minus those a table box took but no cell holds
        for leftover in self._table_leftover:
            in_output[leftover] = False
        if pc.page in self.ocr_pages:
            # an OCR'd page: the fallback's elements are read in the page's reading order with the
            # rest (a born-digital page keeps them after the rest, as before)
            for node in self._ocr_fallback(page, pc, in_output, in_picture, rects):
                nodes[len(boxes)] = node
                x0, y0, x1, y1 = node.geom[0].to_points(w, h)
                boxes = [*boxes, Rect(x0, y0, x1, y1, "text")]
                small = [*small, False]
        # text is claimed in the model's order (unchanged); elements follow the page's reading
        # order from the boxes' geometry: columns, bands, footnotes after the body (#13.1, #13.2)
        order = reading_order(upright(boxes, self._turn, w, h), small, table_notes)
        for i in order:
            if i in nodes:
                caption = self._captions.pop(id(nodes[i]), None)
                self.elements.extend([nodes[i]] if caption is None else [caption, nodes[i]])
        if pc.page not in self.ocr_pages and _layout_lost_text(pc, in_output, in_picture):
            self.elements.extend(self._text_layer_blocks(pc, in_output, text_layer_rects(pc, layer)))

    def _picture_text(
        self,
        page: Any,
        pc: PageChars,
        claimed: np.ndarray,
        pictures: dict[int, int],
        boxes: list[Any],
        nodes: dict[int, ParsingResult],
        layer: TextLayer,
        rects: list[tuple[float, float, float, float]],
    ) -> dict[int, list[tuple[bool, ParsingResult]]]:
        """An OCR'd page: the text its picture boxes swallowed (:func:`text_in_picture`) as
        elements of their own (returned per picture's box index, each read before the picture or
        not; CAPTION when it opens like one, else PARAGRAPH; their characters are marked in
        ``claimed``). Each picture's box (in ``boxes``, and its FIGURE
        node's) shrinks to what is left, a picture with nothing left is dropped from ``nodes``;
        what was taken is counted in the page's :data:`OCR_FROM_PICTURES_KEY` (set on ``page``);
        ``rects``: the page's text-layer blocks (:func:`text_layer_rects`)."""
        found: dict[int, list[tuple[bool, ParsingResult]]] = {}
        taken_chars = 0
        for index, number in pictures.items():
            figure = nodes[index]
            x0, y0, x1, y1 = figure.geom[0].to_points(pc.width, pc.height)
            # top and bottom as displayed: a page laid out turned keeps its pictures whole
            blocks, left = ([], (x0, y0, x1, y1)) if self._turn else text_in_picture(pc, claimed, (x0, y0, x1, y1), rects)
            for sel, before in blocks:
                taken_chars += int(pc.solid[sel].sum())
                sel = self._with_line_pieces(pc, claimed, nodes, sel)
                text = build_lines([pc], [sel]).text
                type_ = T.CAPTION if _FIGURE_CAPTION_START.match(text) else T.PARAGRAPH
                ink = sel[pc.solid[sel]]
                rect = clip_to_page(pc.x0[ink].min(), pc.y0[ink].min(), pc.x1[ink].max(), pc.y1[ink].max(), pc.width, pc.height)
                geom = ParsingBoundingBox.from_points(pc.page, *rect, pc.width, pc.height)
                others = np.ones(len(pc), dtype=bool)  # take this block's characters, nothing else
                others[sel] = False
                meta = {"native_label": "text in picture", "from_picture": True}
                node = self._text(type_, pc, others, rect, geom, meta)
                claimed[sel] = True
                if node is not None and node.content:
                    found.setdefault(index, []).append((before, node))
            if left is None:
                log.debug("%s: page %d: a picture box held nothing but text", self.path, pc.page)
                del nodes[index]
                continue
            if blocks:
                figure.metadata["text_taken_out"] = len(blocks)
                figure.geom = [ParsingBoundingBox.from_points(pc.page, *left, pc.width, pc.height)]
                boxes[index] = Rect(*left, "picture")
            figure.image = self._figure_image(layer, pc.page, number, left)
        setattr(page, OCR_FROM_PICTURES_KEY, {
            "elements": sum(len(taken) for taken in found.values()),
            "chars": taken_chars,
        })
        return found

    def _with_line_pieces(
        self, pc: PageChars, claimed: np.ndarray, nodes: dict[int, ParsingResult], sel: np.ndarray
    ) -> np.ndarray:
        """``sel`` (text taken out of a picture) with the layout's paragraphs and captions that
        hold pieces of its lines and nothing outside its rows (the model boxed "Figure S1 Query
        fragment that" of a caption line the picture swallowed the rest of): they join it and
        leave ``nodes``."""
        lines = np.unique(pc.line[sel])
        solid = pc.solid
        ink = sel[solid[sel]]
        top, bottom = pc.y0[ink].min(), pc.y1[ink].max()
        for j in [j for j, node in nodes.items() if node.type in (T.PARAGRAPH, T.CAPTION)]:
            if nodes[j].metadata.get("from_picture") or not nodes[j].geom:
                continue
            inside = pc.select(*nodes[j].geom[0].to_points(pc.width, pc.height))
            piece = inside[claimed[inside]]
            cy = pc.cy[piece]
            if len(piece) and np.isin(pc.line[piece], lines).any() and ((cy >= top) & (cy <= bottom)).all():
                log.debug("%s: page %d: %r joins the text taken out of a picture", self.path, pc.page,
                          nodes[j].content[:60])
                sel = np.union1d(sel, piece)
                del nodes[j]
        return sel

    def _ocr_fallback(
        self,
        page: Any,
        pc: PageChars,
        claimed: np.ndarray,
        in_picture: np.ndarray,
        rects: list[tuple[float, float, float, float]],
    ) -> list[ParsingResult]:
        """An OCR'd page's layout fallback: the text-layer blocks that read as text when the layout
        lost enough of them (:func:`_layout_lost_text`), never a figure's OCR; what stays out is
        counted in the page's :data:`OCR_LEFT_OUT_KEY` (set on ``page``, the layout object, which
        travels back from worker processes); ``rects``: the page's text-layer blocks."""
        readable, verdicts = readable_unclaimed(self.path, pc, claimed, in_picture, rects)
        found = []
        if _layout_lost_text(pc, claimed, in_picture, readable):
            found = self._text_layer_blocks(pc, claimed, rects, keep_out=~readable)
        left_out = pc.solid & ~claimed
        setattr(page, OCR_LEFT_OUT_KEY, {
            "chars": int(left_out.sum()),
            "in_pictures": int((left_out & in_picture).sum()),
            "unreadable_blocks": verdicts.count(False),
            "unreadable_chars": int((left_out & ~readable).sum()),
        })
        return found

    def _text_layer_blocks(
        self,
        pc: PageChars,
        claimed: np.ndarray,
        rects: list[tuple[float, float, float, float]],
        keep_out: np.ndarray | None = None,
    ) -> list[ParsingResult]:
        """The layout model left (much of) the page's text out of its text and table boxes (it can
        fail on unusual pages): MuPDF's text blocks (``rects``) become PARAGRAPHs (returned)
        holding the characters no element took (``metadata["layout_fallback"]``; they are marked in
        ``claimed``), so no text is lost without a trace. ``keep_out``: characters never taken (on
        an OCR'd page, those that do not read as text: a figure's OCR, see :func:`readable_unclaimed`)."""
        log.warning(
            "%s: the layout model missed %d of %d characters on page %d; adding them from the text layer's blocks",
            self.path, int((~claimed & pc.solid).sum()), int(pc.solid.sum()), pc.page,
        )
        taken = claimed if keep_out is None else claimed | keep_out
        found: list[ParsingResult] = []
        mx, my = FALLBACK_MARGIN_SHARE * pc.width, FALLBACK_MARGIN_SHARE * pc.height
        for x0, y0, x1, y1 in rects:
            # blocks already taken (this loop takes more) make a margin block a printer's mark
            any_taken = claimed.any() if keep_out is None else (taken & ~keep_out).any()
            if any_taken and (x1 <= mx or x0 >= pc.width - mx or y1 <= my or y0 >= pc.height - my):
                continue  # a printer's mark in the margin, not text the layout lost
            geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
            meta = {"native_label": "text-layer block", "layout_fallback": True}
            node = self._text(T.PARAGRAPH, pc, taken, (x0, y0, x1, y1), geom, meta)
            if node is not None and node.content:
                found.append(node)
        if keep_out is not None:
            claimed |= taken & ~keep_out
        return found

    def _text(
        self,
        type_: ParsingResultType,
        pc: PageChars,
        claimed: np.ndarray,
        rect: tuple[float, float, float, float],
        geom: ParsingBoundingBox,
        meta: dict[str, Any],
    ) -> ParsingResult | None:
        sel = pc.select(*rect)
        sel = sel[~claimed[sel]]
        claimed[sel] = True
        built = build_lines([pc], [sel], defer_hyphens=True)
        spans = lines_to_spans(built.lines, [pc]).get(0, [])
        if spans:  # whole words are taken, so a line may stick out of a tight box: grow the box
            geom = _grown_box(geom, spans, BOX_GROWTH.get(type_, "grow"))
        geom.spans = spans
        node = ParsingResult("", type_, content=built.text, geom=[geom], metadata=meta)
        if built.hyphens:  # line-break hyphens: decided once per document in finish() (#13.3)
            node.metadata[HYPHENS_KEY] = [list(h) for h in built.hyphens]
        if type_ == T.PARAGRAPH and len(sel):
            sizes, counts = np.unique(np.round(pc.size[sel] * 2) / 2, return_counts=True)
            self.body_sizes.update(dict(zip(sizes.tolist(), counts.tolist(), strict=True)))
        if type_ in HEADING_TYPES and built.text:
            style = _style_of(pc, sel, built.text)
            node.metadata["font_size"], node.metadata["font_bold"] = style.size, style.bold
        elif type_ == T.PAGE_HEADER and built.text:
            style = _style_of(pc, sel, built.text)
            node.metadata[_FURNITURE_STYLE_KEY] = [style.size, style.caps, style.bold]
        return node

    def _table(
        self,
        box: Any,
        pc: PageChars,
        claimed: np.ndarray,
        geom: ParsingBoundingBox,
        meta: dict[str, Any],
        layer: TextLayer,
    ) -> ParsingResult:
        table = ParsingResult("", T.TABLE, geom=[geom], metadata=meta)
        info = box.table or {}
        grid = info.get("cells")
        source = "layout"
        if not grid:
            grid = _find_tables_grid(layer, pc.page, geom.to_points(pc.width, pc.height))
            source = "find_tables" if grid else "lines"
        if not grid:  # no grid at all: one row per text line
            x0, y0, x1, y1 = geom.to_points(pc.width, pc.height)
            sel = pc.select(x0, y0, x1, y1)
            built = build_lines([pc], [sel[~claimed[sel]]])
            grid = [[(x0, ln.y0, x1, ln.y1)] for ln in built.lines]
        table.metadata["cell_source"] = source
        turn = self._turn if source == "layout" else 0
        grid, joined = _join_continuation_rows(grid, _grid_line_tops(grid, pc, claimed, turn))
        if joined:
            table.metadata["continuation_rows_joined"] = joined
        caption = self._caption_row(grid, pc, claimed)
        if caption is not None:  # the table's caption inside its box: a CAPTION before the table
            self._captions[id(table)] = caption
            grid = grid[1:]
            rest = [b for row_boxes in grid for b in row_boxes if b is not None]
            x0, y0, x1, y1 = clip_to_page(min(b[0] for b in rest), min(b[1] for b in rest), max(b[2] for b in rest),
                                   max(b[3] for b in rest), pc.width, pc.height)
            geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
            table.geom = [geom]
        for r, row_boxes in enumerate(grid):
            row = ParsingResult("", T.TABLE_ROW, metadata={"row": r})
            cells: list[ParsingResult] = []
            for c, cell_box in enumerate(row_boxes):
                if cell_box is None:
                    continue
                cx0, cy0, cx1, cy1 = cell_box
                x0, y0, x1, y1 = clip_to_page(cx0, cy0, cx1, cy1, pc.width, pc.height)
                if x1 - x0 <= 0 or y1 - y0 <= 0:
                    continue
                cell_geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
                cell = self._text(T.TABLE_CELL, pc, claimed, (x0, y0, x1, y1), cell_geom, {"row": r, "col": c})
                if cell is not None:
                    cells.append(cell)
            if not any(cell.content for cell in cells):
                continue  # empty grid row
            row.geom = [ParsingBoundingBox.enclosing([cell.geom[0] for cell in cells])]
            for cell in cells:
                row.add_child(cell)
            table.add_child(row)
        # claim whatever else lies in the table box (e.g. text between grid lines), but remember
        # it: when a page loses much text this way, add_page takes it from the text layer
        x0, y0, x1, y1 = geom.to_points(pc.width, pc.height)
        inside = pc.select(x0, y0, x1, y1)
        self._table_leftover.append(inside[~claimed[inside]])
        claimed[inside] = True
        if table.children:
            table.geom = [ParsingBoundingBox.enclosing([geom, *(r.geom[0] for r in table.children)])]
        table.content = table_to_markdown(table) if table.children else ""
        return table

    def _caption_row(self, grid: Grid, pc: PageChars, claimed: np.ndarray) -> ParsingResult | None:
        """The grid's first row when it is the table's caption ("Table 2 ...", "Tab. 3: ...") that
        the layout model boxed with the table: a CAPTION element over that row, else None."""
        if not any(b is not None for row_boxes in grid[1:] for b in row_boxes):
            return None  # nothing but the caption: not a table to take it from
        cells = [b for b in grid[0] if b is not None]
        if not cells:
            return None
        x0, y0 = min(b[0] for b in cells), min(b[1] for b in cells)
        x1, y1 = max(b[2] for b in cells), max(b[3] for b in cells)
        x0, y0, x1, y1 = clip_to_page(x0, y0, x1, y1, pc.width, pc.height)
        if x1 <= x0 or y1 <= y0:
            return None
        sel = pc.select(x0, y0, x1, y1)
        if not _CAPTION_START.match(build_lines([pc], [sel[~claimed[sel]]]).text):
            return None
        geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
        return self._text(T.CAPTION, pc, claimed, (x0, y0, x1, y1), geom, {"native_label": "table caption row"})

    def _figure_image(
        self, layer: TextLayer, page: int, number: int, rect: tuple[float, float, float, float]
    ) -> str | None:
        out_dir = self.image_dir
        if out_dir is None:
            return None
        import pymupdf

        from ..serialization import atomic_write_bytes

        pdf_page = layer._doc.load_page(page - 1)
        clip = pymupdf.Rect(rect) * pdf_page.derotation_matrix  # displayed -> unrotated page space
        pix = pdf_page.get_pixmap(clip=clip, dpi=self.image_dpi)
        name = f"{self.path.stem}-p{page:04d}-{number:02d}.png"
        return str(atomic_write_bytes(out_dir / name, pix.tobytes("png")))

    def finish(self) -> list[ParsingResult]:
        """Document-wide part: line-break hyphens, first-line headings, running headers/footers the
        model gave a text type on OCR'd pages; returns the root's children (heading levels and lists
        are post-processing's, as for every backend)."""
        self._resolve_hyphens()
        self._first_line_headings()
        mark_running_furniture(self.elements, pages=self.ocr_pages)
        return self.elements

    def _resolve_hyphens(self) -> None:
        """Keep or drop each line-break hyphen with the whole document as evidence (#13.3);
        tables whose cells changed get their Markdown again."""
        changed = {id(n) for n in resolve_document(self.elements)}
        if changed:
            for n in self.elements:
                if n.type == T.TABLE and any(id(d) in changed for d in n.walk()):
                    n.content = table_to_markdown(n)

    # -- headers --------------------------------------------------------------------------------
    def _first_line_headings(self) -> None:
        """A PAGE_HEADER that opens its page's text flow is a heading, not furniture, when it is
        one line set like a heading (at least HEADING_SIZE_RATIO x the body size, or bold and not
        smaller), its text is not repeated on another page (running headers are), and body text
        (a paragraph or list item) follows right below it. It becomes a SECTION_HEADER
        (``metadata["relabeled_from"] = "PAGE_HEADER"``, native label kept)."""
        styles = {id(n): n.metadata.pop(_FURNITURE_STYLE_KEY, None) for n in self.elements}
        if not self.body_sizes:
            return
        body = self.body_sizes.most_common(1)[0][0]
        repeats: dict[str, set[int]] = {}
        by_page: dict[int, list[ParsingResult]] = {}
        for n in self.elements:
            if not n.geom:
                continue
            if n.type in _FURNITURE:
                repeats.setdefault(_running_text(n.content), set()).add(n.geom[0].page)
            if n.type != T.FIGURE and n.content.strip():
                by_page.setdefault(n.geom[0].page, []).append(n)
        for nodes in by_page.values():
            if len(nodes) < 2 or nodes[0].type != T.PAGE_HEADER:
                continue
            first, after = nodes[0], nodes[1]
            style = styles.get(id(first))
            if style is None or after.type not in (T.PARAGRAPH, T.LIST_ITEM):
                continue
            size, caps, bold = style
            if not (size >= HEADING_SIZE_RATIO * body or (bold and size >= body)):
                continue
            if len(repeats.get(_running_text(first.content), ())) > 1 or len(first.geom[0].spans) != 1:
                continue
            box, below = first.geom[0], after.geom[0]
            height = box.bottom - box.top
            if not (box.bottom - 0.5 * height <= below.top <= box.bottom + 2.5 * height):
                continue
            first.type = T.SECTION_HEADER
            first.metadata["relabeled_from"] = T.PAGE_HEADER.value
            first.metadata["font_size"], first.metadata["font_bold"] = size, bold


#: a text box whose median font size is below this share of the page's text boxes' is small print
SMALL_PRINT = 0.85


def _small_print(boxes: Sequence[Any], pc: PageChars, w: float, h: float) -> list[bool]:
    """Per layout box: a "text" box set in small print (footnotes, affiliations the model did
    not label), for :func:`reading_order`."""
    sizes: dict[int, np.ndarray] = {}
    for i, box in enumerate(boxes):
        if box.boxclass == "text":
            sel = pc.select(*clip_to_page(box.x0, box.y0, box.x1, box.y1, w, h))
            if len(sel):
                sizes[i] = pc.size[sel]
    if len(sizes) < 2:
        return [False] * len(boxes)
    page = float(np.median(np.concatenate(list(sizes.values()))))
    return [i in sizes and float(np.median(sizes[i])) < SMALL_PRINT * page for i in range(len(boxes))]


#: a table's note starts right below it (or below another of its notes): at most this far (points) ...
TABLE_NOTE_GAP = 24.0
#: ... within the table's width widened by this share of it at either side, and is set in small
#: print or opens with a note marker (*, †, a superscript letter, "Note", "Source", ...)
TABLE_NOTE_SLACK = 0.05
_NOTE_MARKER = re.compile(
    r"^\s*(?:[*∗†‡§¶※#]|[a-z](?=[A-Z])|\(?[a-z]\)|\d{1,2}\)|(?i:notes?|sources?|abbreviations?|key|nb)\b)"
)


def _table_notes(boxes: Sequence[Any], seen: Sequence[Any], small: Sequence[bool], pc: PageChars) -> dict[int, int]:
    """Text/footnote boxes that are a table's notes (#13.5), mapped to the table's box index: right
    below the table (:data:`TABLE_NOTE_GAP`) or below another of its notes, within its width, in
    small print or opening with a note marker (a heading box only with a marker: "Notes.").
    ``seen``: the boxes as the reader sees the page (see :func:`.reading_order.upright`)."""
    out: dict[int, int] = {}
    candidates = sorted(
        (i for i, b in enumerate(seen) if b.boxclass in ("text", "footnote", "section-header")),
        key=lambda i: seen[i].y0,
    )
    for t, table in enumerate(seen):
        if table.boxclass != "table":
            continue
        slack = TABLE_NOTE_SLACK * (table.x1 - table.x0)
        bottom = table.y1
        for i in candidates:
            b = seen[i]
            if i in out or b.y0 < bottom - 2.0 or b.y0 - bottom > TABLE_NOTE_GAP:
                continue
            if b.x0 < table.x0 - slack or b.x1 > table.x1 + slack:
                continue
            d = boxes[i]
            sel = pc.select(*clip_to_page(d.x0, d.y0, d.x1, d.y1, pc.width, pc.height))
            text = "".join(pc.chars[k] for k in sel[:40])
            marked = bool(_NOTE_MARKER.match(text))
            if not (marked or (b.boxclass != "section-header" and (small[i] or b.boxclass == "footnote"))):
                continue  # a heading below a table is a note only as "Notes", "Source", ...
            out[i] = t
            bottom = max(bottom, b.y1)
    return out


def _split_table_notes(
    boxes: Sequence[Any], small: Sequence[bool], notes: dict[int, int], pc: PageChars
) -> tuple[list[Any], list[bool], dict[int, int]]:
    """A table-note box holding several notes, each opening a line with a note marker ("* ...",
    "a ...", "Source: ..."), becomes one box per note. Returns the boxes, their small-print flags
    and the notes (new indices)."""
    import copy

    out: list[Any] = []
    out_small: list[bool] = []
    origin: list[int] = []  # new index -> old index
    for i, b in enumerate(boxes):
        parts = [b]
        if i in notes:
            sel = pc.select(*clip_to_page(b.x0, b.y0, b.x1, b.y1, pc.width, pc.height))
            built = build_lines([pc], [sel])
            starts = [
                ln.y0 for k, ln in enumerate(built.lines)
                if k and _NOTE_MARKER.match(built.text[ln.start : ln.end])
            ]
            if starts:
                edges = [b.y0, *(y - 0.5 for y in starts), b.y1]
                parts = []
                for top, bottom in zip(edges, edges[1:], strict=False):
                    part = copy.copy(b)
                    part.y0, part.y1 = top, bottom
                    parts.append(part)
        for part in parts:
            out.append(part)
            out_small.append(small[i])
            origin.append(i)
    if len(out) == len(boxes):
        return list(boxes), list(small), notes
    new_index = {old: new for new, old in reversed(list(enumerate(origin)))}  # first part of each box
    new_notes = {new: new_index[notes[old]] for new, old in enumerate(origin) if old in notes}
    return out, out_small, new_notes


#: picture boxes are strips of one stored image when each is (within this IoU) the box of an image
#: placed on the page, and they touch (gap at most STRIP_GAP points) with the same left and right
STRIP_IOU = 0.9
STRIP_GAP = 2.0


def _merge_image_strips(boxes: Sequence[Any], layer: TextLayer, page: int) -> list[Any]:
    """A scan stored as horizontal image strips gives one picture box per strip: stacked picture
    boxes that are exactly touching image placements of the same width become one picture
    (``strips`` = how many). Separate panels (with a gap, or not image-exact) stay apart."""
    import copy

    import pymupdf

    pictures = [i for i, b in enumerate(boxes) if b.boxclass == "picture"]
    if len(pictures) < 2:
        return list(boxes)
    pdf_page = layer._doc.load_page(page - 1)
    m = pdf_page.rotation_matrix
    images = []
    for info in pdf_page.get_image_info():
        r = (pymupdf.Rect(info["bbox"]) * m).normalize()
        images.append((r.x0, r.y0, r.x1, r.y1))

    def placed(b: Any) -> bool:
        return any(_iou((b.x0, b.y0, b.x1, b.y1), img) >= STRIP_IOU for img in images)

    strips = sorted((i for i in pictures if placed(boxes[i])), key=lambda i: boxes[i].y0)
    head_of: dict[int, int] = {}
    for a, b in zip(strips, strips[1:], strict=False):
        head = head_of.get(a, a)
        top, low = boxes[head], boxes[b]
        if (
            abs(top.x0 - low.x0) <= STRIP_GAP
            and abs(top.x1 - low.x1) <= STRIP_GAP
            and -STRIP_GAP <= low.y0 - boxes[a].y1 <= STRIP_GAP
        ):
            head_of[b] = head
    if not head_of:
        return list(boxes)
    out: list[Any] = []
    merged: dict[int, Any] = {}
    for i, b in enumerate(boxes):
        if i in head_of:
            big = merged[head_of[i]]
            big.x0, big.y0, big.x1, big.y1 = min(big.x0, b.x0), min(big.y0, b.y0), max(big.x1, b.x1), max(big.y1, b.y1)
            big.strips += 1
            continue
        if i in head_of.values():
            b = copy.copy(b)
            b.strips = 1
            merged[i] = b
        out.append(b)
    return out


#: a picture box holds stacked panels when its graphics (paths, images) leave a horizontal band at
#: least PANEL_GAP points high free (sub-captions and axis labels may sit there) between parts at
#: least PANEL_MIN points high each
PANEL_GAP = 8.0
PANEL_MIN = 24.0


def _split_panels(boxes: Sequence[Any], layer: TextLayer, page: int) -> list[Any]:
    """A picture box the layout model drew around stacked sub-figure panels separated by white
    space (and their sub-captions) becomes one picture per panel (``panel`` = 1, 2, ...): the cut
    lies right above the next panel's graphics, so a panel keeps the labels and caption below it.
    Panels that touch, or one frame around all of them, keep the picture whole."""
    import copy

    import pymupdf

    pictures = [i for i, b in enumerate(boxes) if b.boxclass == "picture"]
    if not pictures:
        return list(boxes)
    pdf_page = layer._doc.load_page(page - 1)
    m = pdf_page.rotation_matrix
    graphics = []
    for kind, rect in pdf_page.get_bboxlog():
        if kind in ("fill-path", "stroke-path", "fill-image", "fill-imgmask", "fill-shade"):
            r = (pymupdf.Rect(rect) * m).normalize()
            if r.is_valid and not r.is_empty:
                graphics.append((r.x0, r.y0, r.x1, r.y1))
    out: list[Any] = []
    for i, b in enumerate(boxes):
        cuts = _panel_cuts(b, graphics) if i in pictures else []
        if not cuts:
            out.append(b)
            continue
        edges = [b.y0, *cuts, b.y1]
        for k, (top, bottom) in enumerate(zip(edges, edges[1:], strict=False)):
            part = copy.copy(b)
            part.y0, part.y1, part.panel = top, bottom, k + 1
            out.append(part)
    return out


def _panel_cuts(box: Any, graphics: Sequence[tuple[float, float, float, float]]) -> list[float]:
    """Where to cut a picture box into stacked panels (see :func:`_split_panels`); [] for one."""
    inside = sorted(
        (g for g in graphics
         if box.x0 - 1 <= (g[0] + g[2]) / 2 <= box.x1 + 1 and box.y0 - 1 <= (g[1] + g[3]) / 2 <= box.y1 + 1),
        key=lambda g: g[1],
    )
    parts: list[list[float]] = []  # merged vertical extents [top, bottom]
    for g in inside:
        if parts and g[1] < parts[-1][1] + PANEL_GAP:
            parts[-1][1] = max(parts[-1][1], g[3])
        else:
            parts.append([g[1], g[3]])
    if len(parts) < 2 or any(p[1] - p[0] < PANEL_MIN for p in parts):
        return []
    return [p[0] - 1.0 for p in parts[1:]]


def _iou(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _running_text(text: str) -> str:
    """A page header's text as it repeats from page to page (page numbers and case ignored)."""
    return " ".join(re.sub(r"[\d\W_]+", " ", text.casefold()).split())


def _style_of(pc: PageChars, sel: np.ndarray, text: str) -> HeadingStyle:
    solid = [int(i) for i in sel if not pc.chars[i].isspace()]
    if not solid:
        return HeadingStyle(0.0, False, False)
    sizes = Counter(round(float(pc.size[i]) * 2) / 2 for i in solid)
    size = sizes.most_common(1)[0][0]
    bold = bool(np.mean(pc.bold[solid]) >= 0.5)
    return HeadingStyle(size, all_caps(text), bold)


def _grown_box(geom: ParsingBoundingBox, spans: Sequence[ParsingBoundingBox], how: str) -> ParsingBoundingBox:
    """``geom`` grown to its text lines as :data:`BOX_GROWTH` says (``how``)."""
    if how == "layout":
        return ParsingBoundingBox(geom.page, geom.left, geom.top, geom.right, geom.bottom)
    grown = ParsingBoundingBox.enclosing([geom, *spans])
    if how == "width":
        return ParsingBoundingBox(geom.page, grown.left, geom.top, grown.right, geom.bottom)
    return ParsingBoundingBox(geom.page, grown.left, grown.top, grown.right, grown.bottom)


Grid = list[list[tuple[float, float, float, float] | None]]
#: a table's caption: "Table 2", "TABLE IV", "Tab. 3:", "Table S1" at the start of the text
_CAPTION_START = re.compile(r"^\s*(?:Table|TABLE|Tab\.)\s*(?:[A-Z]?\d+|[IVXLC]+)\b")
#: a figure's (or table's, scheme's) caption: "Figure 2", "Fig. 3:", "FIGURE S1", "Scheme 1", "Table IV"
_FIGURE_CAPTION_START = re.compile(
    r"^\s*(?:Figure|FIGURE|Fig\.|FIG\.|Scheme|SCHEME|Table|TABLE|Tab\.)\s*(?:[A-Z]?\d+|[IVXLC]+)\b"
)
#: a grid row continues the row above when its text goes on at most this many times the table's
#: line pitch below the text of the row above (no extra space, as between the lines of one cell)
CONTINUATION_PITCH = 1.25


def _grid_line_tops(grid: Grid, pc: PageChars, claimed: np.ndarray, turn: int) -> list[list[list[float]]]:
    """Per grid cell, the tops of its text lines in reading order, measured on the page turned
    ``turn`` degrees (the frame in which the grid's rows run across); cells take words in grid
    order, as the cells built from the grid will."""
    taken = claimed.copy()
    tops: list[list[list[float]]] = []
    for row_boxes in grid:
        row: list[list[float]] = []
        for cell_box in row_boxes:
            lines: list[float] = []
            if cell_box is not None:
                x0, y0, x1, y1 = clip_to_page(*cell_box, pc.width, pc.height)
                sel = pc.select(x0, y0, x1, y1) if x1 > x0 and y1 > y0 else np.empty(0, dtype=np.int64)
                sel = sel[~taken[sel]]
                taken[sel] = True
                if len(sel):
                    found = build_lines([pc], [sel]).lines
                    turned = upright([_LineBox(ln.x0, ln.y0, ln.x1, ln.y1) for ln in found], turn, pc.width, pc.height)
                    lines = sorted(r.y0 for r in turned)
            row.append(lines)
        tops.append(row)
    return tops


@dataclass
class _LineBox:
    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str = "line"


def _join_continuation_rows(grid: Grid, tops: list[list[list[float]]]) -> tuple[Grid, int]:
    """Join grid rows that continue the row above: a layout grid may cut a row of multi-line
    cells into several (#13.4). A row continues the one above when its first (key) column is
    empty there but filled above, its filled cells are filled above too while another cell
    filled above is empty here (a spanned key cell with full sub-rows is not a continuation), and
    each of them goes on at the table's line pitch (multi-line cells show it) right below the
    text above it. Returns the new grid and the number of rows joined."""
    diffs = [b - a for row in tops for cell in row for a, b in zip(cell, cell[1:], strict=False) if b - a > 0]
    if not diffs or len(grid) < 2:
        return grid, 0
    pitch = float(np.median(diffs))
    filled_cols = [c for c in range(max(len(r) for r in tops)) if any(c < len(r) and r[c] for r in tops)]
    if not filled_cols:
        return grid, 0
    key = filled_cols[0]
    out_grid: Grid = [list(grid[0])]
    out_tops = [[list(cell) for cell in tops[0]]]
    joined = 0
    for row_boxes, row_tops in zip(grid[1:], tops[1:], strict=True):
        above = out_tops[-1]
        filled = {c for c, cell in enumerate(row_tops) if cell}
        filled_above = {c for c, cell in enumerate(above) if cell}
        continues = (
            key in filled_above
            and key not in filled
            and filled
            and filled < filled_above - {key}  # a cell filled above is empty here (not a spanned key)
            and all(row_tops[c][0] - above[c][-1] <= CONTINUATION_PITCH * pitch for c in filled)
        )
        if not continues:
            out_grid.append(list(row_boxes))
            out_tops.append([list(cell) for cell in row_tops])
            continue
        joined += 1
        merged = out_grid[-1]
        for c, cell_box in enumerate(row_boxes):
            if c >= len(merged):
                merged.append(cell_box)
            elif cell_box is not None:
                prev = merged[c]
                merged[c] = cell_box if prev is None else (
                    min(prev[0], cell_box[0]), min(prev[1], cell_box[1]),
                    max(prev[2], cell_box[2]), max(prev[3], cell_box[3]),
                )
        for c in filled:
            above[c].extend(row_tops[c])
    return out_grid, joined


def _find_tables_grid(
    layer: TextLayer, page: int, rect: tuple[float, float, float, float]
) -> list[list[tuple[float, float, float, float] | None]] | None:
    """Cell grid of the largest table PyMuPDF's ``find_tables`` sees inside ``rect`` (displayed pts)."""
    import pymupdf

    pdf_page = layer._doc.load_page(page - 1)
    if pdf_page.rotation:
        return None  # find_tables works in unrotated space; keep it simple for rotated pages
    try:
        found = pdf_page.find_tables(clip=pymupdf.Rect(rect))
    except Exception as exc:  # noqa: BLE001 - a failed fallback only loses cell boxes
        log.debug("find_tables failed on page %d: %s", page, exc)
        return None
    tables = list(found.tables)
    if not tables:
        return None
    best = max(tables, key=lambda t: (t.bbox[2] - t.bbox[0]) * (t.bbox[3] - t.bbox[1]))
    return [list(row.cells) for row in best.rows]

