"""``docling`` backend: Docling's standard PDF pipeline (layout model + TableFormer) -> DoclingDocument.

Needs the ``docling`` extra (``pip install 'grounded[docling]'``); the models are downloaded by
Docling on first use (or pre-fetched with ``docling-tools models download``). The transform only
needs ``docling-core`` and runs on recorded ``DoclingDocument`` JSON as well
(:meth:`DoclingParser.load_native`).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import ParserError
from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.optional import require

from ..base import BaseParser
from ._docling_tree import DOCLING_LABEL_MAP, docling_to_tree

__all__ = ["DoclingParser", "load_docling_document"]


def load_docling_document(source: str | Path | dict[str, Any]) -> Any:
    """A recorded ``DoclingDocument`` (JSON file path or dict) -> docling-core object."""
    require("docling_core", extra="docling", what="Loading a DoclingDocument")
    from docling_core.types.doc import DoclingDocument

    if isinstance(source, dict):
        return DoclingDocument.model_validate(source)
    path = Path(source)
    try:
        return DoclingDocument.load_from_json(path)
    except (OSError, ValueError) as exc:
        raise ParserError(path, f"not a readable DoclingDocument JSON: {exc}") from exc


class DoclingParser(BaseParser):
    """Docling standard pipeline.

    Parameters
    ----------
    do_ocr, do_table_structure:
        Docling ``PdfPipelineOptions`` switches (OCR of bitmap regions; TableFormer cell structure).
    picture_text:
        Keep text Docling recognised inside figures (as children of the FIGURE node).
    converter:
        Any object with ``convert(path) -> result`` where ``result.document`` is a
        ``DoclingDocument``; replaces Docling's ``DocumentConverter`` (tests, custom pipelines).
    """

    name = "docling"
    LABEL_MAP: ClassVar[dict[str, ParsingResultType]] = DOCLING_LABEL_MAP

    options = (
        Option("do_ocr", bool, True, "Docling's OCR of bitmap text", cli=False),
        Option("do_table_structure", bool, True, "Docling's table structure model", cli=False),
        Option("picture_text", bool, False, "keep text found inside pictures", cli=False),
        Option("converter", None, help="a docling DocumentConverter to use instead of the default one"),
    )

    def __init__(
        self,
        *,
        do_ocr: bool = True,
        do_table_structure: bool = True,
        picture_text: bool = False,
        converter: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if converter is None:
            require("docling", extra="docling", what="Docling parser")
        require("docling_core", extra="docling", what="Docling parser")
        self.do_ocr = do_ocr
        self.do_table_structure = do_table_structure
        self.picture_text = picture_text
        self._converter = converter

    def _build_converter(self) -> Any:
        from docling.datamodel.base_models import InputFormat
        from docling.datamodel.pipeline_options import PdfPipelineOptions
        from docling.document_converter import DocumentConverter, PdfFormatOption

        options = PdfPipelineOptions(do_ocr=self.do_ocr, do_table_structure=self.do_table_structure)
        return DocumentConverter(format_options={InputFormat.PDF: PdfFormatOption(pipeline_options=options)})

    def _parse(self, pdf_path: Path) -> Any:
        if self._converter is None:
            self._converter = self._build_converter()
        result = self._converter.convert(str(pdf_path))
        status = str(getattr(getattr(result, "status", None), "value", getattr(result, "status", "success")))
        if status.lower() not in ("success", "partial_success"):
            errors = "; ".join(
                str(getattr(e, "error_message", e)) for e in getattr(result, "errors", ()) or ()
            )
            raise ParserError(pdf_path, f"Docling conversion {status}: {errors or 'no details'}")
        return result.document

    def _transform(self, native: Any) -> ParsingResult:
        return docling_to_tree(native, self.label_map, picture_text=self.picture_text, id_prefix="docling-")

    def _get_md(self, native: Any) -> str:
        """Docling's own Markdown export (it renders Docling's groups, captions and tables)."""
        return str(native.export_to_markdown())

    @classmethod
    def load_native(cls, path: str | Path | dict[str, Any]) -> Any:
        """Recorded DoclingDocument JSON (path or dict) -> the native object ``_transform`` takes."""
        return load_docling_document(path)

    def version(self) -> str:
        for dist in ("docling", "docling-core"):
            try:
                return f"{dist} {importlib.metadata.version(dist)}"
            except importlib.metadata.PackageNotFoundError:
                continue
        return "unknown"
