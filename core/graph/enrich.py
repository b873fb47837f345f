"""Summaries and generated questions for a node graph, from an injected LLM (seed 002).

Three batched stages: Header and Table nodes (summary + questions -> QA nodes), Page nodes
(summary), the Document node (summary written from the page summaries). Items of a batch are
named ``n1``, ``n2``, ... in the prompt and the model answers with JSON
``{"items": [{"key": "n1", "summary": "...", "questions": ["..."]}]}``.

Bad output never loses a node: an answer without readable JSON is asked for once more - the prompt
naming the error and what was received, the temperature nudged (:mod:`.answers`) - then every node
of the batch is flagged; an item left out, an empty summary or questions that are not a list of strings
flag that node; a call that fails after :class:`~grounded.llm.Model`'s retries (429,
timeout) flags the batch - or, with ``on_error="raise"``, raises the typed error.

The Document stage is skipped when the Document node already has a summary from the metadata
extractor (:func:`grounded.graph.doc_metadata.extract_metadata`, as seed 002: "if not previously
extracted during preprocessing"). Generation settings (``generation=``) default to
:data:`grounded.llm.GRAPH_SETTINGS` (temperature 0.1).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ModelError, ModelOutputError
from ..llm import GRAPH_SETTINGS, GenerationSettings, Model, as_model
from ..llm.settings import effective_settings
from .answers import ask_json, read_json
from .nodes import GraphNode, NodeGraph, NodeKind, TextPiece, node_id

__all__ = ["enrich", "Enrichment", "ENRICH_PROMPT", "parse_items"]

log = logging.getLogger(__name__)

ENRICH_PROMPT = (
    "You write retrieval metadata for parts of the document {title!r}. For every item below write a summary of "
    "one to three sentences{ask}. Use only what the item says. Answer with JSON only, in this form:\n"
    '{{"items": [{{"key": "n1", "summary": "..."{example}}}]}}\n'
    "Answer for every key.\n\n{items}"
)
_QUESTIONS = ", and {n} questions that the item answers"


@dataclass
class Enrichment:
    """What :func:`enrich` did: model ``calls``, nodes ``summarized``, ``questions`` added and the
    ids of ``flagged`` nodes (their ``flags`` say why)."""

    calls: int = 0
    summarized: int = 0
    questions: int = 0
    flagged: list[str] = field(default_factory=list)


def enrich(
    graph: NodeGraph,
    llm: Any,
    *,
    questions: int = 3,
    batch_size: int = 8,
    max_chars: int = 2000,
    on_error: Literal["flag", "raise"] = "flag",
    generation: GenerationSettings | Mapping[str, Any] | None = None,
    **client_options: Any,
) -> Enrichment:
    """Add ``info.summary`` to Header, Table, Page and Document nodes and ``questions`` QA
    nodes under every Header and Table node. ``max_chars`` caps each item's text in the prompt;
    ``generation``: temperature / output tokens / seed over :data:`~grounded.llm.GRAPH_SETTINGS`."""
    if batch_size < 1 or questions < 0 or max_chars < 1:
        raise ValueError("batch_size and max_chars must be >= 1, questions >= 0")
    settings = effective_settings(GRAPH_SETTINGS, llm, generation)
    run = _Run(graph, as_model(llm, settings=settings, **client_options), max_chars, on_error)
    run.stage([n for n in graph if n.kind in (NodeKind.HEADER, NodeKind.TABLE)], questions, batch_size)
    run.stage(graph.of_kind(NodeKind.PAGE), 0, batch_size)
    if graph.document.info.summary_by != "metadata_extractor":
        run.stage([graph.document], 0, 1)
    return run.report


def parse_items(answer: str, what: str) -> dict[str, dict[str, Any]]:
    """``{key: item}`` from the model's JSON answer (code fences and prose around it allowed; no
    readable JSON: :class:`~grounded.errors.ModelOutputError` saying what was received)."""
    data = read_json(answer, what)
    items = data.get("items") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ModelOutputError(what, "the JSON has no 'items' list")
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"].strip()] = item
    return out


class _Run:
    def __init__(self, graph: NodeGraph, client: Model, max_chars: int, on_error: str) -> None:
        self.graph = graph
        self.client = client
        self.max_chars = max_chars
        self.on_error = on_error
        self.report = Enrichment()
        self.title = str(graph.document.info.title or "") or "untitled"

    def stage(self, nodes: Sequence[GraphNode], questions: int, batch_size: int) -> None:
        for i in range(0, len(nodes), batch_size):
            self.batch(list(nodes[i : i + batch_size]), questions)

    def batch(self, nodes: list[GraphNode], questions: int) -> None:
        keys = {f"n{i + 1}": node for i, node in enumerate(nodes)}
        prompt = ENRICH_PROMPT.format(
            title=self.title,
            ask=_QUESTIONS.format(n=questions) if questions else "",
            example=', "questions": ["..."]' if questions else "",
            items="\n\n".join(f"[{k}] {n.kind.value.upper()}\n{self._content(n)}" for k, n in keys.items()),
        )
        what = f"summaries of {len(nodes)} {'/'.join(sorted({n.kind.value for n in nodes}))} node(s)"
        try:
            items = self._ask(prompt, what, len(keys))
        except ModelError as exc:
            if self.on_error == "raise":
                raise
            log.warning("%s", exc)
            for node in nodes:
                self._flag(node, f"enrichment: {exc}")
            return
        for key, node in keys.items():
            item = items.get(key)
            if item is None:
                self._flag(node, "enrichment: the model's answer left this node out")
                continue
            self._apply(node, item, questions)

    def _ask(self, prompt: str, what: str, keys: int) -> dict[str, dict[str, Any]]:
        """Items of the answer; an answer without them is asked for once more, naming the error."""
        expected = (f'JSON only, in the form {{"items": [{{"key": "n1", "summary": "..."}}]}}, with one item for each '
                    f"key n1 to n{keys}")

        def count() -> None:
            self.report.calls += 1

        return ask_json(self.client, prompt, what, expected, parse_items, on_call=count)

    def _apply(self, node: GraphNode, item: dict[str, Any], questions: int) -> None:
        summary = item.get("summary")
        if isinstance(summary, str) and summary.strip():
            node.info.summary = summary.strip()
            self.report.summarized += 1
        else:
            self._flag(node, "enrichment: empty or missing summary")
        if not questions:
            return
        asked = item.get("questions")
        if not isinstance(asked, list) or not all(isinstance(q, str) for q in asked):
            self._flag(node, "enrichment: 'questions' is not a list of strings")
            asked = [q for q in asked if isinstance(q, str)] if isinstance(asked, list) else []
        self._set_questions(node, [q.strip() for q in asked if q.strip()][:questions])

    def _set_questions(self, target: GraphNode, questions: Iterable[str]) -> None:
        for old in [c for c in self.graph.children(target) if c.kind == NodeKind.QA]:
            self.graph.remove(old)
        added = []
        for i, question in enumerate(questions):
            qa = GraphNode(
                id=node_id(self.graph.source, NodeKind.QA, f"{target.id}\0{i}\0{question}"), kind=NodeKind.QA,
                text=question, boxes=list(target.boxes), generated=True, metadata={"target_id": target.id},
                pieces=[TextPiece(question, list(target.boxes), generated=True)],
            )
            added.append(self.graph.add(qa, target))
        self.graph.chain(added)
        self.report.questions += len(added)

    def _content(self, node: GraphNode) -> str:
        if node.kind == NodeKind.DOCUMENT:
            pages = [p.summary for p in self.graph.of_kind(NodeKind.PAGE) if p.summary]
            text = "\n".join(pages) if pages else node.text
        elif node.kind == NodeKind.HEADER:
            parts = [node.text] + [d.text for d in self.graph.descendants(node) if d.kind != NodeKind.QA]
            text = "\n".join(parts)
        else:
            text = node.text
        return text[: self.max_chars]

    def _flag(self, node: GraphNode, reason: str) -> None:
        node.flag(reason)
        if node.id not in self.report.flagged:
            self.report.flagged.append(node.id)
