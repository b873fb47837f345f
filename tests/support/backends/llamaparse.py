"""Shared by tests: helpers formerly at the top of test_backend_llamaparse.py."""

from __future__ import annotations

import copy
import json

import httpx

from grounded.model import ParsingResultType
from grounded.runtime.cloud import RetryPolicy
from tests.support.cloud_fixtures import (
    RefElement,
)
from tests.support.data import shared

T = ParsingResultType


NO_WAIT = RetryPolicy(max_attempts=3, initial_delay=0.0, jitter=0.0)


def excerpt() -> dict:
    return json.loads(shared("native", "llamaparse", "demo_json_tour_excerpt.json").read_text(encoding="utf-8"))


def excerpt_result(width: float | None = None, height: float | None = None) -> dict:
    """The recorded items in a result of the documented shape (page sizes are not in the excerpt)."""
    data = excerpt()
    pages = [{"page": 1, "items": data["pages[0].items"]}, {"page": 35, "items": [data["pages[34].items[2]"]]}]
    for p in pages:
        if width:
            p["width"], p["height"] = width, height
    return {"pages": pages, "job_id": "32778fb0-9e83-4b00-aebe-0d7f59ff0b5f"}


# -- re-encoding a real parse ------------------------------------------------------------------
def llamaparse_item(ref: RefElement) -> dict:
    x0, y0, x1, y1 = ref.bbox
    box = {"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0}
    if ref.type == T.TABLE:
        md = "\n".join(["| " + " | ".join(ref.rows[0]) + " |", "|" + "---|" * len(ref.rows[0]),
                        *("| " + " | ".join(r) + " |" for r in ref.rows[1:])])
        return {"type": "table", "rows": ref.rows, "md": md, "isPerfectTable": True, "bBox": box}
    if ref.type == T.FIGURE:
        return {"type": "image", "value": "", "md": "", "bBox": box}
    if ref.type == T.SECTION_HEADER:
        return {"type": "heading", "lvl": ref.level, "value": ref.text, "md": "#" * ref.level + " " + ref.text, "bBox": box}
    return {"type": "text", "value": ref.text, "md": ref.text, "bBox": box}


def llamaparse_result(refs: list[RefElement], extras: bool = False) -> dict:
    pages = []
    for number in sorted({r.page for r in refs}):
        on_page = [r for r in refs if r.page == number]
        w, h = on_page[0].page_size
        items = [llamaparse_item(r) for r in on_page]
        if extras and number == 2:  # what the service returns when it cannot localise an item
            items.append({"type": "text", "value": "unlocalised note", "md": "unlocalised note",
                          "bBox": {"x": None, "y": 88, "w": None, "h": 693}})
            items.append({"type": "text", "value": "whole page", "md": "whole page", "bBox": {"x": 0, "y": 0, "w": w, "h": h}})
        pages.append({"page": number, "width": w, "height": h, "items": items,
                      "md": "\n\n".join(i["md"] for i in items), "text": ""})
    return {"pages": pages, "job_id": "local-fixture", "job_metadata": {}, "file_path": "clinsci.pdf"}


class FakeLlamaParse:
    """Stands in for ``llama_cloud_services.LlamaParse``: ``get_json_result`` returns a fixture."""

    def __init__(self, result: dict, failures: list[Exception] | None = None) -> None:
        self.result = result
        self.failures = list(failures or [])
        self.calls: list[str] = []

    def get_json_result(self, file_path: str) -> list[dict]:
        self.calls.append(file_path)
        if self.failures:
            raise self.failures.pop(0)
        return [copy.deepcopy(self.result)]


def _http_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.cloud.llamaindex.ai/api/parsing/upload")
    return httpx.HTTPStatusError(f"status {status}", request=request, response=httpx.Response(status, request=request))


