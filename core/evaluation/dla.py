"""Document layout analysis scores (thesis §3.5.1): per-class and macro F1@50 and F1@50:95.

Predictions are *hard* (no confidence), so instead of COCO's AP we count true positives from the
one-to-one matches ``faster-coco-eval`` makes at each IoU threshold (a detection matches an
unmatched ground-truth box of its class with IoU >= t, greedy in input order), then::

    precision = TP / detections,  recall = TP / ground truths,  F1 = 2PR / (P + R)
    F1@50:95  = mean of F1 at t = 0.50, 0.55, ..., 0.95
    macro F1  = mean over the evaluated classes

Boxes of both sides are :class:`LayoutBox` objects in one coordinate system per page (pixels or
points, top-left origin); readers in :mod:`grounded.evaluation.dla_data` produce them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import BackendUnavailableError
from .errors import EvaluationDataError

__all__ = [
    "LayoutBox", "Layout", "ClassScore", "DLAResult", "evaluate_layout", "IOU_THRESHOLDS", "f1",
    "unmatched_pages", "require_alignment",
]

log = logging.getLogger(__name__)

#: 0.50, 0.55, ..., 0.95 (computed like pycocotools to avoid arange drift)
IOU_THRESHOLDS: tuple[float, ...] = tuple(float(t) for t in np.linspace(0.5, 0.95, 10))


@dataclass(frozen=True)
class LayoutBox:
    """One region on page ``page_key``: ``x, y`` top-left corner, ``w, h`` size, in page units."""

    page_key: str
    label: str
    x: float
    y: float
    w: float
    h: float

    @property
    def area(self) -> float:
        return max(0.0, self.w) * max(0.0, self.h)


@dataclass
class Layout:
    """Boxes of a set of pages; ``pages`` maps each page key to its (width, height)."""

    pages: dict[str, tuple[float, float]] = field(default_factory=dict)
    boxes: list[LayoutBox] = field(default_factory=list)

    def labels(self) -> set[str]:
        return {b.label for b in self.boxes}

    def restricted(self, page_keys: Iterable[str]) -> Layout:
        keep = set(page_keys)
        return Layout({k: v for k, v in self.pages.items() if k in keep}, [b for b in self.boxes if b.page_key in keep])


def f1(tp: int, n_pred: int, n_gt: int) -> tuple[float, float, float]:
    """(precision, recall, F1); an empty side gives 0 for the ratio that divides by it."""
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gt if n_gt else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@dataclass
class ClassScore:
    label: str
    n_gt: int
    n_pred: int
    tp: dict[float, int]  # IoU threshold -> true positives

    def f1_at(self, t: float) -> float:
        return f1(self.tp[t], self.n_pred, self.n_gt)[2]

    @property
    def f1_50(self) -> float:
        return self.f1_at(IOU_THRESHOLDS[0])

    @property
    def f1_50_95(self) -> float:
        return float(np.mean([self.f1_at(t) for t in IOU_THRESHOLDS]))

    def to_dict(self) -> dict[str, Any]:
        p, r, _ = f1(self.tp[IOU_THRESHOLDS[0]], self.n_pred, self.n_gt)
        return {"label": self.label, "n_gt": self.n_gt, "n_pred": self.n_pred, "precision@50": p, "recall@50": r,
                "f1@50": self.f1_50, "f1@50:95": self.f1_50_95,
                "tp": {f"{t:.2f}": v for t, v in self.tp.items()}}


@dataclass
class DLAResult:
    classes: list[ClassScore]
    n_pages: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def scored_classes(self) -> list[ClassScore]:
        """Classes in the macro mean: those with a ground-truth box or a prediction."""
        return [c for c in self.classes if c.n_gt or c.n_pred]

    @property
    def macro_f1_50(self) -> float:
        scored = self.scored_classes
        return float(np.mean([c.f1_50 for c in scored])) if scored else float("nan")

    @property
    def macro_f1_50_95(self) -> float:
        scored = self.scored_classes
        return float(np.mean([c.f1_50_95 for c in scored])) if scored else float("nan")

    def score(self, label: str) -> ClassScore:
        return next(c for c in self.classes if c.label == label)

    def to_dict(self) -> dict[str, Any]:
        return {"n_pages": self.n_pages, "macro": {"f1@50": self.macro_f1_50, "f1@50:95": self.macro_f1_50_95},
                "classes": [c.to_dict() for c in self.classes], "meta": self.meta}


def _coco_dicts(gt: Layout, pred: Layout, labels: Sequence[str]) -> tuple[dict, list[dict], dict[str, int]]:
    page_ids = {k: i + 1 for i, k in enumerate(sorted(gt.pages))}
    cat_ids = {lab: i + 1 for i, lab in enumerate(labels)}
    images = [{"id": page_ids[k], "width": float(w), "height": float(h), "file_name": k} for k, (w, h) in gt.pages.items()]
    anns = [
        {"id": i + 1, "image_id": page_ids[b.page_key], "category_id": cat_ids[b.label],
         "bbox": [b.x, b.y, b.w, b.h], "area": b.area, "iscrowd": 0}
        for i, b in enumerate(x for x in gt.boxes if x.label in cat_ids)
    ]
    gt_dict = {"images": images, "annotations": anns, "categories": [{"id": v, "name": k} for k, v in cat_ids.items()]}
    dts = [
        {"image_id": page_ids[b.page_key], "category_id": cat_ids[b.label], "bbox": [b.x, b.y, b.w, b.h],
         "score": 1.0, "area": b.area}
        for b in pred.boxes if b.label in cat_ids and b.page_key in page_ids
    ]
    return gt_dict, dts, cat_ids


def evaluate_layout(
    gt: Layout, pred: Layout, labels: Sequence[str] | None = None, *, meta: dict[str, Any] | None = None
) -> DLAResult:
    """Per-class TP counts at every IoU threshold via faster-coco-eval, for the pages of ``gt``.

    ``labels`` are the classes to score (default: every label of ``gt``); predicted boxes of other
    labels, or on pages ``gt`` does not describe, are ignored.
    """
    try:
        from faster_coco_eval import COCO, COCOeval_faster
    except ImportError as exc:
        raise BackendUnavailableError("layout evaluation (faster-coco-eval)", "eval") from exc
    labels = list(labels) if labels is not None else sorted(gt.labels())
    unknown_pages = {b.page_key for b in gt.boxes} - set(gt.pages)
    if unknown_pages:
        raise ValueError(f"ground-truth boxes on undescribed pages: {sorted(unknown_pages)[:5]}")
    gt_dict, dts, cat_ids = _coco_dicts(gt, pred, labels)
    ids_to_label = {v: k for k, v in cat_ids.items()}
    n_gt = {lab: 0 for lab in labels}
    for a in gt_dict["annotations"]:
        n_gt[ids_to_label[a["category_id"]]] += 1
    n_pred = {lab: 0 for lab in labels}
    for d in dts:
        n_pred[ids_to_label[d["category_id"]]] += 1
    tps: dict[str, dict[float, int]] = {lab: dict.fromkeys(IOU_THRESHOLDS, 0) for lab in labels}
    if dts and gt_dict["annotations"]:
        coco_gt = COCO(gt_dict)
        coco_dt = coco_gt.loadRes(dts)
        max_dets = max(len(dts), len(gt_dict["annotations"])) + 1
        for t in IOU_THRESHOLDS:
            ev = COCOeval_faster(coco_gt, coco_dt, "bbox", extra_calc=True, print_function=log.debug)
            ev.params.iouThrs = np.array([t])
            ev.params.maxDets = [max_dets]
            ev.params.areaRng = [[0.0, 1e12]]
            ev.params.areaRngLbl = ["all"]
            ev.evaluate()
            ev.accumulate()
            for key in ev.eval["matched"]:
                dt_id = int(str(key).split("_", 1)[0])
                tps[ids_to_label[coco_dt.anns[dt_id]["category_id"]]][t] += 1
    classes = [ClassScore(lab, n_gt[lab], n_pred[lab], tps[lab]) for lab in labels]
    return DLAResult(classes=classes, n_pages=len(gt.pages), meta=dict(meta or {}))


def _iou_matrix(a: Sequence[LayoutBox], b: Sequence[LayoutBox]) -> np.ndarray:
    xa = np.array([[x.x, x.y, x.x + x.w, x.y + x.h] for x in a], dtype=float).reshape(-1, 4)
    xb = np.array([[x.x, x.y, x.x + x.w, x.y + x.h] for x in b], dtype=float).reshape(-1, 4)
    iw = np.clip(np.minimum(xa[:, None, 2], xb[None, :, 2]) - np.maximum(xa[:, None, 0], xb[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(xa[:, None, 3], xb[None, :, 3]) - np.maximum(xa[:, None, 1], xb[None, :, 1]), 0, None)
    inter = iw * ih
    area_a = np.clip(xa[:, 2] - xa[:, 0], 0, None) * np.clip(xa[:, 3] - xa[:, 1], 0, None)
    area_b = np.clip(xb[:, 2] - xb[:, 0], 0, None) * np.clip(xb[:, 3] - xb[:, 1], 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def unmatched_pages(
    gt: Layout, pred: Layout, text_labels: Iterable[str] | None = None, iou: float = 0.5
) -> list[str]:
    """Pages where the ground truth has text (a box of ``text_labels``, default any label) and the
    prediction has boxes, yet not one predicted box overlaps any ground-truth box with IoU >= ``iou``
    (classes ignored). A real parser, however weak, matches something on a text page; this pattern
    is the signature of two sides in different coordinates (points vs pixels, wrong page origin)."""
    wanted = set(text_labels) if text_labels is not None else None
    gt_by: dict[str, list[LayoutBox]] = {}
    for b in gt.boxes:
        gt_by.setdefault(b.page_key, []).append(b)
    pred_by: dict[str, list[LayoutBox]] = {}
    for b in pred.boxes:
        pred_by.setdefault(b.page_key, []).append(b)
    out = []
    for key in sorted(gt_by):
        g, p = gt_by[key], pred_by.get(key, [])
        if not p or (wanted is not None and not any(b.label in wanted for b in g)):
            continue
        if not (_iou_matrix(g, p) >= iou).any():
            out.append(key)
    return out


def require_alignment(
    gt: Layout, pred: Layout, source: str, text_labels: Iterable[str] | None = None, iou: float = 0.5
) -> None:
    """Raise :class:`~grounded.evaluation.errors.EvaluationDataError` naming ``source`` and the pages
    of :func:`unmatched_pages`: scoring such pages would report a silent zero."""
    bad = unmatched_pages(gt, pred, text_labels, iou)
    if bad:
        raise EvaluationDataError(
            f"{source}: no prediction matches a single ground-truth box (IoU >= {iou:g}) on page(s) "
            f"{', '.join(k.rsplit('#', 1)[-1] for k in bad)} although both sides have boxes there: the two sides "
            "are in different coordinates (a coordinate/scale bug: points vs pixels, or the page origin)")
