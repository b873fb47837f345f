"""Ground-truth readers and prediction converters for the layout evaluation, with explicit class maps.

Every reader returns a :class:`~grounded.evaluation.dla.Layout` whose page keys are
``"<document>#<page>"`` (1-based pages; for COCO data the image file stem) and whose boxes are
top-left-origin ``x, y, w, h`` in the page's own units (pixels for images, PDF points for PDFs).

Class mappings (``ParsingResultType`` -> dataset class) are data, documented here and in the
README; types missing from a map are not scored (neither true nor false positives):

* PubLayNet (``text, title, list, table, figure``): PARAGRAPH, CAPTION, FOOTNOTE, FORMULA,
  KEY_VALUE -> text; TITLE, SECTION_HEADER -> title; LIST -> list (one box around the list, as
  PubLayNet annotates lists); TABLE, DOC_INDEX -> table; FIGURE -> figure.
* ICDAR-2013 table regions: TABLE -> table.
* Docling references (``text, heading, list_item, table, figure, caption, footnote, formula``):
  see :data:`DOCLING_LABELS` and :data:`DOCLING_TYPES`. Page headers/footers are not scored
  because the library drops them by default.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, InputNotFoundError, SchemaError
from ..model import ParsingBoundingBox, ParsingResult
from ..model import ParsingResultType as T
from .dla import Layout, LayoutBox

__all__ = [
    "PUBLAYNET_CLASSES",
    "PUBLAYNET_TYPES",
    "ICDAR_TYPES",
    "DOCLING_CLASSES",
    "DOCLING_LABELS",
    "DOCLING_TYPES",
    "page_key",
    "read_coco",
    "read_coco_predictions",
    "read_icdar_regions",
    "icdar_documents",
    "read_docling_layout",
    "layout_from_tree",
]

PUBLAYNET_CLASSES = ("text", "title", "list", "table", "figure")
PUBLAYNET_TYPES: Mapping[T, str] = {
    T.PARAGRAPH: "text", T.CAPTION: "text", T.FOOTNOTE: "text", T.FORMULA: "text", T.KEY_VALUE: "text",
    T.TITLE: "title", T.SECTION_HEADER: "title",
    T.LIST: "list",
    T.TABLE: "table", T.DOC_INDEX: "table",
    T.FIGURE: "figure",
}
ICDAR_TYPES: Mapping[T, str] = {T.TABLE: "table"}

DOCLING_CLASSES = ("text", "heading", "list_item", "table", "figure", "caption", "footnote", "formula")
#: DoclingDocument label -> evaluation class (labels not listed are not scored)
DOCLING_LABELS: Mapping[str, str] = {
    "text": "text", "paragraph": "text", "code": "text", "reference": "text",
    "title": "heading", "section_header": "heading",
    "list_item": "list_item",
    "table": "table", "document_index": "table",
    "picture": "figure", "chart": "figure",
    "caption": "caption",
    "footnote": "footnote",
    "formula": "formula",
}
#: ParsingResultType -> evaluation class for predictions scored against Docling references
DOCLING_TYPES: Mapping[T, str] = {
    T.PARAGRAPH: "text", T.KEY_VALUE: "text",
    T.TITLE: "heading", T.SECTION_HEADER: "heading",
    T.LIST_ITEM: "list_item", T.REFERENCE_ITEM: "list_item",
    T.TABLE: "table", T.DOC_INDEX: "table",
    T.FIGURE: "figure",
    T.CAPTION: "caption",
    T.FOOTNOTE: "footnote",
    T.FORMULA: "formula",
}


def page_key(document: str, page: int) -> str:
    return f"{document}#{page}"


def _load_json(path: Path) -> Any:
    if not path.is_file():
        raise InputNotFoundError(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: invalid JSON ({exc})") from exc


# -- COCO (PubLayNet) ---------------------------------------------------------------------------
def read_coco(path: str | Path) -> tuple[Layout, dict[int, str]]:
    """COCO ground truth -> (layout keyed by image file stem, image id -> page key)."""
    path = Path(path)
    data = _load_json(path)
    try:
        cats = {int(c["id"]): str(c["name"]) for c in data["categories"]}
        images = {int(im["id"]): (Path(im["file_name"]).stem, float(im["width"]), float(im["height"]))
                  for im in data["images"]}
        layout = Layout(pages={k: (w, h) for k, w, h in images.values()})
        for a in data["annotations"]:
            x, y, w, h = (float(v) for v in a["bbox"])
            layout.boxes.append(LayoutBox(images[int(a["image_id"])][0], cats[int(a["category_id"])], x, y, w, h))
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"{path}: not a COCO annotation file ({type(exc).__name__}: {exc})") from exc
    return layout, {i: v[0] for i, v in images.items()}


def read_coco_predictions(path: str | Path, gt_path: str | Path) -> Layout:
    """COCO-style prediction list (``image_id, category_id, bbox``; ``score`` ignored) for ``gt_path``.

    ``category_id`` may be a ground-truth category id or name; ``image_id`` an id or file name.
    """
    path = Path(path)
    gt, id_to_key = read_coco(gt_path)
    gt_data = _load_json(Path(gt_path))
    cats = {int(c["id"]): str(c["name"]) for c in gt_data["categories"]}
    names = {Path(im["file_name"]).name: Path(im["file_name"]).stem for im in gt_data["images"]}
    data = _load_json(path)
    if isinstance(data, dict) and "annotations" in data:
        data = data["annotations"]
    if not isinstance(data, list):
        raise SchemaError(f"{path}: expected a list of COCO detections")
    layout = Layout(pages=dict(gt.pages))
    for i, d in enumerate(data):
        try:
            img = d["image_id"]
            key = id_to_key[int(img)] if not isinstance(img, str) or img.isdigit() else names.get(img, Path(img).stem)
            cat = d["category_id"]
            label = cat if isinstance(cat, str) and not cat.isdigit() else cats[int(cat)]
            x, y, w, h = (float(v) for v in d["bbox"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError(f"{path}: detection {i} is unreadable ({type(exc).__name__}: {exc})") from exc
        layout.boxes.append(LayoutBox(key, label, x, y, w, h))
    return layout


# -- ICDAR 2013 -----------------------------------------------------------------------------------
def icdar_documents(root: str | Path) -> list[tuple[str, Path, Path]]:
    """(document name, PDF, ``-reg.xml``) for every region file under ``root`` whose PDF exists."""
    root = Path(root)
    if not root.is_dir():
        raise InputNotFoundError(root, "ICDAR-2013 folder not found")
    out = []
    for reg in sorted(root.rglob("*-reg.xml")):
        pdf = reg.with_name(reg.name[: -len("-reg.xml")] + ".pdf")
        if pdf.is_file():
            out.append((pdf.stem, pdf, reg))
    if not out:
        raise InputError(root, "no ICDAR-2013 *-reg.xml files with a matching PDF")
    return out


def _pdf_pages(pdf: Path) -> list[tuple[float, float]]:
    """(width, height) of each page as displayed (rotation applied), as PyMuPDF's ``page.rect``."""
    import pymupdf

    try:
        with pymupdf.open(pdf) as doc:
            return [(p.rect.width, p.rect.height) for p in doc]
    except (RuntimeError, ValueError) as exc:
        raise InputError(pdf, f"cannot open PDF ({exc})") from exc


def read_icdar_regions(reg_xml: str | Path, pdf: str | Path, document: str | None = None) -> Layout:
    """Table regions of one ICDAR-2013 document as top-left points of the displayed page.

    ICDAR coordinates are PDF points with the origin at the bottom-left of the page *as displayed*
    (rotated pages included, checked on the 90°-rotated eu-015), so ``top = height - y2``. Every page
    of the PDF is part of the layout (pages without tables count for false positives)."""
    reg_xml, pdf = Path(reg_xml), Path(pdf)
    doc_name = document or pdf.stem
    pages = _pdf_pages(pdf)
    layout = Layout(pages={page_key(doc_name, i + 1): (w, h) for i, (w, h) in enumerate(pages)})
    try:
        root = ET.parse(reg_xml).getroot()
    except (ET.ParseError, OSError) as exc:
        raise SchemaError(f"{reg_xml}: unreadable region XML ({exc})") from exc
    for region in root.iter("region"):
        try:
            page = int(region.get("page", ""))
            bb = region.find("bounding-box")
            if bb is None:
                raise ValueError("no bounding-box")
            x1, y1, x2, y2 = (float(bb.get(k, "")) for k in ("x1", "y1", "x2", "y2"))
        except ValueError as exc:
            raise SchemaError(f"{reg_xml}: unreadable region ({exc})") from exc
        if not 1 <= page <= len(pages):
            raise SchemaError(f"{reg_xml}: region on page {page}, PDF has {len(pages)} pages")
        height = pages[page - 1][1]
        left, right = min(x1, x2), max(x1, x2)
        top, bottom = height - max(y1, y2), height - min(y1, y2)
        layout.boxes.append(LayoutBox(page_key(doc_name, page), "table", left, top, right - left, bottom - top))
    return layout


# -- DoclingDocument ------------------------------------------------------------------------------
def read_docling_layout(
    path: str | Path, document: str | None = None, labels: Mapping[str, str] = DOCLING_LABELS
) -> Layout:
    """Element boxes of a DoclingDocument JSON (every ``prov`` box; labels mapped by ``labels``).

    Text Docling recognised *inside* pictures (children of a picture other than its captions) is
    part of the figure, not a layout element of the page, and is skipped."""
    path = Path(path)
    data = _load_json(path)
    doc_name = document or path.stem
    try:
        sizes = {int(k): (float(v["size"]["width"]), float(v["size"]["height"])) for k, v in data["pages"].items()}
        layout = Layout(pages={page_key(doc_name, p): s for p, s in sizes.items()})
        for group in ("texts", "tables", "pictures"):
            for item in data.get(group, ()):
                label = labels.get(str(item.get("label")))
                if label is None:
                    continue
                parent = str(item.get("parent", {}).get("$ref", ""))
                if parent.startswith("#/pictures") and item.get("label") != "caption":
                    continue  # text Docling found inside a picture is part of the figure
                for prov in item.get("prov", ()):
                    page = int(prov["page_no"])
                    b = prov["bbox"]
                    height = sizes[page][1]
                    left, right = float(b["l"]), float(b["r"])
                    if str(b.get("coord_origin", "TOPLEFT")).upper() == "BOTTOMLEFT":
                        top, bottom = height - float(b["t"]), height - float(b["b"])
                    else:
                        top, bottom = float(b["t"]), float(b["b"])
                    top, bottom = min(top, bottom), max(top, bottom)
                    layout.boxes.append(LayoutBox(page_key(doc_name, page), label, left, top, right - left, bottom - top))
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"{path}: not a DoclingDocument JSON ({type(exc).__name__}: {exc})") from exc
    return layout


# -- predictions from parse trees -----------------------------------------------------------------
def _page_sizes(root: ParsingResult) -> dict[int, tuple[float, float]]:
    sizes = {int(p["page"]): (float(p["width"]), float(p["height"])) for p in root.metadata.get("pages", ())}
    if not sizes:
        raise SchemaError(f"parse of {root.metadata.get('source', {}).get('path', '?')}: root metadata has no page sizes")
    return sizes


def _node_boxes(node: ParsingResult) -> list[ParsingBoundingBox]:
    """The node's own boxes, or (for containers without geometry) one box per page around its subtree."""
    if node.geom:
        return list(node.geom)
    per_page: dict[int, list[ParsingBoundingBox]] = {}
    for d in node.walk():
        for b in d.geom:
            per_page.setdefault(b.page, []).append(b)
    return [ParsingBoundingBox.enclosing(bs) for _, bs in sorted(per_page.items())]


def layout_from_tree(
    root: ParsingResult, types: Mapping[T, str], document: str | None = None, scale: float = 1.0
) -> Layout:
    """Predicted boxes of a parse tree: nodes whose type is in ``types``, page fractions turned into
    points with the root's page sizes (times ``scale``, e.g. pixels per point)."""
    sizes = _page_sizes(root)
    doc_name = document or Path(str(root.metadata.get("source", {}).get("path", "document"))).stem
    layout = Layout(pages={page_key(doc_name, p): (w * scale, h * scale) for p, (w, h) in sizes.items()})
    for node in root.walk():
        label = types.get(node.type)
        if label is None:
            continue
        for b in _node_boxes(node):
            w, h = sizes[b.page]
            x0, y0, x1, y1 = b.to_points(w * scale, h * scale)
            layout.boxes.append(LayoutBox(page_key(doc_name, b.page), label, x0, y0, x1 - x0, y1 - y0))
    return layout
