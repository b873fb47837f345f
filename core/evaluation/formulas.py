"""Display-formula edit distance (thesis Fig. A.1: OmniDocBench's ``display_formula: Edit_dist``).

Formulas are the ``$$..$$`` / ``\\[..\\]`` blocks of a parser's Markdown and the ``formula`` items of a
DoclingDocument reference (:mod:`.content_data`). Both sides are normalized by
:func:`normalize_formula` (NFKC, the display delimiters and all whitespace removed: LaTeX spacing
carries no content), paired one-to-one by the Hungarian method on normalized edit distance, and a
pair above ``accept`` (0.7, as for text blocks) counts as two unmatched formulas.

A reference formula whose text is empty (Docling without its formula-enrichment model writes the
region with no LaTeX: ``<!-- formula-not-decoded -->``) cannot be compared with anything: it is
counted (``n_gt_without_text``) and left out. A document is scored only when it has at least one
reference formula with text; then every unit counts like a text block - a matched pair its edit
distance, an unmatched reference or predicted formula its whole length - and ``distance / length`` is
the length-weighted normalized edit distance (:attr:`FormulaScore.edit`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .text_metrics import edit_distance, hungarian, ned

__all__ = ["FormulaScore", "normalize_formula", "score_formulas", "ACCEPT_NED"]

ACCEPT_NED = 0.7
_DELIMITERS = re.compile(r"^\s*(?:\$\$|\\\[)|(?:\$\$|\\\])\s*$")
_SPACE = re.compile(r"\s+")


def normalize_formula(text: str) -> str:
    """NFKC, one pair of display delimiters (``$$`` / ``\\[ \\]``) stripped, whitespace removed."""
    text = unicodedata.normalize("NFKC", text)
    return _SPACE.sub("", _DELIMITERS.sub("", text))


@dataclass
class FormulaScore:
    """Display formulas of one document: counts, and the edit distance when it is defined."""

    n_gt: int = 0
    n_pred: int = 0
    n_gt_without_text: int = 0
    n_matched: int = 0
    distance: int = 0
    length: int = 0
    neds: list[float] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        """At least one reference formula has text (the edit distance is defined)."""
        return self.n_gt > self.n_gt_without_text

    @property
    def edit(self) -> float | None:
        return self.distance / self.length if self.scored else None  # scored: a reference text, so length > 0

    def to_dict(self) -> dict[str, Any]:
        return {"formula_edit": self.edit, "n_gt_formulas": self.n_gt, "n_pred_formulas": self.n_pred,
                "n_gt_formulas_without_text": self.n_gt_without_text, "n_matched_formulas": self.n_matched}


def score_formulas(gt: Sequence[str], pred: Sequence[str], *, accept: float = ACCEPT_NED) -> FormulaScore:
    """Pair and score reference and predicted display formulas (module doc)."""
    gt_norm = [normalize_formula(f) for f in gt]
    pred_norm = [t for t in (normalize_formula(f) for f in pred) if t]
    score = FormulaScore(n_gt=len(gt_norm), n_pred=len(pred_norm), n_gt_without_text=sum(1 for t in gt_norm if not t))
    if not score.scored:
        return score
    refs = [t for t in gt_norm if t]
    used_gt: set[int] = set()
    used_pred: set[int] = set()
    if pred_norm:
        cost = np.array([[ned(g, p) for p in pred_norm] for g in refs], dtype=float)
        rows, cols = hungarian()(cost)
        for r, c in zip(rows.tolist(), cols.tolist()):
            if cost[r, c] <= accept:
                used_gt.add(r)
                used_pred.add(c)
                score.n_matched += 1
                score.distance += edit_distance(refs[r], pred_norm[c])
                score.length += max(len(refs[r]), len(pred_norm[c]))
                score.neds.append(float(cost[r, c]))
    for texts, used in ((refs, used_gt), (pred_norm, used_pred)):
        for k, text in enumerate(texts):
            if k not in used:
                score.distance += len(text)
                score.length += len(text)
                score.neds.append(1.0)
    return score
