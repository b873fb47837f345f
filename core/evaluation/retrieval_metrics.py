"""Chroma's token-level retrieval metrics (Smith & Troynikov 2024; thesis §3.5.3), over characters.

For one question with reference excerpts ``R`` (character ranges of one corpus) and the retrieved
chunks, let ``T_r`` be the set of corpus characters the retrieved chunks cover and ``|M_r|`` the
summed length of the retrieved chunks (a multiset: characters retrieved twice through overlapping
chunks count twice, and so do chunks of other corpora)::

    recall      = |T_r ∩ R| / Σ|r|
    precision   = |T_r ∩ R| / |M_r|
    IoU         = |T_r ∩ R| / (|M_r| + Σ|r \\ T_r|)
    precision_Ω = |T_Ω ∩ R| / |T_Ω ∪ R|      T_Ω = every chunk of the corpus touching a reference

These are the formulas of Chroma's reference implementation (``base_evaluation.py``): the recall
denominator sums the references, precision_Ω uses the *union* of the touching chunks (a perfect
retriever returns each chunk once). A chunk is one or more spans plus ``extra_chars`` of retrieved
text that lies outside the corpus (e.g. headings a hierarchical chunker prepends); those count as
retrieved, never as relevant.

Chroma's code treats a chunk that merely *abuts* a reference (empty intersection) as touching it;
``touching=True`` reproduces that quirk, the default counts only chunks sharing a character.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .spans import Span, covered, intersection, overlaps, subtract, total, union

__all__ = [
    "ChunkRegion",
    "QuestionScore",
    "score_question",
    "precision_omega",
    "MetricSummary",
    "summarize",
]


@dataclass(frozen=True)
class ChunkRegion:
    """Where one chunk's text lies: ``spans`` in corpus ``corpus_id`` + ``extra_chars`` from elsewhere."""

    corpus_id: str
    spans: tuple[Span, ...]
    extra_chars: int = 0

    def __post_init__(self) -> None:
        if self.extra_chars < 0:
            raise ValueError("extra_chars must be >= 0")
        for start, end in self.spans:
            if start < 0 or end < start:
                raise ValueError(f"invalid span ({start}, {end})")

    @property
    def length(self) -> int:
        """Characters retrieved with this chunk (spans + extra), the chunk's weight in |M_r|."""
        return total(self.spans) + self.extra_chars

    def touches(self, references: Sequence[Span], *, touching: bool = False) -> bool:
        return any(overlaps(s, r, touching=touching) for s in self.spans for r in references)


@dataclass(frozen=True)
class QuestionScore:
    recall: float
    precision: float
    iou: float


def score_question(references: Sequence[Span], corpus_id: str, retrieved: Sequence[ChunkRegion]) -> QuestionScore:
    """Recall, precision and IoU of the chunks ``retrieved`` for one question (see module doc)."""
    same_corpus = [s for c in retrieved if c.corpus_id == corpus_id for s in c.spans]
    hit = covered(intersection(same_corpus, references))
    ref_total = total(references)
    retrieved_total = sum(c.length for c in retrieved)
    missed = sum(covered(subtract([r], same_corpus)) for r in references)
    iou_den = retrieved_total + missed
    return QuestionScore(
        recall=hit / ref_total if ref_total else 0.0,
        precision=hit / retrieved_total if retrieved_total else 0.0,
        iou=hit / iou_den if iou_den else 0.0,
    )


def precision_omega(
    references: Sequence[Span], corpus_id: str, chunks: Sequence[ChunkRegion], *, touching: bool = False
) -> tuple[float, int]:
    """(precision_Ω, number of chunks touching a reference) for one question over all ``chunks``."""
    hits = [c for c in chunks if c.corpus_id == corpus_id and c.touches(references, touching=touching)]
    spans = [s for c in hits for s in c.spans]
    num = covered(intersection(spans, references))
    if num == 0:
        return 0.0, len(hits)
    den = covered(union([*spans, *references])) + sum(c.extra_chars for c in hits)
    return num / den, len(hits)


@dataclass
class MetricSummary:
    """Mean and (population) standard deviation of each metric over a set of questions, in [0, 1]."""

    n_questions: int
    mean: dict[str, float] = field(default_factory=dict)
    std: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"n_questions": self.n_questions, "mean": self.mean, "std": self.std}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricSummary:
        return cls(int(d["n_questions"]), {k: float(v) for k, v in d["mean"].items()},
                   {k: float(v) for k, v in d["std"].items()})


def summarize(values: Mapping[str, Sequence[float]]) -> MetricSummary:
    """Mean ± std (ddof=0, as Chroma's numpy call) of each named list of per-question values."""
    lengths = {len(v) for v in values.values()}
    if len(lengths) > 1:
        raise ValueError(f"metric lists differ in length: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    mean = {k: float(np.mean(v)) if len(v) else float("nan") for k, v in values.items()}
    std = {k: float(np.std(v)) if len(v) else float("nan") for k, v in values.items()}
    return MetricSummary(n_questions=n, mean=mean, std=std)
