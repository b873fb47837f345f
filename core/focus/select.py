"""Which units of a chunk answer a query: scored by lexical evidence and MiniLM similarity, and
chosen by the scores themselves (the best unit, then every unit within :attr:`FocusSettings.gap` of
it), never a fixed count.

* score = ``w_lexical`` x :func:`~.lexical.lexical_scores` + ``w_semantic`` x cosine(query, unit)
  (the cosine of all-MiniLM-L6-v2 vectors; without an embedder the lexical score alone, method
  ``lexical``);
* heading units and table headers are never chosen on their own; a chosen table row brings its
  table's header row (the row says nothing without its column names);
* a chunk with one unit is its own focus (method ``single``);
* an empty or whitespace query, or no evidence at all (no query word in any unit and no
  embedder), gives no focus (method ``none``), never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..runtime.bounded import BoundedCache
from .lexical import abbreviations, lexical_scores, query_terms
from .units import Unit, units

__all__ = ["FocusSettings", "Choice", "choose_many", "Embedder", "Chooser", "unit_spans", "with_headers"]

#: texts -> unit-length vectors (one row per text): MiniLM's query path
Embedder = Callable[[Sequence[str]], np.ndarray]
#: ``(text, body_start, query) -> Choice``: another way to choose (a model: :func:`grounded.llm.focus.model_chooser`)
Chooser = Callable[[str, int, str], "Choice"]
_VECTORS: BoundedCache[tuple[Embedder, np.ndarray]] = BoundedCache(4096)


@dataclass(frozen=True)
class FocusSettings:
    """The weights and limits of the choice (defaults measured on the question set:
    ``benchmarks/focus.py``)."""

    w_lexical: float = 0.5
    w_semantic: float = 1.0
    #: units scoring within ``gap`` of the best are chosen too
    gap: float = 0.1
    #: added to the lexical score of a unit holding the kind of answer asked (a number, a cause, a time)
    cue_bonus: float = 0.1
    #: at most this many units (the best ones) in one focus
    max_units: int = 4
    #: the least lexical score a unit needs when there is no embedder
    min_lexical: float = 0.0


@dataclass(frozen=True)
class Choice:
    """The focus of one chunk text: ``spans`` (``(start, end)`` offsets into the text, reading
    order) and how they were chosen (``semantic``, ``lexical``, ``single`` or ``none``)."""

    spans: tuple[tuple[int, int], ...]
    method: str


_NONE = Choice((), "none")


def _vectors(texts: Sequence[str], embed: Embedder) -> np.ndarray:
    """Unit vectors of ``texts`` by ``embed`` (kept per embedder and text: a hit seen again costs
    nothing; an entry holds its embedder, so another one, even at a reused id, never reads it)."""

    def kept(text: str) -> np.ndarray | None:
        found = _VECTORS.get((id(embed), text))
        return found[1] if found is not None and found[0] is embed else None

    missing = [t for t in dict.fromkeys(texts) if kept(t) is None]
    if missing:
        for text, vector in zip(missing, np.asarray(embed(missing), dtype=np.float32)):
            _VECTORS.put((id(embed), text), (embed, vector / (float(np.linalg.norm(vector)) or 1.0)))
    return np.stack([kept(t) for t in texts])  # type: ignore[misc]


def unit_spans(text: str, chosen: list[Unit]) -> tuple[tuple[int, int], ...]:
    """``chosen`` units as spans in reading order, neighbours on one line (only spaces between) joined."""
    spans: list[tuple[int, int]] = []
    for start, end in sorted(span for u in chosen for span in u.spans()):
        if spans and (start < spans[-1][1] or not text[spans[-1][1]:start].strip(" \t")):
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return tuple(spans)


def choose_many(
    texts: Sequence[tuple[str, int]], query: str, embed: Embedder | None = None,
    settings: FocusSettings | None = None,
) -> list[Choice]:
    """The :class:`Choice` of each ``(text, body_start)`` for ``query``; the texts are scored
    together (one embedding batch; a query word's spread is measured over all their units)."""
    s = settings or FocusSettings()
    if not query or not query.strip():
        return [_NONE for _ in texts]
    terms = query_terms(query, abbreviations("\n".join(text for text, _ in texts)))
    per_text = [units(text, body_start) for text, body_start in texts]
    candidates = [[u for u in us if u.kind not in ("heading", "header")] for us in per_text]
    flat = [u.text(text) for (text, _), cands in zip(texts, candidates) for u in cands]
    lexical = lexical_scores(terms, flat, cue_bonus=s.cue_bonus)
    semantic: list[float] | None = None
    if embed is not None and flat:
        vectors = _vectors([query, *flat], embed)
        semantic = [float(x) for x in vectors[1:] @ vectors[0]]
    out: list[Choice] = []
    at = 0
    for (text, _), us, cands in zip(texts, per_text, candidates):
        lex = lexical[at:at + len(cands)]
        sem = semantic[at:at + len(cands)] if semantic is not None else None
        at += len(cands)
        if not cands:
            out.append(_NONE)
            continue
        if len(cands) == 1:
            out.append(Choice(unit_spans(text, with_headers(cands, us)), "single"))
            continue
        if sem is None:
            scores = lex
            if max(scores) <= 0 or max(scores) < s.min_lexical:
                out.append(_NONE)
                continue
        else:
            scores = [s.w_lexical * a + s.w_semantic * b for a, b in zip(lex, sem)]
        best = max(scores)
        ranked = sorted((i for i, x in enumerate(scores) if x >= best - s.gap), key=lambda i: -scores[i])
        chosen = [cands[i] for i in ranked[: s.max_units]]
        out.append(Choice(unit_spans(text, with_headers(chosen, us)), "semantic" if sem is not None else "lexical"))
    return out


def with_headers(chosen: list[Unit], all_units: list[Unit]) -> list[Unit]:
    """``chosen`` plus the header row of each table a chosen row belongs to."""
    blocks = {u.block for u in chosen if u.kind == "row"}
    headers = [u for u in all_units if u.kind == "header" and u.block in blocks]
    return [*chosen, *(h for h in headers if h not in chosen)]
