"""Content-extraction scores (OmniDocBench-style; thesis §3.5.2): text edit distance with
adjacency search matching, TEDS / S-TEDS of tables, edit distance of the reading order.

**Matching text blocks** (:func:`match_blocks`). Both sides are normalized
(:func:`~grounded.evaluation.text_metrics.normalize_text`). Parsers cut paragraphs at different
places, so before a one-to-one assignment, fragments are merged: a block that appears almost
verbatim inside a longer block of the other side (RapidFuzz ``partial_ratio`` >= 90) is a
fragment of it; starting from the fragment closest to the long block, adjacent fragments
(neighbours in reading order) are concatenated while the normalized edit distance to the long block
keeps decreasing. This runs in both directions (prediction fragments of a reference block, then
reference fragments of a predicted block). The resulting units are assigned one-to-one by the
Hungarian method on normalized edit distance; pairs above ``accept`` (0.7) count as unmatched.

**Scores** (:func:`score_document`):

* ``text_edit`` = Σ edit distance / Σ max(len) over all units (an unmatched unit contributes its
  whole length), i.e. a length-weighted normalized edit distance; ``text_edit_mean`` is the plain
  mean of the per-unit values.
* ``reading_order_edit`` = normalized edit distance between the reference order of the matched
  reference units and the order in which their predictions appear.
* ``teds`` / ``s_teds``: tables paired by the Hungarian method on the edit distance of their
  normalized text; each reference table scores the TEDS of its partner, 0 when it has none (extra
  predicted tables are reported, not scored).
* ``formula_edit``: display formulas (thesis Fig. A.1), scored like text blocks by
  :mod:`.formulas`; ``None`` for a document without a reference formula that has text.
* ``overall`` (thesis Table 4.1) = mean of (1 - text_edit)·100, TEDS·100, (1 - reading_order_edit)·100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .content_data import DocumentContent
from .formulas import FormulaScore, score_formulas
from .teds import TableNode, s_teds, teds
from .text_metrics import edit_distance, hungarian, ned, normalize_text

__all__ = ["BlockMatch", "match_blocks", "DocumentScore", "score_document", "aggregate", "table_text"]

FRAGMENT_SCORE = 90.0
ACCEPT_NED = 0.7
NEAR_EXACT = 0.05
TIE_BREAK = 1e-6


@dataclass(frozen=True)
class BlockMatch:
    """Reference units ``gt`` matched to predicted units ``pred`` (indices into the inputs; an
    empty tuple on one side = unmatched) with their normalized texts and edit distance."""

    gt: tuple[int, ...]
    pred: tuple[int, ...]
    gt_text: str
    pred_text: str

    @property
    def distance(self) -> int:
        return edit_distance(self.gt_text, self.pred_text)

    @property
    def ned(self) -> float:
        return ned(self.gt_text, self.pred_text)


def _partial(short: str, long: str) -> float:
    from rapidfuzz import fuzz

    return float(fuzz.partial_ratio(short, long))


Unit = tuple[tuple[int, ...], str]  # indices of the blocks a unit joins + its normalized text


def _merge_fragments(longs: list[Unit], shorts: list[Unit]) -> list[Unit]:
    """Concatenate runs of adjacent ``shorts`` that are fragments of one of ``longs`` (module doc)."""
    consumed: set[int] = set()
    merged: dict[int, tuple[int, int]] = {}  # first short position -> (first, last) positions of a run
    long_set = {t for _, t in longs}
    # a block with an (almost) identical partner on the other side is nobody's fragment
    paired = {k for k, (_, s) in enumerate(shorts) if s in long_set or any(ned(s, t) < NEAR_EXACT for _, t in longs)}
    for _, long_text in sorted(longs, key=lambda u: -len(u[1])):
        free = [k for k in range(len(shorts)) if k not in consumed]
        cand = [k for k in free if k not in paired and len(shorts[k][1]) < len(long_text)
                and _partial(shorts[k][1], long_text) >= FRAGMENT_SCORE]
        if len(cand) < 2:
            continue
        single = min(ned(long_text, shorts[k][1]) for k in free)  # best one-to-one partner of long_text
        start = min(cand, key=lambda k: ned(long_text, shorts[k][1]))
        lo = hi = start
        best = ned(long_text, shorts[start][1])
        cand_set = set(cand)
        while True:
            options = [k for k in (lo - 1, hi + 1) if k in cand_set]
            scored = []
            for k in options:
                a, b = min(lo, k), max(hi, k)
                scored.append((ned(long_text, "".join(shorts[i][1] for i in range(a, b + 1))), a, b))
            if not scored:
                break
            value, a, b = min(scored)
            if value >= best:
                break
            best, lo, hi = value, a, b
        if hi > lo and best < single:
            consumed.update(range(lo, hi + 1))
            merged[lo] = (lo, hi)
    out: list[Unit] = []
    k = 0
    while k < len(shorts):
        if k in merged:
            lo, hi = merged[k]
            out.append((tuple(i for j in range(lo, hi + 1) for i in shorts[j][0]),
                        "".join(shorts[j][1] for j in range(lo, hi + 1))))
            k = hi + 1
        else:
            out.append(shorts[k])
            k += 1
    return out


def match_blocks(gt: Sequence[str], pred: Sequence[str], *, accept: float = ACCEPT_NED) -> list[BlockMatch]:
    """Adjacency search match of reference and predicted text blocks (module doc)."""
    linear_sum_assignment = hungarian()

    gt_units: list[Unit] = [((i,), t) for i, t in ((i, normalize_text(b)) for i, b in enumerate(gt)) if t]
    pred_units: list[Unit] = [((i,), t) for i, t in ((i, normalize_text(b)) for i, b in enumerate(pred)) if t]
    pred_units = _merge_fragments(gt_units, pred_units)
    gt_units = _merge_fragments(pred_units, gt_units)
    matches: list[BlockMatch] = []
    used_gt: set[int] = set()
    used_pred: set[int] = set()
    if gt_units and pred_units:
        cost = np.array([[ned(g, p) for _, p in pred_units] for _, g in gt_units], dtype=float)
        # ties between identical blocks (repeated "Yes" / "No" answers) go to the order-preserving pair
        rel_g = np.arange(len(gt_units))[:, None] / max(1, len(gt_units))
        rel_p = np.arange(len(pred_units))[None, :] / max(1, len(pred_units))
        rows, cols = linear_sum_assignment(cost + TIE_BREAK * np.abs(rel_g - rel_p))
        for r, c in zip(rows, cols):
            if cost[r, c] <= accept:
                matches.append(BlockMatch(gt_units[r][0], pred_units[c][0], gt_units[r][1], pred_units[c][1]))
                used_gt.add(r)
                used_pred.add(c)
    matches += [BlockMatch(idx, (), text, "") for k, (idx, text) in enumerate(gt_units) if k not in used_gt]
    matches += [BlockMatch((), idx, "", text) for k, (idx, text) in enumerate(pred_units) if k not in used_pred]
    return matches


def table_text(table: TableNode) -> str:
    return normalize_text(" ".join(td.text for tr in table.rows for td in tr.children))


def _pair_tables(gt: Sequence[TableNode], pred: Sequence[TableNode]) -> list[tuple[int, int]]:
    if not gt or not pred:
        return []
    gt_t, pred_t = [table_text(t) for t in gt], [table_text(t) for t in pred]
    cost = np.array([[ned(g, p) for p in pred_t] for g in gt_t], dtype=float)
    rows, cols = hungarian()(cost)
    return [(int(r), int(c)) for r, c in zip(rows, cols) if cost[r, c] < 1.0]


@dataclass
class DocumentScore:
    name: str
    text_distance: int = 0
    text_length: int = 0
    unit_neds: list[float] = field(default_factory=list)
    reading_order_edit: float | None = None
    table_teds: list[float] = field(default_factory=list)
    table_s_teds: list[float] = field(default_factory=list)
    n_gt_blocks: int = 0
    n_pred_blocks: int = 0
    n_matched: int = 0
    n_gt_tables: int = 0
    n_pred_tables: int = 0
    formulas: FormulaScore = field(default_factory=FormulaScore)

    @property
    def text_edit(self) -> float | None:
        return self.text_distance / self.text_length if self.text_length else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "text_edit": self.text_edit,
            "text_edit_mean": float(np.mean(self.unit_neds)) if self.unit_neds else None,
            "reading_order_edit": self.reading_order_edit,
            "teds": float(np.mean(self.table_teds)) if self.table_teds else None,
            "s_teds": float(np.mean(self.table_s_teds)) if self.table_s_teds else None,
            "n_gt_blocks": self.n_gt_blocks, "n_pred_blocks": self.n_pred_blocks, "n_matched_units": self.n_matched,
            "n_gt_tables": self.n_gt_tables, "n_pred_tables": self.n_pred_tables,
            **self.formulas.to_dict(),
        }


def score_document(
    name: str, reference: DocumentContent, prediction: DocumentContent, *, text: bool = True, tables: bool = True
) -> DocumentScore:
    """Scores of one document (``text=False`` for table-only references such as ICDAR)."""
    score = DocumentScore(name=name)
    if text:
        matches = match_blocks(reference.text_blocks, prediction.text_blocks)
        score.n_gt_blocks, score.n_pred_blocks = len(reference.text_blocks), len(prediction.text_blocks)
        for m in matches:
            score.text_distance += m.distance
            score.text_length += max(len(m.gt_text), len(m.pred_text))
            score.unit_neds.append(m.ned)
        paired = [m for m in matches if m.gt and m.pred]
        score.n_matched = len(paired)
        if paired:
            by_gt = sorted(range(len(paired)), key=lambda k: min(paired[k].gt))
            by_pred = sorted(range(len(paired)), key=lambda k: min(paired[k].pred))
            score.reading_order_edit = ned(by_gt, by_pred)
        score.formulas = score_formulas(reference.formulas, prediction.formulas)
    if tables:
        score.n_gt_tables, score.n_pred_tables = len(reference.tables), len(prediction.tables)
        partner = dict(_pair_tables(reference.tables, prediction.tables))
        for i, table in enumerate(reference.tables):
            j = partner.get(i)
            score.table_teds.append(teds(table, prediction.tables[j]) if j is not None else 0.0)
            score.table_s_teds.append(s_teds(table, prediction.tables[j]) if j is not None else 0.0)
    return score


def aggregate(scores: Sequence[DocumentScore]) -> dict[str, Any]:
    """Corpus-level numbers: length-weighted text edit, mean reading-order edit over documents,
    mean TEDS / S-TEDS over reference tables, length-weighted formula edit over the documents whose
    formulas are scored, and the thesis' overall score."""
    dist = sum(s.text_distance for s in scores)
    length = sum(s.text_length for s in scores)
    ro = [s.reading_order_edit for s in scores if s.reading_order_edit is not None]
    t = [v for s in scores for v in s.table_teds]
    st = [v for s in scores for v in s.table_s_teds]
    out: dict[str, Any] = {
        "documents": len(scores),
        "text_edit": dist / length if length else None,
        "text_edit_mean": float(np.mean([v for s in scores for v in s.unit_neds])) if any(s.unit_neds for s in scores) else None,
        "reading_order_edit": float(np.mean(ro)) if ro else None,
        "teds": float(np.mean(t)) if t else None,
        "s_teds": float(np.mean(st)) if st else None,
        "gt_tables": len(t),
        "pred_tables": sum(s.n_pred_tables for s in scores),
    }
    scored = [s.formulas for s in scores if s.formulas.scored]
    out.update({
        "formula_edit": sum(f.distance for f in scored) / sum(f.length for f in scored) if scored else None,
        "gt_formulas": sum(s.formulas.n_gt for s in scores),
        "gt_formulas_without_text": sum(s.formulas.n_gt_without_text for s in scores),
        "pred_formulas": sum(s.formulas.n_pred for s in scores),
    })
    parts = [v for v in ((1 - out["text_edit"]) * 100 if out["text_edit"] is not None else None,
                         out["teds"] * 100 if out["teds"] is not None else None,
                         (1 - out["reading_order_edit"]) * 100 if out["reading_order_edit"] is not None else None)
             if v is not None]
    out["overall"] = float(np.mean(parts)) if len(parts) == 3 else None
    return out
