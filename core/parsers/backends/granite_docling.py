"""``granite_docling`` backend: Granite-Docling-258M through Docling's VLM pipeline -> DocTags.

The model reads page images and writes DocTags: XML-like tags whose four ``<loc_N>`` tokens
(N in 0..500) give ``x0, y0, x1, y1`` on the page image, origin top-left. The native output kept
here is the raw DocTags of every page plus each page's size in points; the transform loads them
with docling-core (``DoclingDocument.load_from_doctags``) on a 500x500 page grid, so every box
comes out as ``loc / 500`` of the page, and then reuses the Docling tree conversion.

Runs with MLX (``mlx-vlm``, extra ``mlx``) on Apple silicon and with Hugging Face transformers
everywhere else (extra ``docling``). Model weights are fetched by Docling on first use.
"""

from __future__ import annotations

import importlib.metadata
import logging
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import ParserError
from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.optional import available, require

from ..base import BaseParser
from ._docling_tree import DOCLING_LABEL_MAP, docling_to_tree

__all__ = ["GraniteDoclingParser", "DocTagsPage", "DocTagsPages", "DOCTAGS_GRID"]

log = logging.getLogger(__name__)

#: DocTags location grid: ``<loc_N>`` with N in 0..500 on both axes.
DOCTAGS_GRID = 500
_PAGE_BREAK = re.compile(r"<page_break>")


@dataclass
class DocTagsPage:
    """Raw DocTags of one page; ``width``/``height`` = page size in points when known."""

    doctags: str
    width: float | None = None
    height: float | None = None


@dataclass
class DocTagsPages:
    """Native output of the ``granite_docling`` backend: one :class:`DocTagsPage` per PDF page."""

    pages: list[DocTagsPage]
    _document: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_text(cls, text: str, page_sizes: Sequence[tuple[float, float]] | None = None) -> DocTagsPages:
        """A multi-page DocTags string (pages separated by ``<page_break>``, as docling-core's
        ``export_to_doctags`` writes them) -> pages; ``page_sizes`` in points, one per page."""
        chunks = _PAGE_BREAK.split(text)
        if len(chunks) > 1:  # re-open/close the <doctag> wrapper each page chunk lost
            chunks = [c.replace("<doctag>", "").replace("</doctag>", "") for c in chunks]
        return cls._with_sizes(chunks, page_sizes)

    @classmethod
    def from_files(
        cls, paths: Sequence[str | Path], page_sizes: Sequence[tuple[float, float]] | None = None
    ) -> DocTagsPages:
        """One raw DocTags file (e.g. a model's ``.dt`` generation) per page."""
        texts = []
        for p in paths:
            try:
                texts.append(Path(p).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise ParserError(p, f"cannot read DocTags: {exc}") from exc
        return cls._with_sizes(texts, page_sizes)

    @classmethod
    def _with_sizes(cls, texts: list[str], page_sizes: Sequence[tuple[float, float]] | None) -> DocTagsPages:
        if page_sizes is not None and len(page_sizes) != len(texts):
            raise ValueError(f"{len(texts)} DocTags pages but {len(page_sizes)} page sizes")
        sizes: Sequence[tuple[float | None, float | None]] = page_sizes or [(None, None)] * len(texts)
        return cls([DocTagsPage(t, w, h) for t, (w, h) in zip(texts, sizes)])

    def document(self) -> Any:
        """The pages as a docling-core ``DoclingDocument`` on the 500x500 loc grid (cached)."""
        if self._document is None:
            self._document = doctags_to_docling(self.pages)
        return self._document


def doctags_to_docling(pages: Sequence[DocTagsPage]) -> Any:
    """Load DocTags pages with docling-core on blank ``DOCTAGS_GRID``-square page images.

    docling-core scales every ``<loc_N>`` by ``image size / 500`` and only keeps list-item boxes
    when a page image is given, so a blank 500x500 image yields boxes in exact loc units.
    """
    require("docling_core", extra="docling", what="Granite-Docling DocTags loading")
    from docling_core.types.doc import DoclingDocument
    from docling_core.types.doc.document import DocTagsDocument
    from PIL import Image

    blank = Image.new("L", (DOCTAGS_GRID, DOCTAGS_GRID), 255)
    doctags_doc = DocTagsDocument.from_doctags_and_image_pairs(
        [p.doctags for p in pages], [blank] * len(pages)
    )
    return DoclingDocument.load_from_doctags(doctags_doc, document_name="Document")


def _apple_silicon() -> bool:
    return platform.system() == "Darwin" and platform.machine() in ("arm64", "aarch64")


class GraniteDoclingParser(BaseParser):
    """Granite-Docling-258M via Docling's ``VlmPipeline``.

    Parameters
    ----------
    framework:
        ``"auto"`` (MLX on Apple silicon when ``mlx-vlm`` is installed, else transformers),
        ``"mlx"`` or ``"transformers"``.
    picture_text:
        Keep text recognised inside figures (children of the FIGURE node).
    converter:
        Any object with ``convert(path) -> result`` where ``result.pages[i]`` has
        ``predictions.vlm_response.text`` (DocTags) and ``size.width/height`` (points), as
        Docling's ``ConversionResult``; replaces the VLM pipeline (tests, remote inference).
    """

    name = "granite_docling"
    LABEL_MAP: ClassVar[dict[str, ParsingResultType]] = DOCLING_LABEL_MAP

    options = (
        Option("framework", str, "auto", "the VLM runtime", choices=("auto", "transformers", "mlx"), cli=False),
        Option("picture_text", bool, False, "keep text found inside pictures", cli=False),
        Option("converter", None, help="a docling DocumentConverter to use instead of the default one"),
    )

    def __init__(
        self,
        *,
        framework: str = "auto",
        picture_text: bool = False,
        converter: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if framework not in ("auto", "mlx", "transformers"):
            raise ValueError("framework must be 'auto', 'mlx' or 'transformers'")
        if framework == "auto":
            use_mlx = _apple_silicon() and available("mlx_vlm")
            framework = "mlx" if use_mlx else "transformers"
        self.framework = framework
        self.picture_text = picture_text
        self._converter = converter
        require("docling_core", extra="docling", what="Granite-Docling parser")
        if converter is None:
            require("docling", extra="docling", what="Granite-Docling parser")
            if framework == "mlx":
                require("mlx_vlm", extra="mlx", what="Granite-Docling parser (MLX)", package="mlx-vlm")
            else:
                require("transformers", extra="docling", what="Granite-Docling parser (transformers)", package="transformers")

    def _build_converter(self) -> Any:
        from docling.datamodel import vlm_model_specs
        from docling.datamodel.base_models import InputFormat
        from docling.datamodel.pipeline_options import VlmPipelineOptions
        from docling.document_converter import DocumentConverter, PdfFormatOption
        from docling.pipeline.vlm_pipeline import VlmPipeline

        spec = (
            vlm_model_specs.GRANITEDOCLING_MLX
            if self.framework == "mlx"
            else vlm_model_specs.GRANITEDOCLING_TRANSFORMERS
        )
        options = VlmPipelineOptions(vlm_options=spec)
        return DocumentConverter(
            format_options={
                InputFormat.PDF: PdfFormatOption(pipeline_cls=VlmPipeline, pipeline_options=options)
            }
        )

    def _parse(self, pdf_path: Path) -> DocTagsPages:
        if self._converter is None:
            self._converter = self._build_converter()
        result = self._converter.convert(str(pdf_path))
        pages: list[DocTagsPage] = []
        for page in getattr(result, "pages", None) or ():
            response = getattr(getattr(page, "predictions", None), "vlm_response", None)
            size = getattr(page, "size", None)
            pages.append(
                DocTagsPage(
                    getattr(response, "text", "") or "",
                    float(size.width) if size is not None else None,
                    float(size.height) if size is not None else None,
                )
            )
        if not pages or not any(p.doctags.strip() for p in pages):
            raise ParserError(pdf_path, "Granite-Docling produced no DocTags")
        return DocTagsPages(pages)

    def _transform(self, native: DocTagsPages) -> ParsingResult:
        root = docling_to_tree(
            native.document(), self.label_map, picture_text=self.picture_text, id_prefix="granite-"
        )
        sizes = [(i + 1, p.width, p.height) for i, p in enumerate(native.pages)]
        if all(w and h for _, w, h in sizes):
            root.info.pages = [{"page": n, "width": w, "height": h} for n, w, h in sizes]
        else:  # the 500x500 grid is not a page size in points
            del root.info.pages
        root.metadata["doctags_grid"] = DOCTAGS_GRID
        return root

    def _get_md(self, native: DocTagsPages) -> str:
        """docling-core's own Markdown export of the DocTags document."""
        return str(native.document().export_to_markdown())

    @classmethod
    def load_native(cls, path: str | Path) -> DocTagsPages:
        """Recorded DocTags: one ``.dt`` file per page (a directory of them, in name order), or one
        text file of all pages separated by ``<page_break>`` (as docling-core exports them). Page
        sizes are not part of DocTags; :meth:`parse_native` takes them from the PDF."""
        source = Path(path)
        if source.is_dir():
            files = sorted(source.glob("*.dt"))
            if not files:
                raise ParserError(source, "no DocTags (*.dt) files in this directory")
            return DocTagsPages.from_files(files)
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParserError(source, f"cannot read DocTags: {exc}") from exc
        return DocTagsPages.from_text(text)

    def version(self) -> str:
        for dist in ("docling", "docling-core"):
            try:
                return f"{dist} {importlib.metadata.version(dist)} (granite-docling-258M, {self.framework})"
            except importlib.metadata.PackageNotFoundError:
                continue
        return f"unknown (granite-docling-258M, {self.framework})"
