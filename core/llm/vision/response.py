"""A model's answer -> :class:`ModelChunk` s (seed 001 output format, or JSON).

The format asked for is ``[CONTINUES]True|False|Partial[/CONTINUES]`` then
``[HEAD]main > section > chunk[/HEAD]`` then the chunk content, repeated. Reading is tolerant but
never silent: a chunk with a missing or unknown flag, a missing or unclosed heading, or text outside
the format is kept and carries an ``issue``; an answer with no chunk in it (empty, prose only, or
broken JSON) raises :class:`~grounded.errors.ModelOutputError` naming the request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from grounded.errors import ModelOutputError

__all__ = ["Continues", "ModelChunk", "parse_response", "complete_headings", "LEVELS"]

Continues = Literal["True", "False", "Partial"]
LEVELS = 3

_FENCE = re.compile(r"^\s*```[A-Za-z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_MARK = re.compile(r"\[/?(CONTINUES|HEAD)\]", re.IGNORECASE)
_FLAGS: dict[str, Continues] = {"true": "True", "false": "False", "partial": "Partial"}
_OPEN = re.compile(r"\[(CONTINUES|HEAD)\]", re.IGNORECASE)
_FLAG_CLOSED = re.compile(r"([^\[\n]{0,30}?)\[/CONTINUES\]", re.IGNORECASE)
_HEAD_CLOSED = re.compile(r"(.{0,600}?)\[/HEAD\]", re.IGNORECASE | re.DOTALL)
_STRAY = re.compile(r"\[/(CONTINUES|HEAD)\]", re.IGNORECASE)


@dataclass(frozen=True)
class ModelChunk:
    """One chunk as the model wrote it. ``headings``: up to 3 levels (outermost first; completed from
    the previous chunk by :func:`complete_headings`); ``issues``: what was wrong with its markup;
    ``batch``/``pages``: the batch (0-based) and the pages shown to the model."""

    content: str
    headings: tuple[str, ...] = ()
    continues: Continues = "False"
    issues: tuple[str, ...] = ()
    batch: int = 0
    pages: tuple[int, ...] = ()
    parts: int = 1  # model chunks merged into this one (continuations across batches)

    def to_markup(self) -> str:
        """The chunk in the seed's output format (the context handed to the next batch)."""
        return f"[CONTINUES]{self.continues}[/CONTINUES]\n[HEAD]{' > '.join(self.headings)}[/HEAD]{self.content}"

    def with_issue(self, issue: str) -> ModelChunk:
        return replace(self, issues=(*self.issues, issue))


def _split_headings(raw: str) -> tuple[str, ...]:
    parts = [" ".join(p.strip().strip("#*_ ").split()) for p in raw.split(">")]
    return tuple(p for p in parts if p)


def complete_headings(headings: tuple[str, ...], previous: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """Exactly 3 levels: missing outer levels are inherited from ``previous`` (the seed: "if a heading
    is missing, inherit from the parent heading level"), levels beyond the third are joined into it.
    Returns the headings and an issue when they had to be repaired."""
    if len(headings) == LEVELS:
        return headings, None
    if len(headings) > LEVELS:
        return (*headings[: LEVELS - 1], " > ".join(headings[LEVELS - 1 :])), f"{len(headings)} heading levels, joined into 3"
    missing = LEVELS - len(headings)
    inherited = tuple(previous[:missing])
    filled = inherited + headings
    issue = f"{len(headings)} heading level(s) given" + (f", {len(inherited)} inherited" if inherited else "")
    return filled, issue


def _flag(raw: str) -> tuple[Continues, str | None]:
    value = raw.strip().strip("*").strip().lower()
    if value in _FLAGS:
        return _FLAGS[value], None
    return "Partial", f"unknown CONTINUES flag {raw.strip()[:20]!r} read as Partial"


def _from_json(text: str, what: str) -> list[ModelChunk]:
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelOutputError(what, f"malformed JSON answer ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if isinstance(data, dict):
        data = data.get("chunks", data.get("items"))
    if not isinstance(data, list):
        raise ModelOutputError(what, "JSON answer is not a list of chunks (nor an object with 'chunks')")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ModelOutputError(what, f"JSON chunk {i} is a {type(item).__name__}, not an object")
        content = item.get("content", item.get("chunk_content", item.get("text")))
        if not isinstance(content, str):
            raise ModelOutputError(what, f"JSON chunk {i} has no 'content' text")
        if not content.strip():  # the prompt asks to leave out empty chunks: nothing to keep
            continue
        issues: list[str] = []
        raw_head = item.get("heading", item.get("headings", item.get("head", "")))
        headings = tuple(str(h) for h in raw_head) if isinstance(raw_head, list) else _split_headings(str(raw_head or ""))
        raw_flag = item.get("continues")
        if raw_flag is None:
            flag: Continues = "Partial"
            issues.append("missing CONTINUES flag, read as Partial")
        else:
            flag, issue = _flag(str(raw_flag))
            if issue:
                issues.append(issue)
        out.append(ModelChunk(content.strip(), headings, flag, tuple(issues)))
    return out


@dataclass
class _Open:
    """The chunk being read: its flag and headings (None while not seen) and where its content starts."""

    flag: Continues | None = None
    headings: tuple[str, ...] | None = None
    issues: list[str] = field(default_factory=list)
    content_start: int = 0


def _from_markup(text: str, what: str) -> list[ModelChunk]:
    opens = list(_OPEN.finditer(text))
    if not opens:
        raise ModelOutputError(what, "no chunk in the answer: expected [CONTINUES]…[/CONTINUES][HEAD]…[/HEAD] blocks (or JSON)")
    chunks: list[ModelChunk] = []
    lead = text[: opens[0].start()].strip()
    if lead:
        chunks.append(ModelChunk(lead, (), "Partial", ("text outside the chunk format",)))

    def finish(cur: _Open | None, stop: int) -> None:
        if cur is None:
            return
        content = text[cur.content_start : stop]
        if _STRAY.search(content):
            cur.issues.append("stray closing tag")
            content = _STRAY.sub("", content)
        if cur.flag is None:
            cur.issues.append("missing CONTINUES flag, read as Partial")
        if cur.headings is None:
            cur.issues.append("missing [HEAD]")
        if content.strip():
            chunks.append(ModelChunk(content.strip(), cur.headings or (), cur.flag or "Partial", tuple(cur.issues)))

    cur: _Open | None = None
    for m in opens:
        if cur is not None and m.start() < cur.content_start:
            continue  # inside the previous tag (e.g. "[HEAD]" quoted in a heading)
        if m.group(1).upper() == "CONTINUES":
            finish(cur, m.start())
            cur = _Open()
            closed = _FLAG_CLOSED.match(text, m.end())
            if closed:
                cur.flag, issue = _flag(closed.group(1))
                cur.content_start = closed.end()
            else:
                word = re.compile(r"\s*(\w*)").match(text, m.end())
                assert word is not None
                cur.flag, issue = _flag(word.group(1))
                cur.issues.append("unclosed [CONTINUES]")
                cur.content_start = word.end()
            if issue:
                cur.issues.append(issue)
            continue
        if cur is None or cur.headings is not None or text[cur.content_start : m.start()].strip():
            finish(cur, m.start())  # a heading without its own flag starts a new chunk
            cur = _Open()
        closed = _HEAD_CLOSED.match(text, m.end())
        if closed:
            cur.headings = _split_headings(closed.group(1))
            cur.content_start = closed.end()
        else:
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end
            cur.headings = _split_headings(text[m.end() : line_end])
            cur.issues.append("unclosed [HEAD]")
            cur.content_start = line_end
    finish(cur, len(text))
    return chunks


def parse_response(text: str, what: str) -> list[ModelChunk]:
    """Chunks of one answer, in order; ``what`` names the request in errors (file and pages)."""
    if not isinstance(text, str) or not text.strip():
        raise ModelOutputError(what, "the model returned an empty answer")
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    stripped = body.strip()
    if stripped[:1] in "[{" and not _MARK.search(stripped[:40]):
        chunks = _from_json(stripped, what)
    else:
        chunks = _from_markup(body, what)
    if not chunks:
        raise ModelOutputError(what, "the answer holds no chunk with content")
    return chunks
