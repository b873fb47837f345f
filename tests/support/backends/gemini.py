"""Shared by tests: helpers formerly at the top of test_backend_gemini.py."""

from __future__ import annotations

import json
import re
import threading
from types import SimpleNamespace

from google.genai import errors as genai_errors

from grounded.model import ParsingResultType
from grounded.runtime.cloud import RetryPolicy
from tests.support.cloud_fixtures import (
    RefElement,
)

T = ParsingResultType


CATEGORY = {T.PARAGRAPH: "text", T.SECTION_HEADER: "section_header", T.TABLE: "table", T.FIGURE: "image"}


NO_WAIT = RetryPolicy(max_attempts=3, initial_delay=0.0, jitter=0.0)


# -- fixtures: a real parse re-encoded as Gemini replies --------------------------------------------
def markdown_table(rows: list[list[str]]) -> str:
    def fmt(row: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"

    return "\n".join([fmt(rows[0]), "|" + "---|" * len(rows[0]), *(fmt(r) for r in rows[1:])])


def gemini_element(ref: RefElement) -> dict:
    left, top, right, bottom = ref.fractions()
    element = {
        "category": CATEGORY[ref.type],
        "content": markdown_table(ref.rows) if ref.type == T.TABLE else ref.text,
        "bbox": {"page_number": ref.page, "box_2d": [round(top * 1000), round(left * 1000),
                                                    round(bottom * 1000), round(right * 1000)]},
    }
    if ref.type == T.SECTION_HEADER:
        element["heading_level"] = ref.level
    return element


def gemini_reply(refs: list[RefElement], broken: bool = False) -> str:
    """Listing A.1 output schema, fenced like the model answers; ``broken`` adds a trailing comma
    and a reply cut off inside a last element (as with MAX_TOKENS)."""
    text = json.dumps({"layout_elements": [gemini_element(r) for r in refs]}, ensure_ascii=False, indent=2)
    if broken:
        head, _, _ = text.rpartition("]")
        head = re.sub(r"\}\s*$", "},", head.rstrip())  # trailing comma after the last element
        text = head + '\n    {"category": "text", "content": "This sentence was cut off in the mid'
    return "```json\n" + text + ("\n```" if not broken else "")


class FakeModels:
    """``client.models`` of google-genai: answers ``generate_content`` from recorded replies."""

    def __init__(self, replies: dict[int, str], failures: list[Exception] | None = None) -> None:
        self.replies = replies
        self.failures = list(failures or [])
        self.calls: list[dict] = []
        self._lock = threading.Lock()

    def generate_content(self, *, model, contents, config):
        prompt = contents[1]
        page = int(re.search(r'"page_number": (\d+)', prompt).group(1))
        with self._lock:
            self.calls.append({"model": model, "contents": contents, "config": config, "page": page})
            if self.failures:
                raise self.failures.pop(0)
        reason = SimpleNamespace(name="STOP")
        return SimpleNamespace(text=self.replies[page], candidates=[SimpleNamespace(finish_reason=reason)])


class FakeClient:
    def __init__(self, replies: dict[int, str], failures: list[Exception] | None = None) -> None:
        self.models = FakeModels(replies, failures)


# -- retries -----------------------------------------------------------------------------------
def _rate_limited() -> Exception:
    return genai_errors.ClientError(429, {"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}})


def httpx_timeout() -> Exception:
    import httpx

    return httpx.ReadTimeout("timed out", request=httpx.Request("POST", "https://example.invalid"))


