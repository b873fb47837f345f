"""Shared by tests: helpers formerly at the top of test_backend_documentai.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

from google.cloud import documentai

from grounded.model import ParsingResultType
from grounded.runtime.cloud import RetryPolicy
from tests.support.cloud_fixtures import (
    RefElement,
)
from tests.support.data import shared

T = ParsingResultType
NO_WAIT = RetryPolicy(max_attempts=3, initial_delay=0.0, jitter=0.0)
IDS = {"project_id": "demo-project", "location": "eu", "processor_id": "layout123"}


def layout_json() -> dict:
    return json.loads(shared("native", "google_documentai", "layout_parser", "layout_parser.json").read_text(encoding="utf-8"))


def invoice_json() -> dict:
    path = shared("native", "google_documentai", "ocr_invoice_with_pdf", "toolbox_invoice_test-0.json")
    return json.loads(path.read_text(encoding="utf-8"))


def count_blocks(blocks: list[dict]) -> int:
    return sum(1 + count_blocks(b.get("textBlock", {}).get("blocks", [])) for b in blocks)


# -- re-encoding a real parse as a Layout Parser document with boxes ---------------------------
def _poly(ref: RefElement) -> dict:
    left, top, right, bottom = ref.fractions()
    return {"normalizedVertices": [{"x": left, "y": top}, {"x": right, "y": top}, {"x": right, "y": bottom}, {"x": left, "y": bottom}]}


def layout_block(ref: RefElement, block_id: str, page: int) -> dict:
    block: dict = {"blockId": block_id, "pageSpan": {"pageStart": page, "pageEnd": page}, "boundingBox": _poly(ref)}
    if ref.type == T.TABLE:
        def row(cells: list[str], r: int) -> dict:
            return {"cells": [{"blocks": [{"blockId": f"{block_id}.{r}.{c}", "textBlock": {"text": text, "type": "paragraph"},
                                           "pageSpan": block["pageSpan"]}], "rowSpan": 1, "colSpan": 1}
                              for c, text in enumerate(cells)]}

        block["tableBlock"] = {"headerRows": [row(ref.rows[0], 0)], "bodyRows": [row(r, i + 1) for i, r in enumerate(ref.rows[1:])]}
    elif ref.type == T.FIGURE:
        block["imageBlock"] = {"imageText": "", "mimeType": "image/png"}
    else:
        kind = f"heading-{ref.level}" if ref.type == T.SECTION_HEADER else "paragraph"
        block["textBlock"] = {"text": ref.text, "type": kind, "blocks": []}
    return block


def layout_document(refs: list[RefElement], page_of=lambda r: r.page) -> dict:
    """Layout Parser JSON: a heading block holds the blocks that follow it (as the service nests them)."""
    top: list[dict] = []
    current: dict | None = None
    for i, ref in enumerate(refs):
        block = layout_block(ref, str(i + 1), page_of(ref))
        if ref.type == T.SECTION_HEADER:
            current = block
            top.append(block)
        elif current is not None:
            current["textBlock"]["blocks"].append(block)
            current["pageSpan"]["pageEnd"] = max(current["pageSpan"]["pageEnd"], page_of(ref))
        else:
            top.append(block)
    return {"documentLayout": {"blocks": top}}


def as_sdk_document(data: dict) -> documentai.Document:
    """Parse with the SDK's own message type: fails on anything not in the Document schema."""
    return documentai.Document.from_json(json.dumps(data), ignore_unknown_fields=False)


class FakeDocumentAI:
    """Stands in for ``DocumentProcessorServiceClient``: ``process_document`` answers from ``answer(request)``."""

    def __init__(self, answer, failures: list[Exception] | None = None) -> None:
        self.answer = answer
        self.failures = list(failures or [])
        self.requests: list = []
        self.timeouts: list = []

    def process_document(self, request, retry="client default", timeout=None):
        self.requests.append(request)
        self.timeouts.append(timeout)
        self.retries = getattr(self, "retries", []) + [retry]
        if self.failures:
            raise self.failures.pop(0)
        return SimpleNamespace(document=self.answer(request))


