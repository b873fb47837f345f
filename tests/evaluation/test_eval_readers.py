"""Evaluation readers fail loudly (issue #13 item 7).

Docling-eval style ground truth (DoclingDocument JSON with boxes in page-image pixels and ``cref``
links) must read as the same reference as docling's own file (boxes in points, ``$ref`` links);
items nested in tables/pictures are not top-level elements; empty references, predictions in other
coordinates and a missing data folder raise one-line typed errors instead of scoring zero.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.cli.main import main
from grounded.errors import GroundedError
from grounded.evaluation.content_data import read_docling_content
from grounded.evaluation.dla import Layout, LayoutBox, require_alignment, unmatched_pages
from grounded.evaluation.dla_data import DOCLING_TEXT_CLASSES, docling_nested, read_docling_layout
from grounded.evaluation.errors import EvaluationDataError, EvaluationError
from grounded.evaluation.runs import data_dir, run_dla_docling
from tests.support.data import REPO, shared

NATIVE = ("2305.03393v1-pg9", "multi_page")  # recorded docling outputs with their PDFs


def _crefs(node: Any) -> Any:
    """``{"$ref": x}`` -> ``{"cref": x}`` everywhere (docling-core serialised by field name)."""
    if isinstance(node, dict):
        return {("cref" if k == "$ref" else k): _crefs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_crefs(v) for v in node]
    return node


def docling_eval_style(doc: dict[str, Any], dpi: float = 144.0, nest: bool = True,
                       origin: str = "TOPLEFT") -> tuple[dict[str, Any], dict[str, str | None]]:
    """A docling-eval style copy of a recorded DoclingDocument: page sizes and boxes in ``dpi``
    pixels (``image`` with ``dpi`` and ``size``), ``cref`` links, and (``nest``) two body texts moved
    into the first table (as cell texts) and one into a new picture. Returns the document and, per
    nested text, the label of the container created on its box (None: nested in an existing table)."""
    out = copy.deepcopy(doc)
    k = dpi / 72.0
    heights = {}
    for key, page in out["pages"].items():
        w, h = page["size"]["width"], page["size"]["height"]
        heights[int(key)] = h
        page["size"] = {"width": w * k, "height": h * k}
        page["image"] = {"mimetype": "image/png", "dpi": dpi, "size": {"width": w * k, "height": h * k},
                         "uri": f"page_{key}.png"}
    for group in ("texts", "tables", "pictures"):
        for item in out.get(group, ()):
            for prov in item.get("prov", ()):
                b, h = prov["bbox"], heights[int(prov["page_no"])]
                if b.get("coord_origin", "TOPLEFT").upper() == "BOTTOMLEFT":
                    top, bottom = h - b["t"], h - b["b"]
                else:
                    top, bottom = b["t"], b["b"]
                if origin == "BOTTOMLEFT":
                    top, bottom = h - top, h - bottom
                prov["bbox"] = {"l": b["l"] * k, "t": top * k, "r": b["r"] * k, "b": bottom * k,
                                "coord_origin": origin}
    nested: dict[str, str | None] = {}
    if nest:
        body = out["body"]
        movable = [t for t in out["texts"] if t["label"] == "text" and t["parent"]["$ref"] == "#/body"]
        assert len(movable) >= 3, "the recorded document needs three body paragraphs to nest"
        created = {movable[2]["self_ref"]: "figure"}
        if not out["tables"]:  # give the document a table holding the cell texts
            first = movable[0]
            out["tables"].append({"self_ref": "#/tables/0", "parent": {"$ref": "#/body"}, "children": [],
                                  "content_layer": "body", "label": "table", "prov": copy.deepcopy(first["prov"]),
                                  "captions": [], "references": [], "footnotes": [], "data": {"table_cells": []}})
            body["children"].append({"$ref": "#/tables/0"})
            created[first["self_ref"]] = "table"
        table = out["tables"][0]
        picture_ref = f"#/pictures/{len(out['pictures'])}"
        picture = {"self_ref": picture_ref, "parent": {"$ref": "#/body"}, "children": [], "content_layer": "body",
                   "label": "picture", "prov": copy.deepcopy(movable[2]["prov"]), "captions": [],
                   "references": [], "footnotes": [], "annotations": []}
        out["pictures"].append(picture)
        body["children"].append({"$ref": picture_ref})
        for text, holder in ((movable[0], table), (movable[1], table), (movable[2], picture)):
            ref = text["self_ref"]
            body["children"] = [c for c in body["children"] if c["$ref"] != ref]
            holder["children"].append({"$ref": ref})
            text["parent"] = {"$ref": holder["self_ref"]}
            nested[ref] = created.get(ref)
    return _crefs(out), nested


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _box_tuples(layout: Layout, ndigits: int = 3) -> list[tuple]:
    return sorted((b.page_key, b.label, round(b.x, ndigits), round(b.y, ndigits), round(b.w, ndigits),
                   round(b.h, ndigits)) for b in layout.boxes)


def _filter(layout: Layout, doc: dict[str, Any], removed: dict[str, str | None]) -> Layout:
    """``layout`` (read from ``doc``) without the boxes of the items in ``removed``, or relabelled
    where a container was created on the item's box."""
    drop: dict[tuple, str | None] = {}
    for t in doc["texts"]:
        if t["self_ref"] in removed:
            for prov in t["prov"]:
                h = doc["pages"][str(prov["page_no"])]["size"]["height"]
                b = prov["bbox"]
                top = h - b["t"] if b.get("coord_origin") == "BOTTOMLEFT" else b["t"]
                key = (f"{layout.boxes[0].page_key.rsplit('#', 1)[0]}#{prov['page_no']}", round(b["l"], 3),
                       round(top, 3))
                drop[key] = removed[t["self_ref"]]
    boxes = []
    for b in layout.boxes:
        key = (b.page_key, round(b.x, 3), round(b.y, 3))
        if key not in drop:
            boxes.append(b)
        elif drop[key] is not None:
            boxes.append(LayoutBox(b.page_key, str(drop[key]), b.x, b.y, b.w, b.h))
    return Layout(dict(layout.pages), boxes)


@pytest.mark.parametrize("name", NATIVE)
def test_docling_eval_pixels_and_crefs_read_as_the_original_points(name, tmp_path):
    original = shared("native", "docling", f"{name}.json")
    pdf = shared("native", "docling", f"{name}.pdf")
    doc = json.loads(original.read_text())
    converted, nested = docling_eval_style(doc)
    assert '"$ref"' not in json.dumps(converted) and nested
    path = _write(tmp_path / f"{name}.json", converted)
    expected = _filter(read_docling_layout(original), doc, nested)
    n_created = sum(v is not None for v in nested.values())
    assert len(expected.boxes) == len(read_docling_layout(original).boxes) - len(nested) + n_created
    for kwargs in ({"pdf": pdf}, {}):  # checked against the PDF, and from the file's image dpi alone
        got = read_docling_layout(path, name, **kwargs)
        assert _box_tuples(got) == _box_tuples(expected)
        for key, (w, h) in expected.pages.items():
            assert got.pages[key] == pytest.approx((w, h), rel=1e-3)
    assert docling_nested(converted) == set(nested)


@pytest.mark.parametrize("name", NATIVE)
def test_docling_eval_content_reference_excludes_nested_texts(name, tmp_path):
    original = shared("native", "docling", f"{name}.json")
    doc = json.loads(original.read_text())
    converted, nested = docling_eval_style(doc)
    got = read_docling_content(_write(tmp_path / f"{name}.json", converted))
    ref = read_docling_content(original)
    nested_texts = {t["text"] for t in doc["texts"] if t["self_ref"] in nested}
    assert got.text_blocks == [t for t in ref.text_blocks if t not in nested_texts]
    assert len(got.text_blocks) == len(ref.text_blocks) - len(nested)
    assert len(got.tables) >= len(ref.tables)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dpi=st.sampled_from([72.0, 96.0, 144.0, 200.0, 300.0]), origin=st.sampled_from(["TOPLEFT", "BOTTOMLEFT"]))
def test_any_dpi_and_origin_give_the_same_points(tmp_path, dpi, origin):
    original = shared("native", "docling", "multi_page.json")
    converted, _ = docling_eval_style(json.loads(original.read_text()), dpi=dpi, nest=False, origin=origin)
    got = read_docling_layout(_write(tmp_path / "multi_page.json", converted))
    assert _box_tuples(got, 2) == _box_tuples(read_docling_layout(original), 2)


def test_pixel_boxes_on_a_page_in_points_use_the_image_size(tmp_path):
    """Page ``size`` in points, boxes in image pixels (the image ``size``/``dpi`` explain them)."""
    original = shared("native", "docling", "2305.03393v1-pg9.json")
    doc = json.loads(original.read_text())
    converted, _ = docling_eval_style(doc, nest=False)
    for page in converted["pages"].values():
        page["size"] = {"width": page["size"]["width"] / 2, "height": page["size"]["height"] / 2}
    got = read_docling_layout(_write(tmp_path / "p.json", converted), original.stem)
    assert _box_tuples(got) == _box_tuples(read_docling_layout(original))


def test_boxes_in_unexplained_units_raise(tmp_path):
    original = shared("native", "docling", "2305.03393v1-pg9.json")
    converted, _ = docling_eval_style(json.loads(original.read_text()), nest=False)
    for page in converted["pages"].values():
        page["size"] = {"width": page["size"]["width"] / 2, "height": page["size"]["height"] / 2}
        del page["image"]
    with pytest.raises(EvaluationDataError, match="not in the page's units") as err:
        read_docling_layout(_write(tmp_path / "bad.json", converted))
    assert "bad.json" in str(err.value) and "page 1" in str(err.value)


def test_pdf_of_another_shape_raises(tmp_path):
    original = shared("native", "docling", "2305.03393v1-pg9.json")
    converted, _ = docling_eval_style(json.loads(original.read_text()), nest=False)
    converted["pages"]["1"]["size"]["width"] *= 1.5
    with pytest.raises(EvaluationDataError, match="aspect ratio"):
        read_docling_layout(_write(tmp_path / "x.json", converted), pdf=shared("native", "docling",
                                                                               "2305.03393v1-pg9.pdf"))


def test_empty_references_raise_typed_errors(tmp_path):
    doc = json.loads(shared("native", "docling", "2305.03393v1-pg9.json").read_text())
    only_furniture = copy.deepcopy(doc)
    only_furniture["texts"] = [dict(t, label="page_header") for t in doc["texts"]]
    only_furniture["tables"] = []
    only_furniture["body"]["children"] = [c for c in doc["body"]["children"] if "texts" in c["$ref"]]
    path = _write(tmp_path / "furniture.json", only_furniture)
    with pytest.raises(EvaluationDataError, match="layout reference is empty") as err:
        read_docling_layout(path)
    assert "furniture.json" in str(err.value) and isinstance(err.value, (GroundedError, ValueError))
    unlinked = copy.deepcopy(doc)
    unlinked["body"]["children"] = [{"ref": c["$ref"]} for c in doc["body"]["children"]]  # no known link key
    with pytest.raises(EvaluationDataError, match="content reference is empty"):
        read_docling_content(_write(tmp_path / "unlinked.json", unlinked))


def test_mis_scaled_predictions_raise_no_prediction_matches():
    original = shared("native", "docling", "multi_page.json")
    gt = read_docling_layout(original)
    assert unmatched_pages(gt, gt, DOCLING_TEXT_CLASSES) == []
    require_alignment(gt, gt, str(original), DOCLING_TEXT_CLASSES)  # matching boxes pass
    for k in (2.0, 0.5, 144 / 72):  # the prediction in pixels (or the GT in pixels) on every page
        pred = Layout(dict(gt.pages), [LayoutBox(b.page_key, b.label, b.x * k, b.y * k, b.w * k, b.h * k)
                                       for b in gt.boxes])
        with pytest.raises(EvaluationDataError, match="no prediction matches a single ground-truth box") as err:
            require_alignment(gt, pred, str(original), DOCLING_TEXT_CLASSES)
        msg = str(err.value)
        assert "multi_page.json" in msg and "page(s) 1, 2, 3, 4, 5" in msg and "scale" in msg
    # a bottom-left origin mistake (y flipped) is caught the same way
    flipped = Layout(dict(gt.pages), [LayoutBox(b.page_key, b.label, b.x, gt.pages[b.page_key][1] - b.y - b.h - 150,
                                                b.w, b.h) for b in gt.boxes])
    assert unmatched_pages(gt, flipped, DOCLING_TEXT_CLASSES)


def test_docling_run_on_pixel_ground_truth_scores_like_the_original(tmp_path):
    """End to end: the old reader scored docling-eval GT as all zeros; now it is the same reference."""
    name = "2305.03393v1-pg9"
    for kind, (doc, _) in {"points": (json.loads(shared("native", "docling", f"{name}.json").read_text()), None),
                           "pixels": docling_eval_style(json.loads(shared("native", "docling", f"{name}.json")
                                                                   .read_text()), nest=False)}.items():
        folder = tmp_path / kind / "pdfs" / "docling_groundtruth"
        folder.mkdir(parents=True)
        shutil.copy(shared("native", "docling", f"{name}.pdf"), folder / f"{name}.pdf")
        _write(folder / f"{name}.json", doc)
    cache = tmp_path / "cache"
    a = run_dla_docling(tmp_path / "points", cache_dir=cache)
    b = run_dla_docling(tmp_path / "pixels", cache_dir=cache)
    assert a.macro_f1_50 > 0.3
    assert b.to_dict()["classes"] == a.to_dict()["classes"]


def test_eval_data_folder_has_no_default(monkeypatch, capsys):
    monkeypatch.delenv("GROUNDED_EVAL_DATA", raising=False)
    monkeypatch.chdir(REPO)  # ../shared/data exists from here: it must still not be used
    with pytest.raises(EvaluationError, match="--data DIR"):
        data_dir()
    for task in (["dla", "--dataset", "icdar"], ["content"], ["chunking"]):
        assert main(["eval", *task]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--data DIR" in err and "GROUNDED_EVAL_DATA" in err
    monkeypatch.setenv("GROUNDED_EVAL_DATA", str(REPO / "nowhere"))
    assert data_dir() == REPO / "nowhere"
    assert data_dir(Path("x")) == Path("x")


def test_empty_coco_and_icdar_references_raise(tmp_path):
    import pymupdf

    from grounded.evaluation.content_data import read_icdar_tables
    from grounded.evaluation.dla_data import read_coco, read_icdar_regions

    coco = json.loads(shared("publaynet_examples", "samples.json").read_text())
    coco["annotations"] = []
    with pytest.raises(EvaluationDataError, match="COCO reference is empty"):
        read_coco(_write(tmp_path / "coco.json", coco))
    pdf = tmp_path / "one.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "A page without tables.")
        doc.save(pdf)
    (tmp_path / "one-reg.xml").write_text('<?xml version="1.0"?><document filename="one.pdf"></document>')
    with pytest.raises(EvaluationDataError, match="one-reg.xml: the table-region reference is empty"):
        read_icdar_regions(tmp_path / "one-reg.xml", pdf)
    (tmp_path / "one-str.xml").write_text('<?xml version="1.0"?><document filename="one.pdf"></document>')
    with pytest.raises(EvaluationDataError, match="one-str.xml: the table-structure reference is empty"):
        read_icdar_tables(tmp_path / "one-str.xml")
