"""Gemini 2.5 Flash backend (thesis §3.3.4): one request per rendered page with the thesis prompt.

Each page is rendered with PyMuPDF and sent with the prompt of thesis Listing A.1
(:data:`GEMINI_PROMPT`, verbatim; ``{*}`` is replaced by the page number). The model answers
``{"layout_elements": [{"category", "heading_level"?, "content", "bbox": {"page_number",
"box_2d": [y0, x0, y1, x1]}}]}`` with ``box_2d`` integers in 0-1000 of the image (origin
top-left, **y first**). Because the image is the whole page, ``box_2d / 1000`` are page
fractions. Replies are parsed by :func:`parse_model_json`, which survives Markdown fences,
trailing commas, invalid escapes (LaTeX) and truncated output (``MAX_TOKENS``). The model writes
Markdown per element only, not for the document: the Markdown is rendered from the post-processed tree.

Credentials: ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``). Needs the ``gemini`` extra.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import InvalidBoxError, ParserError
from grounded.model.boxes import ParsingBoundingBox
from grounded.model.element_info import ElementTrace, HeadingInfo
from grounded.model.elements import HEADING_TYPES, ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.cloud import Progress, RetryPolicy, call_with_retries, credential_from_env
from grounded.runtime.optional import require

from ..base import BaseParser, map_label
from ..native import NodeFactory, add_table_rows, parse_markdown_table

__all__ = ["GeminiParser", "GEMINI_PROMPT", "parse_model_json", "gemini_elements", "box_2d_to_box", "pages_to_tree"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: Thesis Listing A.1, verbatim (the listing's page break removed).
GEMINI_PROMPT = """<system_role>
You are an expert Document Layout Analysis AI. Your goal is to perfectly transcribe
and segment PDF documents into structured data.
</system_role>

<task_description>
Analyze the provided document image. Identify every layout element, its bounding box,
its category, and its textual content.
</task_description>

<categories>
Classify each element into exactly one of these categories:
section_header, text, formula, list_item, ref_item, table, image, caption,
page_header, page_footer, watermark

Rules for Categorization:
- Use "section_header" for titles and headings. Infer hierarchy based on content and
font size/boldness.
- Use "image" for charts, diagrams, or photos.
- Use "unknown" if the element is ambiguous.
</categories>

<bounding_boxes>
1. Format: [y0, x0, y1, x1] (Top-Left to Bottom-Right). You MUST provide the
coordinates in this exact order.
2. Success conditions:
- The bounding box MUST enclose the entire layout element while minimizing
unnecessary white space.
- If a character belongs to the content ALL of its pixels MUST BE CONTAINED inside
the bounding box.
3. Page Index: The current page is "page_number": {*}.
</bounding_boxes>

<extraction_rules>
- **Text Fidelity:** Extract text EXACTLY as it appears. Do NOT fix spelling or
  grammar. You MAY use any formatting that is available for a standard Markdown
  document.
- **Character Escaping:** You MUST escape any special characters that can break the
  final JSON output. Also you must escape any quotation marks.
- **Reading Order:** Sort elements by natural human reading order.
- **Special Formatting:**
  - image: Content must be an empty string "".
  - formula: Content must be LaTeX.
  - table: Content must be a Markdown table representation. TABLE CONTENT MUST NOT
    BREAK THE JSON FORMAT!
  - list_item, ref_item: Content MUST be a valid Markdown list. You MUST replace
    alternative bullet point symbols with "-". Ordered lists must start with their
    numbering followed by ".".
  - section_header: You MUST NOT use Markdown header formatting. You MUST add a "
    heading_level" field (int). Infer the level by checking the content for any
    numbering and analyzing the font size and styling of the header.
</extraction_rules>

<output_schema>
Do not return any additional text with the result.
Return a SINGLE JSON object with this exact structure:
{
  "layout_elements": [
    {
      "category": "string_(from_list)",
      "heading_level": integer (include only for headers),
      "content": "string",
      "bbox": {
        "page_number": integer,
        "box_2d": bounding_box (list[integer]) (SINGLE bounding box)
      }
    }
  ]
}
YOU MUST ENSURE THAT YOUR OUTPUT IS A VALID JSON OBJECT!
</output_schema>"""

#: Listing A.1 category -> ParsingResultType
LABEL_MAP: dict[str, ParsingResultType] = {
    "section_header": T.SECTION_HEADER,
    "text": T.PARAGRAPH,
    "formula": T.FORMULA,
    "list_item": T.LIST_ITEM,
    "ref_item": T.REFERENCE_ITEM,
    "table": T.TABLE,
    "image": T.FIGURE,
    "caption": T.CAPTION,
    "page_header": T.PAGE_HEADER,
    "page_footer": T.PAGE_FOOTER,
    "watermark": T.WATERMARK,
    "unknown": T.UNKNOWN,
}

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_VALID_ESCAPES = set('"\\/bfnrtu')


def _strip_fences(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1) if match else text


def _repair(text: str) -> str:
    """Fix what LLMs break in JSON: invalid escapes, raw control characters, trailing commas,
    and output cut off mid-way (closed after the last complete value)."""
    out: list[str] = []
    stack: list[str] = []
    in_string = False
    cut: tuple[int, list[str]] | None = None  # (length of out, open containers) after a complete value
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if ch == "\\":
                nxt = text[i + 1] if i + 1 < n else ""
                if nxt in _VALID_ESCAPES and nxt:
                    if nxt == "u" and not re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                        out.append("\\\\")
                        i += 1
                        continue
                    out.append(ch + nxt)
                    i += 2
                    continue
                out.append("\\\\")  # "\alpha" -> "\\alpha"
                i += 1
                continue
            if ch == '"':
                in_string = False
            elif ch == "\n":
                ch = "\\n"
            elif ch == "\t":
                ch = "\\t"
            elif ord(ch) < 0x20:
                ch = " "
            out.append(ch)
            i += 1
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            # drop a trailing comma before the closer
            j = len(out) - 1
            while j >= 0 and out[j].isspace():
                j -= 1
            if j >= 0 and out[j] == ",":
                del out[j]
            if stack:
                stack.pop()
            out.append(ch)
            cut = (len(out), list(stack))
            i += 1
            continue
        out.append(ch)
        i += 1
    if not in_string and not stack:
        return "".join(out)
    # truncated: keep everything up to the last complete container, then close what is open
    if cut is None:
        return "".join(out)
    length, open_stack = cut
    head = "".join(out[:length]).rstrip().rstrip(",")
    return head + "".join(reversed(open_stack))


def parse_model_json(text: str) -> Any:
    """Parse a model's JSON reply: fenced, with prose around it, slightly broken or truncated.

    Raises ValueError when no JSON value can be recovered.
    """
    body = _strip_fences(text or "")
    starts = [p for p in (body.find("{"), body.find("[")) if p >= 0]
    if not starts:
        raise ValueError("no JSON object or array in the model reply")
    body = body[min(starts) :]
    decoder = json.JSONDecoder(strict=False)
    try:
        return decoder.raw_decode(body)[0]
    except json.JSONDecodeError:
        pass
    repaired = _repair(body)
    try:
        return decoder.raw_decode(repaired)[0]
    except json.JSONDecodeError as exc:
        raise ValueError(f"unrecoverable JSON in the model reply ({exc.msg} at char {exc.pos})") from exc


def gemini_elements(data: Any) -> list[dict[str, Any]]:
    """The element list of a parsed reply: ``{"layout_elements": [...]}``, a bare list, or the
    first list of objects found under another key."""
    items: Any = []
    if isinstance(data, list):
        items = data
    elif isinstance(data, dict):
        items = data.get("layout_elements")
        if not isinstance(items, list):
            items = next((v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)), [])
    return [e for e in items if isinstance(e, dict)]


def box_2d_to_box(box_2d: Any, page: int) -> ParsingBoundingBox | None:
    """``[y0, x0, y1, x1]`` in 0-1000 -> page-fraction box (None if malformed)."""
    if not isinstance(box_2d, (list, tuple)) or len(box_2d) != 4:
        return None
    try:
        y0, x0, y1, x1 = (min(1000.0, max(0.0, float(v))) for v in box_2d)
    except (TypeError, ValueError):
        return None
    top, bottom = sorted((y0, y1))
    left, right = sorted((x0, x1))
    if right - left <= 0 or bottom - top <= 0:
        return None
    try:
        return ParsingBoundingBox(page, left / 1000.0, top / 1000.0, right / 1000.0, bottom / 1000.0)
    except InvalidBoxError:
        return None


_BULLET = re.compile(r"^\s*[-*+•]\s+")


def _element_box(element: Mapping[str, Any], page: int) -> ParsingBoundingBox | None:
    bbox = element.get("bbox")
    raw = bbox.get("box_2d") if isinstance(bbox, dict) else bbox
    if raw is None:
        raw = element.get("box_2d")
    return box_2d_to_box(raw, page)


def _heading_level(element: Mapping[str, Any]) -> int | None:
    value = element.get("heading_level", element.get(" heading_level"))
    try:
        level = int(value)
    except (TypeError, ValueError):
        return None
    return level if level >= 1 else None


def pages_to_tree(
    pages: list[Mapping[str, Any]], label_map: Mapping[str, ParsingResultType] = LABEL_MAP
) -> ParsingResult:
    """ROOT tree from per-page replies ``{"page", "width"?, "height"?, "response_text"}``; each
    element's ``category`` is mapped through ``label_map``."""
    factory = NodeFactory()
    root = factory.node(T.ROOT)
    page_sizes: list[dict[str, float]] = []
    unparsed: list[int] = []
    for entry in pages:
        page = int(entry["page"])
        if entry.get("width") and entry.get("height"):
            page_sizes.append({"page": page, "width": float(entry["width"]), "height": float(entry["height"])})
        try:
            elements = gemini_elements(parse_model_json(str(entry.get("response_text") or "")))
        except ValueError as exc:
            log.warning("gemini: page %d: reply not usable (%s); the page yields no elements", page, exc)
            unparsed.append(page)
            continue
        for index, element in enumerate(elements):
            label = str(element.get("category") or element.get("label") or element.get("type") or "")
            type_, meta = map_label(label, label_map)
            ElementTrace(meta).native_id = f"p{page}-{index}"
            # "\frac" / "\beta" decoded as form feed / backspace: never document text, restore LaTeX
            content = str(element.get("content") or "").replace("\x0c", "\\f").replace("\x08", "\\b")
            box = _element_box(element, page)
            if box is None:
                log.warning("gemini: page %d element %d (%s) has no usable box_2d", page, index, label)
            if type_ in (T.LIST_ITEM, T.REFERENCE_ITEM):
                content = _BULLET.sub("", content, count=1)
            if type_ in HEADING_TYPES:
                level = _heading_level(element)
                if level is not None:
                    HeadingInfo(meta).native_level = level
            node = factory.node(type_, content.strip(), [box] if box else [], meta)
            if type_ == T.TABLE:
                add_table_rows(node, parse_markdown_table(content), factory)
            root.add_child(node)
    if page_sizes:
        root.info.pages = page_sizes
    if unparsed:
        root.metadata["unparsed_pages"] = unparsed
    return root


class GeminiParser(BaseParser):
    """Gemini 2.5 Flash as a document parser: one request per page image with the thesis prompt.

    ``client`` may be injected (anything with ``models.generate_content(model=, contents=,
    config=)`` returning an object with ``.text``); otherwise a ``google.genai.Client`` is built
    from ``api_key`` or ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``. Each page request has a
    ``timeout`` (seconds) and is retried with exponential backoff on 429/5xx/timeouts
    (``retry``); pages run ``max_workers`` at a time. ``pages`` limits the parse to those
    1-based pages.
    """

    name: ClassVar[str] = "gemini"
    LABEL_MAP: ClassVar[Mapping[str, ParsingResultType]] = LABEL_MAP
    ENV_VARS: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    options = (
        Option("model", str, "gemini-2.5-flash", "Gemini model", cli=False),
        Option("api_key", str, None, "API key (default: GEMINI_API_KEY or GOOGLE_API_KEY)", secret=True, cli=False),
        Option("client", None, help="a google-genai client"),
        Option("dpi", int, 150, "resolution of the page images", low=36, high=600, cli=False),
        Option("timeout", float, 300.0, "seconds per request", low=0.0, open_low=True, cli=False),
        Option("retry", None, help="RetryPolicy of failed calls"),
        Option("sleep", None, help="the sleep function of the backoff"),
        Option("max_workers", int, 4, "concurrent requests", low=1, cli=False),
        Option("temperature", float, 0.0, "sampling temperature", low=0.0, high=2.0, cli=False),
        Option("pages", None, help="1-based pages to parse (default: all)"),
        Option("prompt", str, GEMINI_PROMPT, "the prompt", cli=False),
        Option("progress", None, help="callback (pages done, pages)"),
    )

    def __init__(
        self,
        *,
        model: str = "gemini-2.5-flash",
        api_key: str | None = None,
        client: Any = None,
        dpi: int = 150,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        max_workers: int = 4,
        temperature: float = 0.0,
        pages: list[int] | None = None,
        prompt: str = GEMINI_PROMPT,
        sleep: Callable[[float], None] = time.sleep,
        progress: Callable[[int, int], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        require("google.genai", extra="gemini", what="Gemini parser", package="google-genai")
        if client is None:
            key = credential_from_env(
                self.name, self.ENV_VARS, "an API key from Google AI Studio", explicit=api_key
            )
            from google import genai
            from google.genai import types

            client = genai.Client(
                api_key=key,
                http_options=types.HttpOptions(
                    timeout=int(timeout * 1000), retry_options=types.HttpRetryOptions(attempts=1)
                ),
            )
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self.client = client
        self.model = model
        self.dpi = dpi
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.max_workers = max_workers
        self.temperature = temperature
        self.pages = list(pages) if pages else None
        self.prompt = prompt
        self._sleep = sleep
        self.progress = progress

    def prompt_for(self, page: int) -> str:
        return self.prompt.replace("{*}", str(page))

    def _request(self, png: bytes, page: int) -> dict[str, Any]:
        from google.genai import types

        response = self.client.models.generate_content(
            model=self.model,
            contents=[types.Part.from_bytes(data=png, mime_type="image/png"), self.prompt_for(page)],
            config=types.GenerateContentConfig(temperature=self.temperature, response_mime_type="application/json"),
        )
        out: dict[str, Any] = {"response_text": getattr(response, "text", None) or ""}
        candidates = getattr(response, "candidates", None) or []
        reason = getattr(candidates[0], "finish_reason", None) if candidates else None
        if reason is not None:
            out["finish_reason"] = str(getattr(reason, "name", reason))
        return out

    def _call_page(self, pdf_path: Path, png: bytes, page: int) -> dict[str, Any]:
        return call_with_retries(
            lambda: self._request(png, page),
            backend=self.name,
            source=f"{pdf_path} page {page}",
            policy=self.retry,
            sleep=self._sleep,
            what="generate_content",
        )

    def _parse(self, pdf_path: Path) -> dict[str, Any]:
        import pymupdf

        results: dict[int, dict[str, Any]] = {}
        with pymupdf.open(pdf_path) as doc:
            numbers = self.pages or list(range(1, doc.page_count + 1))
            bad = [p for p in numbers if not 1 <= p <= doc.page_count]
            if bad:
                raise ParserError(pdf_path, f"pages {bad} do not exist (the document has {doc.page_count})")
            sizes = {p: (doc[p - 1].rect.width, doc[p - 1].rect.height) for p in numbers}
            with ThreadPoolExecutor(self.max_workers) as pool, Progress(
                self.progress, len(numbers), "gemini", "page"
            ) as bar:
                pending: dict[int, Future[dict[str, Any]]] = {}
                try:
                    for p in numbers:
                        # render in this thread (PyMuPDF is not thread-safe); keep few images in flight
                        png = doc[p - 1].get_pixmap(dpi=self.dpi).tobytes("png")
                        pending[p] = pool.submit(self._call_page, pdf_path, png, p)
                        while len(pending) >= 2 * self.max_workers:
                            first = min(pending)
                            results[first] = pending.pop(first).result()
                            bar.update(1)
                    for p in sorted(pending):
                        results[p] = pending.pop(p).result()
                        bar.update(1)
                except BaseException:
                    for future in pending.values():  # a failed page ends the parse: send no more requests
                        future.cancel()
                    raise
        pages = []
        for p in numbers:
            reply = results[p]
            if reply.get("finish_reason") not in (None, "STOP"):
                log.warning("gemini: page %d finished with %s; its reply may be cut off", p, reply["finish_reason"])
            pages.append({"page": p, "width": sizes[p][0], "height": sizes[p][1], **reply})
        return {"model": self.model, "pages": pages}

    def _transform(self, native: Mapping[str, Any]) -> ParsingResult:
        root = pages_to_tree(list(native["pages"]), self.label_map)
        root.metadata["model"] = native.get("model", self.model)
        return root

    def version(self) -> str:
        try:
            sdk = importlib.metadata.version("google-genai")
        except importlib.metadata.PackageNotFoundError:
            sdk = "unknown"
        return f"{self.model} (google-genai {sdk})"
