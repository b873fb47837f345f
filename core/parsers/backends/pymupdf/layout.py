"""The layout model runtime of the PyMuPDF backend: native output, page views turned upright and
scaled for the model, layout of page ranges, in this process (worker processes: :mod:`.pool`)."""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grounded.errors import BackendUnavailableError
from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.runtime.memory import balance_feature_font_refs

if TYPE_CHECKING:  # pragma: no cover
    from .tree import Pending

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
    the pages that are not prebuilt. ``pending``: page number -> the worker builder's scratch values
    of that page's prebuilt elements (``_TreeBuilder.pending_of``), handed to the parent's builder
    for its document-wide ``finish()``.
    """

    path: Path
    document: Any  # pymupdf4llm.helpers.document_layout.ParsedDocument
    layout_seconds: float = 0.0
    prebuilt: dict[int, list[ParsingResult]] = field(default_factory=dict)
    pending: dict[int, dict[int, Pending]] = field(default_factory=dict)
    body_sizes: Counter[float] = field(default_factory=Counter)
    #: 1-based page -> why it was OCR'd (its text then comes from the OCR'd copy at ``path``)
    ocr_pages: dict[int, str] = field(default_factory=dict)
    ocr_seconds: float = 0.0
    #: owns the OCR'd copy; removed when the native output is dropped
    scratch: tempfile.TemporaryDirectory[str] | None = None
    #: 1-based page -> why it was OCR'd at a lower resolution than asked (OCR_MAX_PIXELS)
    ocr_notes: dict[int, str] = field(default_factory=dict)
    #: 1-based page -> what an OCR budget did to it (``OCRBudget.record()``, grounded.parsers.ocr.budget)
    ocr_budgets: dict[int, dict[str, Any]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# layout pass (in process or in worker processes)
# ---------------------------------------------------------------------------------------------


def _require_layout() -> Any:
    """Import pymupdf4llm's document parser (loads the ONNX layout model once per process)."""
    try:
        from pymupdf4llm.helpers import document_layout
    except ImportError as exc:  # pragma: no cover - pymupdf4llm is a core dependency
        raise BackendUnavailableError("PyMuPDF layout parser", "pymupdf", "pymupdf4llm pymupdf-layout") from exc
    balance_feature_font_refs()  # its features leak a reference to every font they count (#34)
    return document_layout


#: ONNX Runtime threads the layout model of this process was loaded with (None: not by us, or
#: the runtime's default number)
_threads_loaded: int | None = None
#: whether this process's layout sessions were created by :func:`_load_layout` (spinning off)
_loaded_here = False


def _load_layout(threads: int | None) -> bool:
    """Load the layout model with ``threads`` ONNX Runtime intra-op threads (None: the runtime's
    default number) and without busy-waiting threads (``session.intra_op.allow_spinning`` off: an
    idle ONNX thread spinning between operators burns a core that other work -- another worker,
    another process on a shared machine -- could use; the results are the same).

    Only possible before the model is first loaded in this process -- PyMuPDF >= 2.0 imports
    ``pymupdf.layout`` (which loads it) on ``import pymupdf`` -- so returns whether it took effect.
    """
    import sys

    global _threads_loaded, _loaded_here
    if "pymupdf.layout" in sys.modules:
        _require_layout()
        return threads is None or (_loaded_here and threads == _threads_loaded)
    import onnxruntime as ort

    original = ort.InferenceSession

    from . import layout_runtime as runtime

    class _LayoutSession(original):  # type: ignore[misc, valid-type]
        def __init__(self, path: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
            options = sess_options if sess_options is not None else ort.SessionOptions()
            if threads is not None:
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._grounded_imf = runtime.is_imf_model(path)
            if self._grounded_imf and runtime.IMF_ARENA:
                options.enable_cpu_mem_arena = True  # fixed shapes: bounded (see layout_runtime)
            if self._grounded_imf and threads is None and runtime.IMF_PREFETCH and runtime.IMF_PREFETCH_THREADS:
                options.intra_op_num_threads = runtime.IMF_PREFETCH_THREADS
            super().__init__(path, options, *args, **kwargs)
            if self._grounded_imf:
                runtime.imf_session = self

        def run_direct(self, output_names: Any, input_feed: Any, run_options: Any = None) -> Any:
            return super().run(output_names, input_feed, run_options)

        def run(self, output_names: Any, input_feed: Any, run_options: Any = None) -> Any:
            if self._grounded_imf and runtime.prefetcher is not None:
                outputs = runtime.prefetcher.answer(output_names, input_feed)
                if outputs is not None:
                    return outputs
            return super().run(output_names, input_feed, run_options)

    ort.InferenceSession = _LayoutSession
    try:
        _require_layout()
    finally:
        ort.InferenceSession = original
    _threads_loaded, _loaded_here = threads, True
    # the next page's image net on a second thread: in one process with the default threads (the
    # parser's worker processes run with 1 thread each and already fill the cores)
    if runtime.IMF_PREFETCH and threads is None and runtime.imf_session is not None:
        runtime.prefetcher = runtime.ImagePrefetch()
    return True


def layout_threads_setting() -> str:
    """How this process's layout model runs, for reports: ``"ORT 1 thread, no spinning"``,
    ``"ORT default threads (N cores), no spinning"`` (loaded by :func:`_load_layout`) or
    ``"ORT default threads (N cores), spinning"`` (loaded by a plain ``import pymupdf``)."""
    import os

    count = f"{_threads_loaded} thread{'s' if _threads_loaded != 1 else ''}" if _threads_loaded else (
        f"default threads ({os.cpu_count()} cores)"
    )
    from .layout_runtime import runtime_setting

    return f"ORT {count}, {'no spinning' if _loaded_here else 'spinning (ORT default)'}, {runtime_setting()}"


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


#: The layout budget of a page (issue #21.7): a page whose text layer holds more than
#: LAYOUT_MAX_CHARS characters or more than LAYOUT_MAX_SPANS text spans is not given to the layout
#: model (its feature extraction and table-grid pass grow faster than linearly with the spans: a
#: page of 200k text operators took over 300 s). Its text comes from MuPDF's text blocks as
#: paragraphs (the fallback of a page the layout lost, see ``tree._text_layer_blocks``); the page
#: records a warning (``pages[i]["warnings"]``, ``pages[i]["layout_skipped"]``). The densest page
#: of the shared corpus has 9.4k characters and 2.4k spans: both limits are more than twice that.
LAYOUT_MAX_CHARS = 20_000
LAYOUT_MAX_SPANS = 6_000


@dataclass(frozen=True)
class _PageText:
    """What one read of a page's text tells the layout pass: how to turn it upright, its size."""

    turn: int
    chars: int
    spans: int

    def over_budget(self) -> str | None:
        """Why the page is beyond the layout budget (None: it is not)."""
        if self.chars > LAYOUT_MAX_CHARS:
            return f"{self.chars} characters > LAYOUT_MAX_CHARS {LAYOUT_MAX_CHARS}"
        if self.spans > LAYOUT_MAX_SPANS:
            return f"{self.spans} text spans > LAYOUT_MAX_SPANS {LAYOUT_MAX_SPANS}"
        return None


def _page_text(page: Any) -> _PageText:
    """One pass over the page's text: the turn that makes most of it read left to right (degrees
    clockwise, multiple of 90; 0 when it does already or when no direction has UPRIGHT_SHARE) and
    its characters and spans (for the layout budget)."""
    from grounded.parsers.textlayer import DOWN, LEFT, RIGHT, UP, _direction

    m = page.rotation_matrix
    weights = [0, 0, 0, 0]
    chars = spans = 0
    for block in page.get_text("dict", flags=0)["blocks"]:
        for line in block.get("lines", ()):
            dx, dy = line.get("dir", (1.0, 0.0))
            direction = _direction(m.a * dx + m.c * dy, m.b * dx + m.d * dy)
            spans += len(line["spans"])
            for span in line["spans"]:
                chars += len(span["text"])
                weights[direction] += len(span["text"].strip())
    total = sum(weights)
    best = max(range(4), key=weights.__getitem__)
    if not total or best == RIGHT or weights[best] < UPRIGHT_SHARE * total:
        return _PageText(0, chars, spans)
    return _PageText({DOWN: 270, LEFT: 180, UP: 90}[best], chars, spans)


def _layout_scale(width: float, height: float) -> float:
    side = max(width, height)
    if side <= 0 or LAYOUT_MIN_SIDE <= side <= LAYOUT_MAX_SIDE:
        return 1.0
    return LAYOUT_TARGET_SIDE / side


def _prepare_views(
    doc: Any, pages: Sequence[int]
) -> tuple[dict[int, _View], Any, dict[int, int], dict[int, str]]:
    """Turn (in ``doc``, which must be private to the layout pass) or copy scaled into a scratch
    document the pages the model would not see upright at a normal size. Returns the views by
    0-based page, the scratch document (or None), source page -> scratch page, and the pages
    beyond the layout budget (0-based page -> why; see :data:`LAYOUT_MAX_CHARS`), which get no view."""
    import pymupdf

    views: dict[int, _View] = {}
    scratch: Any = None
    in_scratch: dict[int, int] = {}
    skipped: dict[int, str] = {}
    for pno in pages:
        page = doc.load_page(pno)
        text = _page_text(page)
        why = text.over_budget()
        if why is not None:
            skipped[pno] = why
            continue
        turn = text.turn
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
    return views, scratch, in_scratch, skipped


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


#: attribute of a PageLayout the layout model did not see (beyond the budget): the reason
LAYOUT_SKIPPED_KEY = "layout_skipped"


def _unlaid_page(document_layout: Any, pno: int, width: float, height: float, why: str) -> Any:
    """A PageLayout without boxes for 0-based page ``pno`` that is beyond the layout budget: the
    tree builder then takes its text from the text layer's blocks (its layout fallback)."""
    log.warning("page %d is beyond the layout budget (%s): its text is taken from the text layer's blocks", pno + 1, why)
    layout = document_layout.PageLayout(page_number=pno + 1, width=width, height=height, boxes=[])
    setattr(layout, LAYOUT_SKIPPED_KEY, why)
    return layout


@contextlib.contextmanager
def _prefetched(doc: Any, pages: Sequence[int]) -> Iterator[None]:
    """Run the image-feature net of the next page ahead while ``pages`` of ``doc`` are laid out
    (when this process's layout model was loaded with prefetch, see :mod:`.layout_runtime`)."""
    from . import layout_runtime as runtime

    prefetcher = runtime.prefetcher
    # one plan at a time: a layout pass on another thread meanwhile runs its image net inline
    if prefetcher is None or runtime.imf_session is None or not prefetcher.busy.acquire(blocking=False):
        yield
        return
    try:
        prefetcher.plan(doc, sorted(set(pages)), runtime.imf_session)  # parse_document's order
        yield
    finally:
        prefetcher.clear()
        prefetcher.busy.release()


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
        views, scratch, in_scratch, skipped = _prepare_views(doc, pages)
        direct = sorted(pno for pno in pages if pno not in in_scratch and pno not in skipped)
        found: dict[int, Any] = {pno: _unlaid_page(document_layout, pno, *sizes[pno], why) for pno, why in skipped.items()}
        if direct:
            with _prefetched(doc, direct):
                parsed = document_layout.parse_document(doc, pages=direct, use_ocr=0, force_text=False)
            found.update(zip(direct, parsed.pages, strict=True))
        if scratch is not None:
            order = sorted(in_scratch, key=in_scratch.__getitem__)
            with _prefetched(scratch, [in_scratch[p] for p in order]):
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


