"""LlamaParse backend (thesis §3.3.5): the JSON result's ``pages[].items[]`` -> tree.

Each item has a ``type`` (``text``, ``heading`` + ``lvl``, ``table`` + ``rows``/``md``, ``image``,
``list`` + ``items``, ...), its text in ``value`` / ``md`` and a box ``bBox = {x, y, w, h}`` in
page units (PDF points, origin top-left) of a page of ``width`` x ``height``. Boxes are
unreliable when the service's LLM could not localise an item: null coordinates and boxes that
cover the whole page are dropped (the item is kept, without a box). Newer results give a list
``bbox: [{x, y, w, h}, ...]``; each entry becomes one box.

Credentials: ``LLAMA_CLOUD_API_KEY``. Needs the ``llamaparse`` extra (llama-cloud-services).
"""

from __future__ import annotations

import importlib.metadata
import logging
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import InvalidBoxError, RemoteServiceError
from grounded.model.boxes import ParsingBoundingBox
from grounded.model.element_info import HeadingInfo
from grounded.model.elements import HEADING_TYPES, ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.cloud import RetryPolicy, call_with_retries, credential_from_env
from grounded.runtime.optional import require

from ..base import BaseParser, map_label
from ..native import NodeFactory, TableCell, add_table_rows, grid_to_markdown, parse_markdown_table

__all__ = ["LlamaParseParser", "llamaparse_box", "result_pages", "pages_to_tree"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: LlamaParse item ``type`` -> ParsingResultType
LABEL_MAP: dict[str, ParsingResultType] = {
    "heading": T.SECTION_HEADER,
    "text": T.PARAGRAPH,
    "paragraph": T.PARAGRAPH,
    "code": T.PARAGRAPH,
    "link": T.PARAGRAPH,
    "table": T.TABLE,
    "list": T.LIST,
    "list_item": T.LIST_ITEM,
    "image": T.FIGURE,
    "figure": T.FIGURE,
    "chart": T.FIGURE,
    "caption": T.CAPTION,
    "footnote": T.FOOTNOTE,
    "equation": T.FORMULA,
    "formula": T.FORMULA,
    "header": T.PAGE_HEADER,
    "page_header": T.PAGE_HEADER,
    "footer": T.PAGE_FOOTER,
    "page_footer": T.PAGE_FOOTER,
}

#: a box covering at least this fraction of both page dimensions is the "could not localise" answer
FULL_PAGE_FRACTION = 0.97


def llamaparse_box(bbox: Any, page: int, width: float | None, height: float | None) -> ParsingBoundingBox | None:
    """``{x, y, w, h}`` in page units -> page-fraction box; None for null, empty or full-page boxes."""
    if not isinstance(bbox, Mapping) or not width or not height:
        return None
    try:
        x, y, w, h = (float(bbox[k]) for k in ("x", "y", "w", "h"))
    except (KeyError, TypeError, ValueError):
        return None
    if w <= 0 or h <= 0:
        return None
    if w >= FULL_PAGE_FRACTION * width and h >= FULL_PAGE_FRACTION * height:
        return None
    x0, y0 = max(0.0, x), max(0.0, y)
    x1, y1 = min(float(width), x + w), min(float(height), y + h)
    if x1 <= x0 or y1 <= y0:
        return None
    try:
        return ParsingBoundingBox(page, x0 / width, y0 / height, x1 / width, y1 / height)
    except InvalidBoxError:
        return None


def result_pages(native: Any) -> list[Mapping[str, Any]]:
    """Pages of a JSON result: ``get_json_result``'s list of per-file results, one result dict, or a page list."""
    if isinstance(native, Mapping):
        return list(native.get("pages") or [])
    if isinstance(native, list):
        if native and isinstance(native[0], Mapping) and "pages" in native[0]:
            return [p for result in native for p in (result.get("pages") or [])]
        return [p for p in native if isinstance(p, Mapping)]
    raise TypeError(f"not a LlamaParse JSON result: {type(native).__name__}")


def _item_boxes(item: Mapping[str, Any], page: int, width: float | None, height: float | None) -> list[ParsingBoundingBox]:
    raw = item.get("bBox")
    if raw is None:
        raw = item.get("bbox")
    candidates = raw if isinstance(raw, list) else [raw]
    boxes = [b for b in (llamaparse_box(c, page, width, height) for c in candidates) if b is not None]
    if raw is not None and not boxes:
        log.debug("llamaparse: page %d %s item without a usable box", page, item.get("type"))
    return boxes


def _table_rows(item: Mapping[str, Any]) -> list[list[TableCell]]:
    rows = item.get("rows")
    if isinstance(rows, list) and rows:
        grid = [[TableCell(" ".join(str(c if c is not None else "").split())) for c in row] for row in rows if isinstance(row, list)]
        if grid:
            for cell in grid[0]:
                cell.header = True
        return grid
    return parse_markdown_table(str(item.get("md") or ""))


def _item_text(item: Mapping[str, Any]) -> str:
    value = item.get("value")
    if value is None:
        value = item.get("md") or item.get("text") or ""
    return str(value).strip()


def _add_item(parent: ParsingResult, item: Mapping[str, Any], page: int, width: float | None, height: float | None,
              factory: NodeFactory, label_map: Mapping[str, ParsingResultType], default_label: str | None = None) -> None:
    label = str(item.get("type") or default_label or "")
    type_, meta = map_label(label, label_map)
    if default_label == "list_item" and type_ == T.PARAGRAPH:
        type_ = T.LIST_ITEM
    level = item.get("lvl")
    if type_ in HEADING_TYPES and isinstance(level, int) and level >= 1:
        HeadingInfo(meta).native_level = level
    node = factory.node(type_, "", _item_boxes(item, page, width, height), meta)
    if type_ == T.TABLE:
        rows = _table_rows(item)
        add_table_rows(node, rows, factory)
        node.content = grid_to_markdown([[c.text for c in r] for r in rows]) if rows else _item_text(item)
    elif type_ == T.LIST and isinstance(item.get("items"), list):
        for child in item["items"]:
            if isinstance(child, Mapping):
                _add_item(node, child, page, width, height, factory, label_map, default_label="list_item")
    else:
        node.content = _item_text(item)
    parent.add_child(node)


def pages_to_tree(
    pages: list[Mapping[str, Any]], label_map: Mapping[str, ParsingResultType] = LABEL_MAP
) -> ParsingResult:
    """ROOT tree from result pages (items in reading order, page after page); item ``type``
    mapped through ``label_map``."""
    factory = NodeFactory()
    root = factory.node(T.ROOT)
    sizes: list[dict[str, float]] = []
    for index, page in enumerate(pages):
        number = int(page.get("page") or index + 1)
        width, height = page.get("width"), page.get("height")
        if width and height:
            sizes.append({"page": number, "width": float(width), "height": float(height)})
        elif page.get("items"):
            log.warning("llamaparse: page %d has no width/height; its item boxes are dropped", number)
        for item in page.get("items") or []:
            if isinstance(item, Mapping):
                _add_item(root, item, number, width, height, factory, label_map)
    if sizes:
        root.info.pages = sizes
    return root


def pages_to_markdown(pages: list[Mapping[str, Any]]) -> str:
    """The service's own page Markdown (``md``), or the items' ``md`` when a page has none."""
    parts = []
    for page in pages:
        md = page.get("md")
        if not md:
            md = "\n\n".join(str(i.get("md") or i.get("value") or "") for i in page.get("items") or [] if isinstance(i, Mapping))
        if str(md).strip():
            parts.append(str(md).strip())
    return "\n\n".join(parts) + "\n"


class LlamaParseParser(BaseParser):
    """LlamaParse (cloud) JSON result with item boxes.

    ``client`` may be injected (anything with ``get_json_result(path) -> list[dict]``); otherwise
    a ``llama_cloud_services.LlamaParse`` is built from ``api_key`` or ``LLAMA_CLOUD_API_KEY``
    with ``options`` passed through (e.g. ``{"premium_mode": True}``). ``timeout`` bounds the
    job; transient failures (429/5xx/timeouts) are retried with backoff (``retry``).
    """

    name: ClassVar[str] = "llamaparse"
    LABEL_MAP: ClassVar[Mapping[str, ParsingResultType]] = LABEL_MAP
    ENV_VARS: ClassVar[tuple[str, ...]] = ("LLAMA_CLOUD_API_KEY",)

    options = (
        Option("api_key", str, None, "API key (default: LLAMA_CLOUD_API_KEY)", secret=True, cli=False),
        Option("client", None, help="a llama-cloud-services client"),
        Option("timeout", float, 1800.0, "seconds per job", low=0.0, open_low=True, cli=False),
        Option("retry", None, help="RetryPolicy of failed calls"),
        Option("sleep", None, help="the sleep function of the backoff"),
        Option("options", None, help="further LlamaParse options, e.g. {'premium_mode': True}"),
    )

    def __init__(
        self,
        *,
        api_key: str | None = None,
        client: Any = None,
        timeout: float = 1800.0,
        retry: RetryPolicy | None = None,
        options: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if client is None:
            require("llama_cloud_services", extra="llamaparse", what="LlamaParse parser", package="llama-cloud-services")
            key = credential_from_env(self.name, self.ENV_VARS, "an API key from LlamaCloud", explicit=api_key)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                from llama_cloud_services import LlamaParse

                client = LlamaParse(
                    api_key=key,
                    ignore_errors=False,
                    max_timeout=int(timeout),
                    show_progress=False,
                    verbose=False,
                    **dict(options or {}),
                )
        self.client = client
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._sleep = sleep

    def _parse(self, pdf_path: Path) -> dict[str, Any]:
        results = call_with_retries(
            lambda: self.client.get_json_result(str(pdf_path)),
            backend=self.name,
            source=str(pdf_path),
            policy=self.retry,
            sleep=self._sleep,
            what="parse job",
        )
        if isinstance(results, Mapping):
            results = [results]
        if not results or not isinstance(results[0], Mapping):
            raise RemoteServiceError(f"{self.name}: {pdf_path}: the service returned no JSON result")
        result = dict(results[0])
        if result.get("error") or not result.get("pages"):
            raise RemoteServiceError(f"{self.name}: {pdf_path}: {result.get('error') or 'the result has no pages'}")
        self._fill_page_sizes(pdf_path, result["pages"])
        return result

    @staticmethod
    def _fill_page_sizes(pdf_path: Path, pages: list[dict[str, Any]]) -> None:
        """Pages without ``width``/``height`` get the PDF's page size (points) so boxes stay usable."""
        if all(p.get("width") and p.get("height") for p in pages):
            return
        import pymupdf

        with pymupdf.open(pdf_path) as doc:
            for index, page in enumerate(pages):
                number = int(page.get("page") or index + 1)
                if not (page.get("width") and page.get("height")) and 1 <= number <= doc.page_count:
                    rect = doc[number - 1].rect
                    page["width"], page["height"] = rect.width, rect.height

    def _transform(self, native: Any) -> ParsingResult:
        root = pages_to_tree(result_pages(native), self.label_map)
        if isinstance(native, Mapping) and native.get("job_id"):
            root.metadata["job_id"] = native["job_id"]
        return root

    def _get_md(self, native: Any) -> str:
        """The service's own Markdown (each page's ``md``, written by LlamaParse's model)."""
        return pages_to_markdown(result_pages(native))

    def version(self) -> str:
        try:
            return f"llama-cloud-services {importlib.metadata.version('llama-cloud-services')}"
        except importlib.metadata.PackageNotFoundError:
            return "unknown"
