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
from ..model.boxes import ParsingBoundingBox
from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T
from .dla import Layout, LayoutBox
from .errors import EvaluationDataError

__all__ = [
    "PUBLAYNET_CLASSES",
    "PUBLAYNET_TYPES",
    "ICDAR_TYPES",
    "DOCLING_CLASSES",
    "DOCLING_LABELS",
    "DOCLING_TYPES",
    "DOCLING_TEXT_CLASSES",
    "page_key",
    "read_coco",
    "read_coco_predictions",
    "read_icdar_regions",
    "icdar_documents",
    "read_docling_layout",
    "docling_ref",
    "docling_resolve",
    "docling_nested",
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
#: classes of running text: a page with one of these must have a prediction that matches something
DOCLING_TEXT_CLASSES = ("text", "heading", "list_item", "caption", "footnote")
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
    if not layout.boxes:
        raise EvaluationDataError(f"{path}: the COCO reference is empty (no annotations on {len(images)} images)")
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
    if not layout.boxes:
        raise EvaluationDataError(f"{reg_xml}: the table-region reference is empty (no <region> element)")
    return layout


# -- DoclingDocument ------------------------------------------------------------------------------
#: labels of DoclingDocument items whose children are part of them, not of the page's body
_CONTAINER_LABELS = frozenset({"table", "document_index", "picture", "chart", "picture_area"})
_ITEM_GROUPS = ("texts", "tables", "pictures", "groups", "key_value_items", "form_items")


def docling_ref(link: Any) -> str:
    """The JSON pointer of a DoclingDocument reference in either serialisation: ``{"$ref": ...}``
    (by alias, docling's own files) or ``{"cref": ...}`` (by field name, docling-eval style)."""
    if isinstance(link, Mapping):
        return str(link.get("$ref") or link.get("cref") or "")
    return ""


def docling_resolve(doc: Mapping[str, Any], ref: str) -> dict[str, Any] | None:
    """The item a ``#/group/index`` pointer names, or None."""
    node: Any = doc
    try:
        for part in ref.lstrip("#/").split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
    except (KeyError, IndexError, ValueError, TypeError):
        return None
    return node if isinstance(node, dict) else None


def _attached(container: Mapping[str, Any]) -> set[str]:
    """Captions, footnotes and references a table/picture lists as its own (they are page elements)."""
    return {docling_ref(r) for key in ("captions", "footnotes", "references") for r in container.get(key, ()) or ()}


def docling_nested(doc: Mapping[str, Any]) -> set[str]:
    """``self_ref`` of every item nested in a table, picture or picture-area group: table-cell texts,
    text recognised inside a figure. Captions/footnotes the container lists are not nested (they
    are elements of the page), nor is anything else whose parent chain reaches the body without
    passing through such a container — docling-eval's rule for top-level layout items."""
    items: dict[str, dict[str, Any]] = {}
    for group in _ITEM_GROUPS:
        for item in doc.get(group, ()) or ():
            if isinstance(item, dict) and item.get("self_ref"):
                items[str(item["self_ref"])] = item
    nested: set[str] = set()
    for ref, item in items.items():
        child, seen = ref, {ref}
        parent_ref = docling_ref(item.get("parent"))
        while parent_ref in items and parent_ref not in seen:
            seen.add(parent_ref)
            parent = items[parent_ref]
            container = parent.get("label") in _CONTAINER_LABELS or parent_ref.startswith(("#/tables/", "#/pictures/"))
            if container and child not in _attached(parent):
                nested.add(ref)
                break
            child, parent_ref = parent_ref, docling_ref(parent.get("parent"))
    return nested


def _close(a: float, b: float, tol: float = 0.02) -> bool:
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-9)


def _docling_geometry(
    path: Path, data: Mapping[str, Any], pdf: Path | None
) -> tuple[dict[int, tuple[float, float]], dict[int, tuple[float, float, float]]]:
    """Per page: the size in PDF points, and (box scale to points, page width, page height) in file units.

    The file's units come from the file itself: a PDF beside it (page size in points) is the
    reference when available; otherwise ``pages[n].image`` says whether ``size`` is in pixels
    (``image.size`` equal to ``size``: points = pixels * 72 / ``dpi``) or points. Boxes are in the
    units of ``size`` unless they overflow it and fit ``image.size`` (pixel boxes on a page in
    points). Any other disagreement raises :class:`EvaluationDataError`."""
    pdf_sizes = _pdf_pages(pdf) if pdf is not None else None
    points: dict[int, tuple[float, float]] = {}
    units: dict[int, tuple[float, float, float]] = {}
    for key, page in data["pages"].items():
        n = int(key)
        w, h = float(page["size"]["width"]), float(page["size"]["height"])
        if w <= 0 or h <= 0:
            raise EvaluationDataError(f"{path}: page {n} has size {w} x {h}")
        image = page.get("image") or {}
        dpi = float(image.get("dpi") or 72.0)
        img = image.get("size") or {}
        iw, ih = float(img.get("width") or 0.0), float(img.get("height") or 0.0)
        if pdf_sizes is not None:
            if not 1 <= n <= len(pdf_sizes):
                raise EvaluationDataError(f"{path}: page {n} is not in {pdf} ({len(pdf_sizes)} pages)")
            pw, ph = pdf_sizes[n - 1]
            if not _close(pw / w, ph / h):
                raise EvaluationDataError(
                    f"{path}: page {n} is {w:g} x {h:g} but page {n} of {pdf} is {pw:g} x {ph:g} pt "
                    "(different aspect ratio: wrong PDF or rotated page)")
            if _close(pw / w, 1.0):
                pw, ph = w, h  # the file is in points (the PDF's sizes differ by rounding only)
        elif iw and ih and _close(iw, w) and _close(ih, h) and dpi > 0:
            pw, ph = w * 72.0 / dpi, h * 72.0 / dpi  # size given in image pixels
        else:
            pw, ph = w, h  # size given in points
        points[n] = (pw, ph)
        units[n] = (pw / w, w, h)
    # boxes overflowing the page size are in other units (page-image pixels on a page in points)
    extent: dict[int, tuple[float, float]] = {}
    for group in ("texts", "tables", "pictures"):
        for item in data.get(group, ()) or ():
            for prov in item.get("prov", ()) or ():
                b, n = prov["bbox"], int(prov["page_no"])
                ex, ey = extent.get(n, (0.0, 0.0))
                extent[n] = (max(ex, float(b["l"]), float(b["r"])), max(ey, float(b["t"]), float(b["b"])))
    for n, (ex, ey) in extent.items():
        if n not in units:
            raise EvaluationDataError(f"{path}: boxes on page {n}, which the file's pages do not describe")
        scale, w, h = units[n]
        if ex <= w * 1.05 and ey <= h * 1.05:
            continue
        img = (data["pages"][str(n)].get("image") or {}).get("size") or {}
        iw, ih = float(img.get("width") or 0.0), float(img.get("height") or 0.0)
        if iw and ih and ex <= iw * 1.05 and ey <= ih * 1.05 and _close(iw / w, ih / h):
            units[n] = (points[n][0] / iw, iw, ih)
            continue
        raise EvaluationDataError(
            f"{path}: boxes on page {n} reach ({ex:g}, {ey:g}) on a page of {w:g} x {h:g}: the boxes are not "
            "in the page's units and no page image size explains them (coordinate/scale mismatch)")
    return points, units


def read_docling_layout(
    path: str | Path, document: str | None = None, labels: Mapping[str, str] = DOCLING_LABELS,
    pdf: str | Path | None = None,
) -> Layout:
    """Element boxes of a DoclingDocument JSON in PDF points (top-left origin), labels mapped by ``labels``.

    Works for docling's own output (boxes in points, ``$ref`` links) and docling-eval style ground
    truth (boxes in page-image pixels, e.g. 144 dpi, ``cref`` links): the scale comes from the file's
    page sizes, checked against ``pdf`` (default: the PDF beside the JSON, if any). Items nested in a
    table, picture or picture area (table-cell texts, text inside figures; see :func:`docling_nested`)
    are not layout elements of the page and are skipped. A file that yields no box of a scored
    label raises :class:`EvaluationDataError`."""
    path = Path(path)
    data = _load_json(path)
    doc_name = document or path.stem
    if pdf is None and path.with_suffix(".pdf").is_file():
        pdf = path.with_suffix(".pdf")
    try:
        points, units = _docling_geometry(path, data, Path(pdf) if pdf is not None else None)
        nested = docling_nested(data)
        layout = Layout(pages={page_key(doc_name, p): s for p, s in points.items()})
        for group in ("texts", "tables", "pictures"):
            for item in data.get(group, ()):
                label = labels.get(str(item.get("label")))
                if label is None or str(item.get("self_ref", "")) in nested:
                    continue
                for prov in item.get("prov", ()):
                    page = int(prov["page_no"])
                    b = prov["bbox"]
                    scale, _, height = units[page]
                    left, right = float(b["l"]), float(b["r"])
                    if str(b.get("coord_origin", "TOPLEFT")).upper() == "BOTTOMLEFT":
                        top, bottom = height - float(b["t"]), height - float(b["b"])
                    else:
                        top, bottom = float(b["t"]), float(b["b"])
                    left, right = min(left, right) * scale, max(left, right) * scale
                    top, bottom = min(top, bottom) * scale, max(top, bottom) * scale
                    layout.boxes.append(LayoutBox(page_key(doc_name, page), label, left, top, right - left, bottom - top))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, EvaluationDataError):
            raise
        raise SchemaError(f"{path}: not a DoclingDocument JSON ({type(exc).__name__}: {exc})") from exc
    if not layout.boxes:
        raise EvaluationDataError(
            f"{path}: the layout reference is empty (no box with a scored label among {len(points)} pages; "
            "labels or references unreadable?)")
    return layout


# -- predictions from parse trees -----------------------------------------------------------------
def _page_sizes(root: ParsingResult) -> dict[int, tuple[float, float]]:
    sizes = {p.page: (p.width, p.height) for p in root.info.page_sizes()}
    if not sizes:
        raise SchemaError(f"parse of {(root.info.source or {}).get('path', '?')}: root metadata has no page sizes")
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
    doc_name = document or Path(str((root.info.source or {}).get("path", "document"))).stem
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
