"""Multi-strategy page assembler (seed 002): FAST, OCR and LLM readings merged into one tree.

* **FAST** - the parse tree of the text layer (:class:`~grounded.parsers.PyMuPDFParser`).
* **OCR** - a tree of the same PDF read with OCR (e.g. ``PyMuPDFParser(ocr="always")``). Pages
  without text in the FAST tree take their elements from it (ids prefixed ``ocr-``; an OCR'd
  page's top-level elements follow the FAST elements that start on earlier pages). A FAST tree
  whose page metadata says it was OCR'd (``"ocr": true`` or ``"text_source": "ocr"``) reports
  ``ocr`` for that page.
* **LLM** - a page with no text in any reading is transcribed whole by the injected multimodal
  model (all of it ``generated``, the page as its region: there is no text layer to ground it in);
  and the model reads every TABLE and FIGURE region, rendered from the
  PDF: it transcribes tables and the text inside figures, and describes figures and plots. Each
  transcribed line is grounded with the :class:`~grounded.grounding.Grounder`: a line found inside
  the region keeps the exact boxes of its characters; anything else (descriptions, text that is in
  no part of the region) is a ``generated`` piece whose boxes are the region's, never invented
  text boxes. Failed calls and unusable answers flag the region and keep its FAST text.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, ModelError, ModelOutputError, escape_controls
from ..llm import GRAPH_SETTINGS, GenerationSettings, Model, as_model
from ..llm.settings import effective_settings
from ..model.boxes import ParsingBoundingBox
from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T
from .nodes import TextPiece

__all__ = ["Assembly", "RegionReading", "assemble", "TABLE_PROMPT", "FIGURE_PROMPT"]

log = logging.getLogger(__name__)

OnError = Literal["flag", "raise"]

TABLE_PROMPT = (
    "The image is a table cropped from page {page} of a PDF. Transcribe it as a Markdown table: one line per row, "
    "cells separated by '|', every cell copied exactly as printed (do not correct, translate or reformat anything). "
    "If part of the table cannot be transcribed (a chart, a structure drawing), describe it on a line starting "
    "with 'Description:'."
)
PAGE_PROMPT = (
    "The image is page {page} of a PDF; it has no text layer. Transcribe all its text in reading order as Markdown "
    "(headings with #, tables as Markdown tables), copying the text exactly as printed. Describe figures on lines "
    "starting with 'Description:'."
)
FIGURE_PROMPT = (
    "The image is a figure cropped from page {page} of a PDF. First copy the text printed inside it (labels, axis "
    "titles, legend entries), one item per line, each line starting with 'Text:'. Then describe the figure on lines "
    "starting with 'Description:': for a plot its axes (titles, ranges, units), legend, series and trend; for a "
    "flowchart its steps and how they connect; otherwise what it shows."
)


@dataclass
class RegionReading:
    """The LLM's reading of one TABLE/FIGURE element: ``text`` (what the node's text becomes),
    its ``pieces`` (verbatim with exact boxes, or generated with the region's boxes) and ``flags``."""

    element_id: str
    text: str = ""
    pieces: list[TextPiece] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


@dataclass
class Assembly:
    """One tree for the node graph, how each page was read (``fast`` | ``ocr`` | ``none``) and the
    LLM readings of table/figure regions by element id."""

    root: ParsingResult
    page_strategies: dict[int, str] = field(default_factory=dict)
    readings: dict[str, RegionReading] = field(default_factory=dict)
    #: model transcriptions of pages no other reading has text for (``page_strategies`` says ``llm``)
    page_readings: dict[int, RegionReading] = field(default_factory=dict)


def assemble(
    fast: ParsingResult,
    *,
    ocr: ParsingResult | None = None,
    llm: Any = None,
    pdf: str | Path | None = None,
    dpi: int = 144,
    on_error: OnError = "flag",
    generation: GenerationSettings | Mapping[str, Any] | None = None,
    **client_options: Any,
) -> Assembly:
    """Merge the FAST tree, an optional OCR tree and optional LLM readings (see the module doc).

    ``pdf`` renders the regions for the LLM (default: the source path in the tree's metadata).
    ``on_error="raise"`` raises :class:`~grounded.errors.ModelError` instead of flagging a region.
    ``client_options`` go to :class:`~grounded.llm.Model` (retries, backoff, sleep); ``generation``:
    temperature / output tokens / seed over :data:`~grounded.llm.GRAPH_SETTINGS` (temperature 0.1)."""
    if fast.type != T.ROOT:
        raise InputError("<tree>", f"the assembler needs a ROOT node, got {fast.type}")
    pages = sorted(fast.info.page_numbers())
    fast_text = _text_pages(fast)
    strategies: dict[int, str] = {}
    for meta in fast.info.pages or ():
        p = int(meta["page"])
        ocr_flag = bool(meta.get("ocr")) or meta.get("text_source") == "ocr"
        strategies[p] = ("ocr" if ocr_flag else "fast") if p in fast_text else "none"
    root = fast
    if ocr is not None:
        from_ocr = sorted(p for p in pages if strategies[p] == "none" and p in _text_pages(ocr))
        if from_ocr:
            root = _merge(fast, ocr, set(from_ocr))
            strategies.update(dict.fromkeys(from_ocr, "ocr"))
    for p, how in strategies.items():
        if how == "none":
            log.warning("%s: page %d has no text in any reading", escape_controls(_name(fast)), p)
    assembly = Assembly(root=root, page_strategies=strategies)
    if llm is not None:
        settings = effective_settings(GRAPH_SETTINGS, llm, generation)
        _Reader(assembly, as_model(llm, settings=settings, **client_options), pdf, dpi, on_error).read_all()
    return assembly


# -- OCR merge ---------------------------------------------------------------------------------------
def _text_pages(root: ParsingResult) -> set[int]:
    return {min(b.page for b in n.geom) for n in root.walk()
            if n.geom and n.type != T.FIGURE and any(ch.isalnum() for ch in n.content)}


def _first_page(node: ParsingResult) -> int | None:
    pages = [b.page for n in node.walk() for b in n.geom]
    return min(pages) if pages else None


def _prune(node: ParsingResult, keep: set[int], prefix: str) -> ParsingResult | None:
    """Copy of ``node`` with only the elements whose first page is in ``keep`` (ids prefixed)."""
    children = [c for c in (_prune(ch, keep, prefix) for ch in node.children) if c is not None]
    own = bool(node.geom) and min(b.page for b in node.geom) in keep
    if not own and not children and node.type != T.ROOT:
        return None
    copy = ParsingResult(id=prefix + node.id if node.type != T.ROOT else node.id, type=node.type, content=node.content,
                         geom=list(node.geom) if own else [], metadata=dict(node.metadata), image=node.image)
    for child in children:
        copy.add_child(child)
    return copy


def _merge(fast: ParsingResult, ocr: ParsingResult, ocr_pages: set[int]) -> ParsingResult:
    all_pages = set(fast.info.page_numbers())
    kept = _prune(fast, all_pages - ocr_pages, "")
    added = _prune(ocr, ocr_pages, "ocr-")
    assert kept is not None and added is not None  # a ROOT is always kept
    tops = [(0, i, c) for i, c in enumerate(kept.children)] + [(1, i, c) for i, c in enumerate(added.children)]
    tops.sort(key=lambda t: (_first_page(t[2]) or 0, t[0], t[1]))
    root = ParsingResult(id=fast.id, type=T.ROOT, content=fast.content, metadata=dict(fast.metadata))
    for _, _, child in tops:
        root.add_child(child)
    return root


# -- LLM readings --------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, assembly: Assembly, client: Model, pdf: str | Path | None, dpi: int, on_error: OnError):
        self.assembly = assembly
        self.client = client
        self.pdf = Path(pdf) if pdf is not None else _source_path(assembly.root)
        self.dpi = dpi
        self.on_error = on_error
        self._grounder: Any = None

    def read_all(self) -> None:
        regions = [n for n in self.assembly.root.walk() if n.type in (T.TABLE, T.FIGURE) and n.geom]
        blank = sorted(p for p, how in self.assembly.page_strategies.items() if how == "none")
        if not regions and not blank:
            return
        import pymupdf

        try:
            doc = pymupdf.open(str(self.pdf))
        except Exception as exc:  # noqa: BLE001 - MuPDF's own error types
            raise InputError(self.pdf, f"cannot open the PDF to render regions for the LLM ({exc})") from None
        with doc:
            for page in blank:
                reading = self._read_page(doc, page)
                self.assembly.page_readings[page] = reading
                if reading.text:
                    self.assembly.page_strategies[page] = "llm"
            for element in regions:
                self.assembly.readings[element.id] = self._read(doc, element)

    def _read_page(self, doc: Any, page: int) -> RegionReading:
        what = f"{self.pdf.name}: LLM transcription of page {page}"
        reading = RegionReading(f"page-{page}")
        box = ParsingBoundingBox(page, 0.0, 0.0, 1.0, 1.0)
        try:
            answer = self.client.complete(PAGE_PROMPT.format(page=page), images=[_render(doc, box, self.dpi)], what=what)
        except ModelError as exc:
            if self.on_error == "raise":
                raise
            log.warning("%s", exc)
            reading.flags.append(f"llm: {exc}")
            return reading
        text = answer.strip()
        reading.pieces.append(TextPiece(text, [box], generated=True))
        reading.flags.append("llm: page transcribed by the model; no text layer to ground it in")
        reading.text = text
        return reading

    def _read(self, doc: Any, element: ParsingResult) -> RegionReading:
        kind = "table" if element.type == T.TABLE else "figure"
        page = element.geom[0].page
        what = f"{self.pdf.name}: LLM reading of {kind} {element.id} (page {page})"
        reading = RegionReading(element.id)
        try:
            images = [_render(doc, box, self.dpi) for box in element.geom]
            prompt = (TABLE_PROMPT if kind == "table" else FIGURE_PROMPT).format(page=page)
            answer = self.client.complete(prompt, images=images, what=what)
            self._parse(answer, element, reading, what)
        except ModelError as exc:
            if self.on_error == "raise":
                raise
            log.warning("%s", exc)
            reading.flags.append(f"llm: {exc}")
            reading.pieces, reading.text = [], ""
        return reading

    def _parse(self, answer: str, element: ParsingResult, reading: RegionReading, what: str) -> None:
        lines = [ln.strip() for ln in answer.strip().strip("`").splitlines()]
        lines = [ln for ln in lines if ln and not _is_rule(ln) and ln.lower() not in ("markdown", "md")]
        if not lines:
            raise ModelOutputError(what, "the answer holds no transcription and no description")
        near = self._offset(element)
        missing = 0
        for line in lines:
            head, _, rest = line.partition(":")
            label = head.strip().lower()
            if label == "description" and rest.strip():
                reading.pieces.append(TextPiece(rest.strip(), list(element.geom), generated=True))
                continue
            text = rest.strip() if label == "text" else line
            if not text:
                continue
            grounding = self.grounder.ground(text, near=near)
            inside = [b for b in grounding.boxes if _inside(b, element.geom)] if grounding.ok else []
            if inside and len(inside) == len(grounding.boxes):
                reading.pieces.append(TextPiece(text, inside, status=grounding.status))
            else:
                missing += 1
                reading.pieces.append(TextPiece(text, list(element.geom), generated=True))
        if missing:
            reading.flags.append(f"llm: {missing} of {len(reading.pieces)} lines are not in the region's text; kept as generated")
        reading.text = "\n".join(p.text for p in reading.pieces)

    @property
    def grounder(self) -> Any:
        if self._grounder is None:
            from ..grounding import Grounder

            self._grounder = Grounder(self.assembly.root)
        return self._grounder

    def _offset(self, element: ParsingResult) -> int | None:
        offsets = self.grounder.stream.doc.element_offsets
        return next((offsets[n.id] for n in element.walk() if n.id in offsets), None)


def _is_rule(line: str) -> bool:
    """A Markdown table rule (``|---|:--:|``)."""
    return bool(line) and set(line) <= set("|-: ") and "-" in line


def _inside(box: ParsingBoundingBox, region: list[ParsingBoundingBox], slack: float = 0.01) -> bool:
    cx, cy = (box.left + box.right) / 2, (box.top + box.bottom) / 2
    return any(r.page == box.page and r.left - slack <= cx <= r.right + slack and r.top - slack <= cy <= r.bottom + slack
               for r in region)


def _render(doc: Any, box: ParsingBoundingBox, dpi: int) -> bytes:
    import pymupdf

    page = doc[box.page - 1]
    w, h = page.rect.width, page.rect.height
    clip = pymupdf.Rect(box.left * w, box.top * h, box.right * w, box.bottom * h) + (-4, -4, 4, 4)
    return bytes(page.get_pixmap(clip=clip & page.rect, dpi=dpi).tobytes("png"))


def _source_path(root: ParsingResult) -> Path:
    source = root.info.source
    path = source.get("path") if isinstance(source, Mapping) else None
    if not path:
        raise InputError("<tree>", "the tree names no source PDF; pass pdf= to render regions for the LLM")
    return Path(str(path))


def _name(root: ParsingResult) -> str:
    source = root.info.source
    return str(source.get("path") or source.get("name") or "<tree>") if isinstance(source, Mapping) else "<tree>"
