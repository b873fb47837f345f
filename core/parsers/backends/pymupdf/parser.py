"""Default backend: PyMuPDF >= 2.0 with its bundled ONNX layout model (offline).

``_parse`` runs :func:`pymupdf4llm.helpers.document_layout.parse_document` (layout classes,
reading order of multi-column pages, table grids, header font sizes), optionally over page
ranges in worker processes. ``_transform`` builds the tree: every text element's content is
rebuilt from the PDF text layer inside its layout box, so its line spans and per-character
extents are attached right here (exact, no re-alignment needed). Tables become TABLE ->
TABLE_ROW -> TABLE_CELL with cell boxes from the layout grid (``find_tables`` as fallback),
and headings carry their style (``font_size``, ``font_bold``) and the root the body text size
(``body_font_size``) as evidence for the heading levels and list grouping that post-processing
decides for every backend (:mod:`grounded.parsers.hierarchy`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import multiprocessing
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import BackendUnavailableError, ParserError, escape_controls
from grounded.io.atomic import make_temp_dir
from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.parsers.base import BaseParser
from grounded.parsers.ocr.budget import OCR_BUDGET_KEY
from grounded.parsers.ocr.engine import (
    DEFAULT_OCR,
    DEFAULT_OCR_DPI,
    OCR_LANGUAGE,
    OCR_MODES,
    OCRCopy,
    OCRMode,
    check_mode,
    ocr_copy,
    pages_needing_ocr,
    plan_ocr,
    require_ocr,
    tessdata_dir,
)
from grounded.parsers.ocr.tables import reocr_tables
from grounded.parsers.pdf_input import NoTextLayerWarning, PDFInfo, format_pages, mupdf_quiet
from grounded.parsers.textlayer import TextLayer
from grounded.runtime.processes import ParentInfo

from .extras import PyMuPDFRootExtras
from .layout import (
    LAYOUT_SKIPPED_KEY,
    ProgressCallback,
    PyMuPDFNative,
    T,
    _layout_pages,
    _load_layout,
    _require_layout,
)
from .layout_device import use_layout_device
from .ocr_text import (
    OCR_FROM_PICTURES_KEY,
    OCR_LEFT_OUT_KEY,
)
from .pool import _guided_batches, _page_batches, _PageTask, _worker_init, _worker_task
from .tree import LABEL_MAP, Pending, _TreeBuilder

#: the OCR'd copy of a PDF is written to ``<tmp>/grounded-ocr-<pid>-<random>/`` (removed after the
#: parse; a killed run's folder is removed by the next OCR run)
OCR_TEMP_PREFIX = "grounded-ocr-"

log = logging.getLogger(__name__)

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
        choice, which already puts part of the model on a second core). The model is loaded
        without busy-waiting (spinning) threads, which burn CPU between operators for no output.
        Takes effect only if nothing imported ``pymupdf`` before (that loads the model with
        ONNX Runtime's defaults); worker processes use 1.
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
        ``root.info.pages[i]["text_source"]`` says ``"ocr"`` or ``"text_layer"``.
    ocr_dpi:
        Resolution the pages are rendered at for OCR.
    device:
        Where this process's layout model runs: ``"auto"`` (default: the GPU when ONNX Runtime's
        CUDA provider is installed, ``onnxruntime-gpu``, and a session can be created on it, else
        the CPU), ``"cpu"`` or ``"cuda"`` (no usable GPU: DeviceUnavailableError). See
        :mod:`grounded.parsers.backends.pymupdf.layout_device`; worker processes stay on the CPU.
    """

    name: ClassVar[str] = "pymupdf"
    LABEL_MAP: ClassVar[dict[str, ParsingResultType]] = LABEL_MAP

    options = (
        Option("workers", int, 1, "processes for the layout pass", low=1, cli=False),
        Option("image_dir", None, help="folder for figure PNGs (none: no images)"),
        Option("image_dpi", int, 150, "resolution of figure PNGs", low=1, cli=False),
        Option("batch_pages", int, 4, "pages per layout task", low=1, cli=False),
        Option("progress", None, help="callback (pages done, pages) of the layout pass"),
        Option("layout_threads", int, None, "ONNX Runtime threads of the layout model", low=1, cli=False),
        Option("pool", None, help="an executor lent by the caller for the page tasks"),
        Option("ocr", str, DEFAULT_OCR, "OCR the pages without a usable text layer (auto), every page (always) or none "
               "(never); needs pip install 'grounded[ocr]'", choices=OCR_MODES),
        Option("ocr_dpi", int, DEFAULT_OCR_DPI, "resolution pages are rendered at for OCR", low=72, high=600),
        Option("device", str, "auto", "where the layout model runs: auto, cpu, cuda or cuda:N", cli=False),
    )

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
        device: str = "auto",
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
        # loads the model here, when nothing imported pymupdf before: intra-op threads as asked
        # (None: ONNX Runtime's default number) and no busy-waiting threads
        if not _load_layout(layout_threads) and layout_threads is not None:
            # ``import pymupdf`` loads the layout model, so the setting must come first
            warnings.warn(
                f"layout_threads={layout_threads} ignored: PyMuPDF's layout model was already loaded in this "
                "process (create the parser before anything imports pymupdf)",
                stacklevel=2,
            )
        self.device = use_layout_device(device)

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
        # a layout model on the GPU may round differently: its trees are cached apart
        on_gpu = ", layout on cuda" if self.device == "cuda" else ""
        # how the layout nets ran (issue #41): the configuration names its trees in the cache
        from .layout_runtime import runtime_setting

        return f"{tool}, {self.ocr_setting()}{on_gpu}, {runtime_setting()}"

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
        ocr_pages, scratch, pdf_path, done = self._ocr_pages(pdf_path, verdicts)
        ocr_seconds = time.perf_counter() - started
        prebuilt: dict[int, list[ParsingResult]] = {}
        pending: dict[int, dict[int, Pending]] = {}  # page -> scratch values of its prebuilt elements
        body_sizes: Counter[float] = Counter()
        # MuPDF's messages about damaged content were collected by inspect_pdf: keep stderr clean
        with mupdf_quiet(), pymupdf.open(pdf_path) as doc:
            count = doc.page_count
            toc = doc.get_toc(simple=True)
            metadata = dict(doc.metadata or {})
            pages: list[Any] = []
            for layouts, built, sizes, held in self._layout_iter(doc, pdf_path, count, frozenset(ocr_pages)):
                pages.extend(layouts)
                prebuilt.update(built)
                pending.update(held)
                body_sizes.update(sizes)
                if self.progress is not None:
                    self.progress(len(pages), count)
        if ocr_pages and scratch is not None:
            reading = time.perf_counter()
            reread = self._reocr_tables(source, pdf_path, pages, ocr_pages, done)
            ocr_seconds += time.perf_counter() - reading
            if reread is not None:  # the tables' text changed: pages are built from the new copy
                pdf_path, prebuilt, pending, body_sizes = reread, {}, {}, Counter()
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
            pending=pending,
            body_sizes=body_sizes,
            ocr_pages=ocr_pages,
            ocr_seconds=ocr_seconds,
            scratch=scratch,
            ocr_notes={p + 1: note for p, note in done.notes.items()},
            ocr_budgets={p + 1: budget.record() for p, budget in done.budgets.items()},
        )

    def _ocr_pages(
        self, pdf_path: Path, verdicts: Sequence[str | None] | None = None
    ) -> tuple[dict[int, str], tempfile.TemporaryDirectory[str] | None, Path, OCRCopy]:
        """OCR the pages that need it (see :func:`~grounded.parsers.ocr.engine.plan_ocr`) into a private
        copy: (1-based page -> reason, the copy's directory, the path to read from, what OCR did
        beyond reading as asked per 0-based page: lower resolutions, OCR budgets)."""
        if self._tessdata is None:
            return {}, None, pdf_path, OCRCopy()
        if verdicts is not None:
            plan, count = plan_ocr(verdicts, self.ocr), len(verdicts)
        else:
            import pymupdf

            with mupdf_quiet(), pymupdf.open(pdf_path) as doc:
                plan = pages_needing_ocr(doc, self.ocr)
                count = doc.page_count
        if plan.blank:  # as inspect_pdf warns when OCR is off: these pages yield no text either way
            warnings.warn(
                f"{escape_controls(str(pdf_path))}: {len(plan.blank)} of {count} page(s) have no text layer and will yield no text: "
                f"pages {format_pages([p + 1 for p in plan.blank])} (blank: nothing to OCR)",
                NoTextLayerWarning,
                stacklevel=4,
            )
        if not plan.reasons:
            return {}, None, pdf_path, OCRCopy()
        scratch = make_temp_dir(OCR_TEMP_PREFIX)  # a killed run's folder is removed by the next one
        target = Path(scratch.name) / "ocr.pdf"
        try:
            with mupdf_quiet():
                done = ocr_copy(pdf_path, plan.pages, target, dpi=self.ocr_dpi, tessdata=self._tessdata)
        except BaseException:
            scratch.cleanup()
            raise
        log.info("%s: OCR'd %d page(s) at %d dpi", escape_controls(str(pdf_path)), len(plan.pages), self.ocr_dpi)
        # a page the document's image budget left un-OCR'd reads its own text layer (none)
        reasons = {p + 1: why for p, why in plan.reasons.items() if not (p in done.budgets and done.budgets[p].skipped)}
        return reasons, scratch, target, done

    def _reocr_tables(
        self, source: Path, ocr_pdf: Path, pages: Sequence[Any], ocr_pages: dict[int, str], done: OCRCopy
    ) -> Path | None:
        """Read the TABLE regions the layout model found on the OCR'd pages again, rules erased and
        shading whitened (:func:`~grounded.parsers.ocr.tables.reocr_tables`, issue #34.21): the path
        of the new copy, or None when no page has a table. Pages OCR'd whole under an OCR budget
        (many images, noise) are left as they are."""
        from grounded.parsers.ocr import tables as ocr_tables

        if not ocr_tables.TABLE_REREAD:
            return None
        whole = {p + 1 for p, budget in done.budgets.items() if budget.whole_page}
        tables = {
            p.page_number - 1: [(b.x0, b.y0, b.x1, b.y1) for b in p.boxes if b.boxclass == "table"]
            for p in pages
            if p.page_number in ocr_pages and p.page_number not in whole
        }
        tables = {p: rects for p, rects in tables.items() if rects}
        if not tables:
            return None
        target = ocr_pdf.with_name("ocr-tables.pdf")
        with mupdf_quiet():
            reocr_tables(source, ocr_pdf, target, tables, dpi=self.ocr_dpi, tessdata=self._tessdata)
        return target

    def _layout_iter(
        self, doc: Any, pdf_path: Path, count: int, ocr_pages: frozenset[int] = frozenset()
    ) -> Iterator[tuple[list[Any], dict, dict, dict]]:
        """(layouts, prebuilt elements, body font sizes, the prebuilt elements' scratch values:
        ``pool.WorkerResult``) per batch of pages, in page order
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
            yield _layout_pages(doc, batch), {}, {}, {}

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
                        builder.adopt(done, native.pending.get(page.page_number, {}))
                        continue
                    if layer is None:
                        layer = TextLayer(native.path, cache_pages=2)
                    builder.add_page(page, layer.page(page.page_number), layer)
        finally:
            if layer is not None:
                layer.close()
        elements = builder.finish()
        if builder.body_sizes:  # evidence for the heading levels (post-processing decides them)
            root.info.body_font_size = builder.body_sizes.most_common(1)[0][0]
        # emptiness is checked by BaseParser.finish, after the element filter
        for node in elements:
            root.add_child(node)
        PyMuPDFRootExtras(root.metadata).layout_seconds = round(native.layout_seconds, 4)
        # per page: where its text came from, and how the layout model saw it (merged into "pages")
        pages = []
        for p in native.document.pages:
            entry: dict[str, Any] = {"page": p.page_number, **(getattr(p, "view", None) or {})}
            why = native.ocr_pages.get(p.page_number)
            entry["text_source"] = "ocr" if why else "text_layer"
            if why:
                entry["ocr_reason"] = why
            note = native.ocr_notes.get(p.page_number)
            if note:  # OCR'd at a lower resolution (OCR_MAX_PIXELS)
                entry["warnings"] = [*entry.get("warnings", []), note]
            budget = native.ocr_budgets.get(p.page_number)
            if budget:  # over an OCR budget: bounded OCR, or none (grounded.parsers.ocr.budget)
                entry[OCR_BUDGET_KEY] = budget
                entry["warnings"] = [*entry.get("warnings", []), budget["cause"]]
            skipped = getattr(p, LAYOUT_SKIPPED_KEY, None)
            if skipped is not None:  # beyond the layout budget: text-layer blocks, no layout model
                entry[LAYOUT_SKIPPED_KEY] = skipped
                entry["warnings"] = [
                    *entry.get("warnings", []),
                    f"layout model skipped ({skipped}): text taken from the text layer's blocks, "
                    "no headings, tables or figures detected on this page"
                ]
            left_out = getattr(p, OCR_LEFT_OUT_KEY, None)
            if left_out is not None:
                entry[OCR_LEFT_OUT_KEY] = left_out
            from_pictures = getattr(p, OCR_FROM_PICTURES_KEY, None)
            if from_pictures is not None:
                entry[OCR_FROM_PICTURES_KEY] = from_pictures
            pages.append(entry)
        root.info.pages = pages
        ocr: dict[str, Any] = {"setting": self.ocr_setting(), "pages": sorted(native.ocr_pages)}
        if native.ocr_pages:
            ocr["seconds"] = round(native.ocr_seconds, 4)
        PyMuPDFRootExtras(root.metadata).ocr = ocr
        return root

    # -- step 3: markdown -----------------------------------------------------------------------
    def _get_md(self, native: PyMuPDFNative) -> str:
        md = str(native.document.to_markdown(header=False, footer=False, write_images=False, embed_images=False))
        return re.sub(r"\n{3,}", "\n\n", md).strip() + "\n"

