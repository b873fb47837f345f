"""Document-level metadata of a node graph (seed 002 §"metadata extraction").

Two sources, both kept on the Document node:

* the PDF's own document information (title, author, subject, keywords, creator, producer, creation
  and modification dates; :func:`grounded.metadata.pdf_metadata`), put there by
  :func:`grounded.graph.build_graph` under ``info.pdf`` (only the fields the file has);
* a *metadata extractor* (seed 002's "Metadata Extractor Agent ... extracting fields such as topic,
  keywords and summary"): :func:`extract_metadata` asks the injected model once about the document's
  consolidated text (the Document node's text: every page's text) and sets ``topic``, ``keywords``
  (a list of strings) and - when the Document has none yet - ``summary`` (``summary_by`` =
  ``"metadata_extractor"``, so :func:`grounded.graph.enrich` does not write it again, as the seed's
  Summary Generator skips a Document summary "previously extracted during preprocessing").

Bad output never passes silently: an answer without the JSON object is asked for once more (naming
the error, :mod:`.answers`), then the Document node is flagged (or, with ``on_error="raise"``, the
typed error is raised); a field of the wrong type flags it and is left out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ModelError, ModelOutputError
from ..llm import GRAPH_SETTINGS, GenerationSettings, as_model
from ..llm.settings import effective_settings
from .answers import ask_json, read_json
from .nodes import NodeGraph

__all__ = ["extract_metadata", "DocumentMetadata", "METADATA_PROMPT"]

log = logging.getLogger(__name__)

METADATA_PROMPT = (
    "You extract metadata of the document {title!r} for a search index. Read its text below and answer with "
    "JSON only, in this form:\n"
    '{{"topic": "...", "keywords": ["...", "..."], "summary": "..."}}\n'
    "topic: a short phrase naming what the document is about; keywords: up to {keywords} keywords or key "
    "phrases that occur in the text; summary: three to five sentences. Use only what the text says.\n\n"
    "TEXT:\n{text}"
)


@dataclass
class DocumentMetadata:
    """What :func:`extract_metadata` set: ``topic``, ``keywords``, ``summary`` ("" / [] when not
    set), model ``calls`` and the ``flags`` it added to the Document node."""

    topic: str = ""
    keywords: list[str] = field(default_factory=list)
    summary: str = ""
    calls: int = 0
    flags: list[str] = field(default_factory=list)


def _read(answer: str, what: str) -> dict[str, Any]:
    data = read_json(answer, what)
    if not isinstance(data, dict):
        raise ModelOutputError(what, f"the JSON is a {type(data).__name__}, not an object with topic/keywords/summary")
    if not any(k in data for k in ("topic", "keywords", "summary")):
        raise ModelOutputError(what, f"the JSON object has none of topic, keywords, summary (keys: {sorted(data)[:8]})")
    return data


def extract_metadata(
    graph: NodeGraph,
    llm: Any,
    *,
    keywords: int = 8,
    max_chars: int = 12000,
    on_error: Literal["flag", "raise"] = "flag",
    generation: GenerationSettings | Mapping[str, Any] | None = None,
    **client_options: Any,
) -> DocumentMetadata:
    """Set ``topic``, ``keywords`` and (when missing) ``summary`` on the Document node of ``graph``
    from one model request over its first ``max_chars`` characters (see the module doc).
    ``generation`` defaults to :data:`~grounded.llm.GRAPH_SETTINGS`; ``client_options`` go to
    :func:`~grounded.llm.as_model` (retry, sleep, model)."""
    if keywords < 1 or max_chars < 1:
        raise ValueError("keywords and max_chars must be >= 1")
    doc = graph.document
    model = as_model(llm, settings=effective_settings(GRAPH_SETTINGS, llm, generation), **client_options)
    title = str(doc.info.title or "") or "untitled"
    prompt = METADATA_PROMPT.format(title=title, keywords=keywords, text=doc.text[:max_chars])
    report = DocumentMetadata()
    what = f"metadata of the document {title!r}"

    def count() -> None:
        report.calls += 1

    expected = 'one JSON object {"topic": "...", "keywords": ["..."], "summary": "..."}'
    try:
        data = ask_json(model, prompt, what, expected, _read, on_call=count)
    except ModelError as exc:
        if on_error == "raise":
            raise
        log.warning("%s", exc)
        _flag(doc.flags, report, f"metadata extractor: {exc}")
        return report
    topic, kws, summary = data.get("topic"), data.get("keywords"), data.get("summary")
    if isinstance(topic, str) and topic.strip():
        report.topic = doc.info.topic = topic.strip()
    else:
        _flag(doc.flags, report, "metadata extractor: empty or missing topic")
    if isinstance(kws, list) and kws and all(isinstance(k, str) for k in kws):
        cleaned = list(dict.fromkeys(k.strip() for k in kws if k.strip()))[:keywords]
        report.keywords = doc.info.keywords = cleaned
    else:
        _flag(doc.flags, report, "metadata extractor: 'keywords' is not a non-empty list of strings")
    if isinstance(summary, str) and summary.strip():
        report.summary = summary.strip()
        if not doc.summary:
            doc.info.summary = report.summary
            doc.info.summary_by = "metadata_extractor"
    return report


def _flag(flags: list[str], report: DocumentMetadata, reason: str) -> None:
    if reason not in flags:
        flags.append(reason)
    report.flags.append(reason)
