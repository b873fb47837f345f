"""Layout evaluation: F1 at IoU thresholds from faster-coco-eval matches (hand-computed cases),
ground-truth readers for PubLayNet COCO, ICDAR-2013 regions and DoclingDocument JSON."""

from __future__ import annotations

import json

import pymupdf
import pytest

from grounded.errors import SchemaError
from grounded.evaluation.dla import IOU_THRESHOLDS, Layout, LayoutBox, evaluate_layout, f1
from grounded.evaluation.dla_data import (
    PUBLAYNET_CLASSES,
    PUBLAYNET_TYPES,
    icdar_documents,
    layout_from_tree,
    page_key,
    read_coco,
    read_coco_predictions,
    read_docling_layout,
    read_icdar_regions,
)
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from tests.support.data import shared


def _page(*boxes: LayoutBox) -> Layout:
    return Layout(pages={"p#1": (100.0, 100.0)}, boxes=list(boxes))


def test_f1_helper():
    assert f1(2, 4, 2) == (0.5, 1.0, pytest.approx(2 / 3))
    assert f1(0, 0, 3) == (0.0, 0.0, 0.0)


def test_f1_at_thresholds_hand_computed():
    gt = _page(LayoutBox("p#1", "text", 0, 0, 10, 10), LayoutBox("p#1", "text", 50, 50, 10, 10),
               LayoutBox("p#1", "table", 0, 20, 20, 20))
    pred = _page(
        LayoutBox("p#1", "text", 0, 0, 10, 8),  # IoU 0.8 with the first text box
        LayoutBox("p#1", "text", 80, 80, 10, 10),  # false positive
        LayoutBox("p#1", "table", 0, 20, 20, 12),  # IoU 0.6
        LayoutBox("p#1", "figure", 0, 0, 5, 5),  # class not scored here
    )
    res = evaluate_layout(gt, pred, labels=["text", "table"])
    text, table = res.score("text"), res.score("table")
    assert (text.n_gt, text.n_pred, table.n_gt, table.n_pred) == (2, 2, 1, 1)
    # text: one TP while IoU threshold <= 0.8 (t = .50 .. .80: 7 thresholds), F1 = 0.5, else 0
    assert [text.tp[t] for t in IOU_THRESHOLDS] == [1] * 7 + [0] * 3
    assert text.f1_50 == pytest.approx(0.5)
    assert text.f1_50_95 == pytest.approx(0.5 * 7 / 10)
    # table: TP for t <= 0.6 (0.50, 0.55, 0.60) -> F1 1.0 there, 0 above
    assert table.f1_50 == 1.0
    assert table.f1_50_95 == pytest.approx(0.3)
    assert res.macro_f1_50 == pytest.approx((0.5 + 1.0) / 2)
    assert res.macro_f1_50_95 == pytest.approx((0.35 + 0.3) / 2)


def test_one_ground_truth_box_matches_one_prediction_only():
    gt = _page(LayoutBox("p#1", "table", 0, 0, 10, 10))
    pred = _page(LayoutBox("p#1", "table", 0, 0, 10, 10), LayoutBox("p#1", "table", 0, 0, 10, 10))
    s = evaluate_layout(gt, pred).score("table")
    assert s.tp[0.5] == 1
    assert s.f1_50 == pytest.approx(2 * 0.5 * 1.0 / 1.5)


def test_empty_predictions_and_unscored_classes():
    gt = _page(LayoutBox("p#1", "table", 0, 0, 10, 10))
    res = evaluate_layout(gt, _page(), labels=["table", "figure"])
    assert res.score("table").f1_50 == 0.0
    assert [c.label for c in res.scored_classes] == ["table"]  # figure: no GT, no prediction
    assert res.macro_f1_50 == 0.0


def test_publaynet_ground_truth_against_itself_and_perturbed():
    path = shared("publaynet_examples", "samples.json")
    gt, _ = read_coco(path)
    assert len(gt.pages) == 20 and len(gt.boxes) == 193
    assert gt.labels() == set(PUBLAYNET_CLASSES)
    perfect = evaluate_layout(gt, gt, labels=PUBLAYNET_CLASSES)
    assert perfect.macro_f1_50 == 1.0 and perfect.macro_f1_50_95 == 1.0
    # shrink every box to 72 % of its height (IoU 0.72): TP up to t = 0.70 -> F1@50:95 = 0.5
    shrunk = Layout(gt.pages, [LayoutBox(b.page_key, b.label, b.x, b.y, b.w, b.h * 0.72) for b in gt.boxes])
    res = evaluate_layout(gt, shrunk, labels=PUBLAYNET_CLASSES)
    assert res.macro_f1_50 == 1.0
    assert res.macro_f1_50_95 == pytest.approx(0.5)
    # drop every second prediction of each class: recall ~ 1/2, precision 1
    kept, seen = [], {}
    for b in gt.boxes:
        seen[b.label] = seen.get(b.label, 0) + 1
        if seen[b.label] % 2:
            kept.append(b)
    half = evaluate_layout(gt, Layout(gt.pages, kept), labels=PUBLAYNET_CLASSES)
    for c in half.classes:
        p, r = c.tp[0.5] / c.n_pred, c.tp[0.5] / c.n_gt
        assert p == 1.0 and c.f1_50 == pytest.approx(2 * r / (1 + r))


def test_coco_prediction_file(tmp_path):
    gt_path = shared("publaynet_examples", "samples.json")
    data = json.loads(gt_path.read_text())
    preds = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 0.3}
             for a in data["annotations"]]
    (tmp_path / "pred.json").write_text(json.dumps(preds))
    pred = read_coco_predictions(tmp_path / "pred.json", gt_path)
    assert evaluate_layout(read_coco(gt_path)[0], pred, PUBLAYNET_CLASSES).macro_f1_50 == 1.0
    (tmp_path / "bad.json").write_text(json.dumps([{"image_id": 1}]))
    with pytest.raises(SchemaError, match="bad.json"):
        read_coco_predictions(tmp_path / "bad.json", gt_path)


def test_icdar_regions_cover_table_text_and_follow_rotation():
    docs = icdar_documents(shared("pdfs", "icdar2013_tables"))
    assert len(docs) == 67  # region files whose PDF is missing (the "b" parts) are skipped
    n_tables = n_pages = 0
    for k, (name, pdf, reg) in enumerate(docs):
        layout = read_icdar_regions(reg, pdf)
        n_pages += len(layout.pages)
        n_tables += len(layout.boxes)
        if k % 8 and name != "eu-015":  # text check on a sample (text extraction is slow) + the rotated doc
            continue
        with pymupdf.open(pdf) as doc:
            for box in layout.boxes[:1] + [b for b in layout.boxes if b.page_key.startswith("eu-015")]:
                page = doc[int(box.page_key.split("#")[1]) - 1]
                assert (page.rect.width, page.rect.height) == layout.pages[box.page_key]
                rect = pymupdf.Rect(box.x, box.y, box.x + box.w, box.y + box.h) * page.derotation_matrix
                assert len(page.get_textbox(rect).strip()) >= 2, (name, box)
    assert (n_pages, n_tables) == (238, 156)
    # eu-015 is rotated by 90°: ICDAR's bottom-left origin refers to the page as displayed
    d = shared("pdfs", "icdar2013_tables", "competition-dataset-eu")
    layout = read_icdar_regions(d / "eu-015-reg.xml", d / "eu-015.pdf")
    with pymupdf.open(d / "eu-015.pdf") as doc:
        page = doc[0]
        assert page.rotation == 90 and layout.pages["eu-015#1"] == (842.0, 595.0)
        texts = [page.get_textbox(pymupdf.Rect(b.x, b.y, b.x + b.w, b.y + b.h) * page.derotation_matrix)
                 for b in layout.boxes if b.page_key == "eu-015#1"]
    assert [t.split("\n")[:3] for t in texts] == [
        ["Topic", "Enquiries", "EU Institutions"],
        ["Topic", "Enquiries", "Other specific policies including Competition, External "],
    ]


def test_docling_layout_reader():
    path = shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.json")
    layout = read_docling_layout(path)
    assert layout.pages == {"2305.03393v1-pg9#1": (612.0, 792.0)}
    labels = sorted(b.label for b in layout.boxes)
    assert labels.count("table") == 1 and labels.count("heading") == 2 and "page_header" not in labels
    table = next(b for b in layout.boxes if b.label == "table")
    # bbox l=139.31 t=455.07 r=475.05 b=322.12 (bottom-left) -> top = 792 - 455.07
    assert (table.x, table.y, table.w, table.h) == pytest.approx((139.31, 792 - 455.07, 475.05 - 139.31, 455.07 - 322.12))


def test_layout_from_tree_converts_fractions_and_encloses_lists():
    root = ParsingResult("r", T.ROOT, metadata={"pages": [{"page": 1, "width": 200.0, "height": 100.0}],
                                                  "source": {"path": "/x/doc.pdf"}})
    root.add_child(ParsingResult("p", T.PARAGRAPH, "x", geom=[ParsingBoundingBox(1, 0.1, 0.1, 0.5, 0.2)]))
    lst = root.add_child(ParsingResult("l", T.LIST))
    lst.add_child(ParsingResult("i1", T.LIST_ITEM, "a", geom=[ParsingBoundingBox(1, 0.1, 0.5, 0.4, 0.6)]))
    lst.add_child(ParsingResult("i2", T.LIST_ITEM, "b", geom=[ParsingBoundingBox(1, 0.1, 0.6, 0.6, 0.7)]))
    root.add_child(ParsingResult("h", T.PAGE_HEADER, "h", geom=[ParsingBoundingBox(1, 0, 0, 1, 0.05)]))
    layout = layout_from_tree(root, PUBLAYNET_TYPES)
    assert layout.pages == {page_key("doc", 1): (200.0, 100.0)}
    got = {(b.label, round(b.x, 6), round(b.y, 6), round(b.w, 6), round(b.h, 6)) for b in layout.boxes}
    assert got == {("text", 20.0, 10.0, 80.0, 10.0), ("list", 20.0, 50.0, 100.0, 20.0)}
    with pytest.raises(SchemaError):
        layout_from_tree(ParsingResult("r", T.ROOT), PUBLAYNET_TYPES)


@pytest.mark.parametrize(
    ("pred_box", "iou", "n_thresholds_hit"),
    [
        ((0, 0, 10, 5), 0.5, 1),  # 50 / 100: matched at t = 0.50 only (COCO matches IoU >= t)
        ((5, 0, 10, 10), 1 / 3, 0),  # 50 / 150: below every threshold
        ((0, 0, 10, 9), 0.9, 9),  # 90 / 100: t = 0.50 .. 0.90
        ((0, 0, 10, 10), 1.0, 10),
    ],
)
def test_box_iou_against_thresholds(pred_box, iou, n_thresholds_hit):
    gt = _page(LayoutBox("p#1", "x", 0, 0, 10, 10))
    pred = _page(LayoutBox("p#1", "x", *pred_box))
    s = evaluate_layout(gt, pred).score("x")
    assert sum(s.tp[t] for t in IOU_THRESHOLDS) == n_thresholds_hit
    assert s.f1_50_95 == pytest.approx(n_thresholds_hit / 10)
    a = ParsingBoundingBox(1, 0, 0, 0.1, 0.1)
    b = ParsingBoundingBox(1, pred_box[0] / 100, pred_box[1] / 100, (pred_box[0] + pred_box[2]) / 100,
                           (pred_box[1] + pred_box[3]) / 100)
    assert a.iou(b) == pytest.approx(iou)
