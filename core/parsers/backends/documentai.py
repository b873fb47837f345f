"""Google Document AI backend (thesis §3.3.6): Layout Parser ``documentLayout`` -> tree.

Layout Parser returns ``documentLayout.blocks[]``, each a ``textBlock`` (``type`` paragraph,
title, subtitle, heading-1..heading-6, header, footer; child ``blocks``), ``tableBlock``
(``headerRows``/``bodyRows`` of cells holding blocks), ``listBlock`` (``listEntries`` holding
blocks) or ``imageBlock``, with ``pageSpan {pageStart, pageEnd}`` and, when requested with
``LayoutConfig(return_bounding_boxes=True)``, ``boundingBox.normalizedVertices`` (0-1, origin
top-left). The native nesting (heading -> its content, table -> rows -> cells, list -> entries)
is kept. Blocks without boxes still transform (their page span is kept in metadata).

Documents of the OCR processors (no ``documentLayout``: ``pages[].paragraphs/tables`` with
``textAnchor`` into ``text``) are transformed from their paragraphs and tables instead.
Document AI returns no Markdown: the Markdown is rendered from the post-processed tree.

Environment: ``DOCUMENTAI_PROJECT_ID`` (or ``GOOGLE_CLOUD_PROJECT``), ``DOCUMENTAI_PROCESSOR_ID``,
``DOCUMENTAI_LOCATION`` (default ``us``), optional ``DOCUMENTAI_PROCESSOR_VERSION``, and
Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS`` = service-account key file).
Needs the ``documentai`` extra (google-cloud-documentai).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import InvalidBoxError, MissingCredentialsError
from grounded.model.boxes import ParsingBoundingBox
from grounded.model.element_info import ElementTrace, HeadingInfo
from grounded.model.elements import HEADING_TYPES, ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.cloud import Progress, RetryPolicy, call_with_retries, credential_from_env
from grounded.runtime.optional import require

from ..base import BaseParser, map_label
from ..native import NodeFactory, TableCell, add_table_rows, enclosing_per_page, grid_to_markdown

__all__ = ["DocumentAIParser", "document_to_tree", "vertices_to_box"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: Layout Parser block types (and OCR layout kinds) -> ParsingResultType
LABEL_MAP: dict[str, ParsingResultType] = {
    "paragraph": T.PARAGRAPH,
    "title": T.TITLE,
    "subtitle": T.SECTION_HEADER,
    **{f"heading-{n}": T.SECTION_HEADER for n in range(1, 7)},
    "header": T.PAGE_HEADER,
    "footer": T.PAGE_FOOTER,
    "table": T.TABLE,
    "list": T.LIST,
    "list_entry": T.LIST_ITEM,
    "image": T.FIGURE,
    "caption": T.CAPTION,
    "table.caption": T.CAPTION,  # tableBlock.caption
}

_HEADING = re.compile(r"heading-(\d+)$")


def _get(d: Mapping[str, Any] | None, camel: str, default: Any = None) -> Any:
    """Field of a Document dict in REST (camelCase) or proto (snake_case) naming."""
    if not d:
        return default
    if camel in d:
        return d[camel]
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
    if snake in d:
        return d[snake]
    return d.get(snake + "_", default)  # proto-plus renames fields named like builtins: type -> type_


def vertices_to_box(
    poly: Mapping[str, Any] | None, page: int, width: float | None = None, height: float | None = None
) -> ParsingBoundingBox | None:
    """BoundingPoly -> page-fraction box. Uses ``normalizedVertices`` (0-1) or pixel ``vertices``
    divided by the page ``width``/``height``. Omitted coordinates are 0 (proto3 JSON drops zeros)."""
    if not poly:
        return None
    vertices = _get(poly, "normalizedVertices") or []
    scale_x = scale_y = 1.0
    if not vertices:
        vertices = _get(poly, "vertices") or []
        if not vertices or not width or not height:
            return None
        scale_x, scale_y = float(width), float(height)
    xs = [float(v.get("x", 0.0)) / scale_x for v in vertices]
    ys = [float(v.get("y", 0.0)) / scale_y for v in vertices]
    if max(xs) - min(xs) <= 0 or max(ys) - min(ys) <= 0:
        return None
    try:
        return ParsingBoundingBox(page, min(xs), min(ys), max(xs), max(ys))
    except InvalidBoxError as exc:
        log.warning("documentai: box on page %d dropped (%s)", page, exc)
        return None


# -- Layout Parser ----------------------------------------------------------------------------
class _LayoutBuilder:
    def __init__(
        self, factory: NodeFactory, page_offset: int, id_prefix: str, label_map: Mapping[str, ParsingResultType]
    ) -> None:
        self.label_map = label_map
        self.factory = factory
        self.offset = page_offset
        self.prefix = id_prefix

    def span(self, block: Mapping[str, Any]) -> tuple[int, int] | None:
        span = _get(block, "pageSpan")
        if not span:
            return None
        start = int(_get(span, "pageStart", 0) or 0)
        end = int(_get(span, "pageEnd", start) or start)
        if start < 1:
            return None
        return start + self.offset, max(start, end) + self.offset

    def base(self, block: Mapping[str, Any], label: str) -> tuple[ParsingResultType, dict[str, Any], list[ParsingBoundingBox]]:
        type_, meta = map_label(label, self.label_map)
        if _get(block, "blockId") is not None:
            ElementTrace(meta).native_id = f"{self.prefix}{_get(block, 'blockId')}"
        span = self.span(block)
        geom: list[ParsingBoundingBox] = []
        if span:
            meta["page_span"] = list(span)
            box = vertices_to_box(_get(block, "boundingBox"), span[0])
            if box:
                geom.append(box)
        return type_, meta, geom

    def blocks(self, blocks: list[Mapping[str, Any]], parent: ParsingResult) -> None:
        for block in blocks or []:
            self.block(block, parent)

    def block(self, block: Mapping[str, Any], parent: ParsingResult) -> None:
        text_block = _get(block, "textBlock")
        table_block = _get(block, "tableBlock")
        list_block = _get(block, "listBlock")
        image_block = _get(block, "imageBlock")
        if text_block is not None:
            label = str(_get(text_block, "type") or "paragraph")
            type_, meta, geom = self.base(block, label)
            match = _HEADING.match(label)
            if match and type_ in HEADING_TYPES:
                HeadingInfo(meta).native_level = int(match.group(1))
            node = parent.add_child(self.factory.node(type_, str(_get(text_block, "text") or "").strip(), geom, meta))
            self.blocks(_get(text_block, "blocks") or [], node)
        elif table_block is not None:
            self.table(block, table_block, parent)
        elif list_block is not None:
            type_, meta, geom = self.base(block, "list")
            if _get(list_block, "type"):
                meta["list_type"] = _get(list_block, "type")
            node = parent.add_child(self.factory.node(type_, "", geom, meta))
            for entry in _get(list_block, "listEntries") or []:
                self.list_entry(entry, node)
            node.content = "\n".join(f"- {c.content}" for c in node.children if c.content)
        elif image_block is not None:
            type_, meta, geom = self.base(block, "image")
            text = str(_get(image_block, "imageText") or "").strip()
            parent.add_child(self.factory.node(type_, text, geom, meta))
        else:
            type_, meta, geom = self.base(block, "unknown-block")
            parent.add_child(self.factory.node(type_, "", geom, meta))

    def list_entry(self, entry: Mapping[str, Any], list_node: ParsingResult) -> None:
        children = _get(entry, "blocks") or []
        item_type, item_meta = map_label("list_entry", self.label_map)
        item = list_node.add_child(self.factory.node(item_type, metadata=item_meta))
        texts: list[str] = []
        boxes: list[ParsingBoundingBox] = []
        for child in children:
            tb = _get(child, "textBlock")
            if tb is not None and not _get(tb, "blocks"):
                texts.append(str(_get(tb, "text") or "").strip())
                _, _, geom = self.base(child, "paragraph")
                boxes.extend(geom)
                span = self.span(child)
                if span and "page_span" not in item.metadata:
                    item.metadata["page_span"] = list(span)
            else:
                self.block(child, item)
        item.content = "\n".join(t for t in texts if t)
        item.geom = enclosing_per_page(boxes)

    def table(self, block: Mapping[str, Any], table_block: Mapping[str, Any], parent: ParsingResult) -> None:
        type_, meta, geom = self.base(block, "table")
        caption = str(_get(table_block, "caption") or "").strip()
        if caption:
            cap_type, cap_meta = map_label("table.caption", self.label_map)
            if "page_span" in meta:
                cap_meta["page_span"] = meta["page_span"]
            parent.add_child(self.factory.node(cap_type, caption, metadata=cap_meta))
        table = parent.add_child(self.factory.node(type_, "", geom, meta))
        rows: list[list[TableCell]] = []
        cell_boxes: list[list[list[ParsingBoundingBox]]] = []
        for header, key in ((True, "headerRows"), (False, "bodyRows")):
            for row in _get(table_block, key) or []:
                cells, boxes = [], []
                for cell in _get(row, "cells") or []:
                    inner = _get(cell, "blocks") or []
                    cells.append(TableCell(
                        _blocks_text(inner),
                        int(_get(cell, "rowSpan", 1) or 1),
                        int(_get(cell, "colSpan", 1) or 1),
                        header,
                    ))
                    found: list[ParsingBoundingBox] = []
                    for child in inner:
                        _, _, g = self.base(child, "paragraph")
                        found.extend(g)
                    boxes.append(enclosing_per_page(found))
                rows.append(cells)
                cell_boxes.append(boxes)
        add_table_rows(table, rows, self.factory)
        for row_node, boxes in zip(table.children, cell_boxes):
            for cell_node, cell_geom in zip(row_node.children, boxes):
                cell_node.geom = cell_geom
        table.content = grid_to_markdown([[c.text for c in r] for r in rows])


def _blocks_text(blocks: list[Mapping[str, Any]]) -> str:
    parts: list[str] = []
    for block in blocks or []:
        tb = _get(block, "textBlock")
        if tb is not None:
            parts.append(str(_get(tb, "text") or "").strip())
            parts.append(_blocks_text(_get(tb, "blocks") or []))
        lb = _get(block, "listBlock")
        if lb is not None:
            for entry in _get(lb, "listEntries") or []:
                parts.append(_blocks_text(_get(entry, "blocks") or []))
    return " ".join(p for p in parts if p)


# -- OCR processors ---------------------------------------------------------------------------
def _anchor_text(text: str, layout: Mapping[str, Any] | None) -> str:
    anchor = _get(layout, "textAnchor") or {}
    parts = []
    for seg in _get(anchor, "textSegments") or []:
        start = int(_get(seg, "startIndex", 0) or 0)
        end = int(_get(seg, "endIndex", 0) or 0)
        parts.append(text[start:end])
    return "".join(parts).strip()


def _ocr_pages(
    document: Mapping[str, Any],
    root: ParsingResult,
    factory: NodeFactory,
    offset: int,
    prefix: str,
    label_map: Mapping[str, ParsingResultType],
) -> None:
    text = str(_get(document, "text") or "")
    for index, page in enumerate(_get(document, "pages") or []):
        number = int(_get(page, "pageNumber", index + 1) or index + 1) + offset
        dim = _get(page, "dimension") or {}
        width, height = dim.get("width"), dim.get("height")

        def box_of(layout: Mapping[str, Any] | None, number: int = number, width: Any = width, height: Any = height) -> list[ParsingBoundingBox]:
            b = vertices_to_box(_get(layout, "boundingPoly"), number, width, height)
            return [b] if b else []

        tables: list[tuple[ParsingBoundingBox | None, ParsingResult]] = []
        for t_index, table_json in enumerate(_get(page, "tables") or []):
            geom = box_of(_get(table_json, "layout"))
            table_type, table_meta = map_label("table", label_map)
            table = factory.node(table_type, "", geom, {**table_meta, **ElementTrace.new(native_id=f"{prefix}p{number}-t{t_index}")})
            rows, boxes = [], []
            for header, key in ((True, "headerRows"), (False, "bodyRows")):
                for row in _get(table_json, key) or []:
                    cells = _get(row, "cells") or []
                    rows.append([TableCell(" ".join(_anchor_text(text, _get(c, "layout")).split()),
                                           int(_get(c, "rowSpan", 1) or 1), int(_get(c, "colSpan", 1) or 1), header)
                                 for c in cells])
                    boxes.append([box_of(_get(c, "layout")) for c in cells])
            add_table_rows(table, rows, factory)
            for row_node, row_boxes in zip(table.children, boxes):
                for cell_node, cell_geom in zip(row_node.children, row_boxes):
                    cell_node.geom = cell_geom
            table.content = grid_to_markdown([[c.text for c in r] for r in rows])
            tables.append((geom[0] if geom else None, table))
        placed: set[int] = set()
        for p_index, para in enumerate(_get(page, "paragraphs") or []):
            geom = box_of(_get(para, "layout"))
            inside = next(
                (i for i, (tb, _) in enumerate(tables) if tb and geom and geom[0].intersection_area(tb) >= 0.5 * geom[0].area),
                None,
            )
            if inside is not None:  # table text is carried by its cells; the table goes where it starts
                if inside not in placed:
                    placed.add(inside)
                    root.add_child(tables[inside][1])
                continue
            content = _anchor_text(text, _get(para, "layout"))
            para_type, meta = map_label("paragraph", label_map)
            ElementTrace(meta).native_id = f"{prefix}p{number}-{p_index}"
            root.add_child(factory.node(para_type, content, geom, meta))
        for i, (_, table) in enumerate(tables):
            if i not in placed:
                root.add_child(table)


# -- document ---------------------------------------------------------------------------------
def _slices(native: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """(page offset, Document dict) pairs: a ``{"slices": [{"first_page", "document"}]}`` wrapper
    written by :meth:`DocumentAIParser._parse` for long PDFs, or one plain Document."""
    if "slices" in native:
        return [(int(s.get("first_page", 1)) - 1, s["document"]) for s in native["slices"]]
    return [(0, native)]


def document_to_tree(native: Mapping[str, Any], label_map: Mapping[str, ParsingResultType] = LABEL_MAP) -> ParsingResult:
    """ROOT tree from a Document dict (REST JSON or ``to_dict`` form) or the sliced wrapper; block
    types mapped through ``label_map``."""
    factory = NodeFactory()
    root = factory.node(T.ROOT)
    slices = _slices(native)
    for index, (offset, document) in enumerate(slices):
        prefix = f"s{index}:" if len(slices) > 1 else ""
        layout = _get(document, "documentLayout")
        if layout and _get(layout, "blocks"):  # to_json() writes an empty layout into OCR documents
            _LayoutBuilder(factory, offset, prefix, label_map).blocks(_get(layout, "blocks") or [], root)
        else:
            _ocr_pages(document, root, factory, offset, prefix, label_map)
    return root


class DocumentAIParser(BaseParser):
    """Google Document AI Layout Parser with bounding boxes requested.

    ``client`` may be injected (anything with ``process_document(request=, retry=, timeout=)``
    returning an object whose ``.document`` is a ``documentai.Document``); otherwise a
    ``DocumentProcessorServiceClient`` for ``{location}-documentai.googleapis.com`` is built with
    Application Default Credentials. Long PDFs are sent ``pages_per_request`` pages at a time
    (online processing limit); each request has a ``timeout`` and is retried with backoff on
    429/5xx/timeouts. ``layout_parser=False`` omits the Layout Parser options (OCR processors).
    """

    name: ClassVar[str] = "documentai"
    LABEL_MAP: ClassVar[Mapping[str, ParsingResultType]] = LABEL_MAP

    options = (
        Option("project_id", str, None, "Google Cloud project", cli=False),
        Option("location", str, None, "processor location (us, eu)", cli=False),
        Option("processor_id", str, None, "Document AI processor", cli=False),
        Option("processor_version", str, None, "processor version", cli=False),
        Option("client", None, help="a Document AI client"),
        Option("layout_parser", bool, True, "the processor is a Layout Parser", cli=False),
        Option("pages_per_request", int, 15, "pages per request", low=1, cli=False),
        Option("timeout", float, 300.0, "seconds per request", low=0.0, open_low=True, cli=False),
        Option("retry", None, help="RetryPolicy of failed calls"),
        Option("sleep", None, help="the sleep function of the backoff"),
        Option("progress", None, help="callback (pages done, pages)"),
    )

    def __init__(
        self,
        *,
        project_id: str | None = None,
        location: str | None = None,
        processor_id: str | None = None,
        processor_version: str | None = None,
        client: Any = None,
        layout_parser: bool = True,
        pages_per_request: int = 15,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        progress: Callable[[int, int], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        require("google.cloud.documentai", extra="documentai", what="Document AI parser", package="google-cloud-documentai")
        self.project_id = credential_from_env(
            self.name, ("DOCUMENTAI_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"), "the Google Cloud project", explicit=project_id
        )
        self.processor_id = credential_from_env(
            self.name, ("DOCUMENTAI_PROCESSOR_ID",), "the Layout Parser processor id", explicit=processor_id
        )
        self.location = location or os.environ.get("DOCUMENTAI_LOCATION") or "us"
        self.processor_version = processor_version or os.environ.get("DOCUMENTAI_PROCESSOR_VERSION") or None
        if pages_per_request < 1:
            raise ValueError("pages_per_request must be >= 1")
        if client is None:
            client = self._build_client()
        self.client = client
        self.layout_parser = layout_parser
        self.pages_per_request = pages_per_request
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.progress = progress

    def _build_client(self) -> Any:
        import google.auth.exceptions
        from google.api_core.client_options import ClientOptions
        from google.cloud import documentai

        try:
            return documentai.DocumentProcessorServiceClient(
                client_options=ClientOptions(api_endpoint=f"{self.location}-documentai.googleapis.com")
            )
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise MissingCredentialsError(
                self.name,
                "GOOGLE_APPLICATION_CREDENTIALS",
                "path to a service-account key file, or run `gcloud auth application-default login`",
            ) from exc

    @property
    def processor_name(self) -> str:
        name = f"projects/{self.project_id}/locations/{self.location}/processors/{self.processor_id}"
        return name + (f"/processorVersions/{self.processor_version}" if self.processor_version else "")

    def build_request(self, content: bytes) -> Any:
        from google.cloud import documentai

        options = None
        if self.layout_parser:
            options = documentai.ProcessOptions(
                layout_config=documentai.ProcessOptions.LayoutConfig(return_bounding_boxes=True)
            )
        return documentai.ProcessRequest(
            name=self.processor_name,
            raw_document=documentai.RawDocument(content=content, mime_type="application/pdf"),
            process_options=options,
        )

    def _parse(self, pdf_path: Path) -> dict[str, Any]:
        import pymupdf
        from google.cloud import documentai

        slices = []
        with pymupdf.open(pdf_path) as doc, Progress(self.progress, doc.page_count, "documentai", "page") as bar:
            count = doc.page_count
            for start in range(0, count, self.pages_per_request):
                end = min(count, start + self.pages_per_request)
                if start == 0 and end == count:
                    content = pdf_path.read_bytes()
                else:
                    with pymupdf.open() as part:
                        part.insert_pdf(doc, from_page=start, to_page=end - 1)
                        content = part.tobytes()
                request = self.build_request(content)

                def send(request: Any = request) -> Any:
                    # retry=None: the client's built-in retry would multiply with ours
                    return self.client.process_document(request=request, retry=None, timeout=self.timeout)

                result = call_with_retries(
                    send,
                    backend=self.name,
                    source=f"{pdf_path} pages {start + 1}-{end}",
                    policy=self.retry,
                    sleep=self._sleep,
                    what="process_document",
                )
                document = json.loads(documentai.Document.to_json(result.document))
                slices.append({"first_page": start + 1, "document": document})
                bar.update(end - start)
        return {"slices": slices}

    def _transform(self, native: Mapping[str, Any]) -> ParsingResult:
        return document_to_tree(native, self.label_map)

    def version(self) -> str:
        try:
            sdk = importlib.metadata.version("google-cloud-documentai")
        except importlib.metadata.PackageNotFoundError:
            sdk = "unknown"
        return f"Document AI {self.processor_version or 'default processor version'} (google-cloud-documentai {sdk})"
