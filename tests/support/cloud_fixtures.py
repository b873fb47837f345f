"""Helpers for the unstructured / gemini / llamaparse / documentai backend tests.

Where no real recorded output of a tool exists for a PDF we have, the tests re-encode a *real*
parse of a real shared PDF into the tool's documented native format and check that the transform
gives the same elements and boxes back. The reference parse here is PyMuPDF's own: text blocks
of ``page.get_text("dict")`` (headings recognised by font size) and tables from
``page.find_tables()``.
"""

from __future__ import annotations

import statistics
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf
from rapidfuzz.distance import Levenshtein

from grounded.model import TEXT_TYPES, ParsingBoundingBox, ParsingResult, ParsingResultType

T = ParsingResultType

#: Parser options under which ``parse_native`` returns the backend's transform as it is (nothing
#: dropped, no hierarchy, no line spans): only the final element ids and the root metadata differ.
RAW = {"drop_types": (), "infer_hierarchy": False, "line_spans": False}


def blank_pdf(path: Path, sizes: list[tuple[float, float]]) -> Path:
    """A PDF of empty pages of ``sizes`` (points) at ``path``: the document for ``parse_native`` of
    a native output whose source PDF is not at hand (post-processing then finds no text layer)."""
    with pymupdf.open() as doc:
        for width, height in sizes:
            doc.new_page(width=width, height=height)
        doc.save(path)
    return path


@dataclass
class RefElement:
    """One element of the reference parse, box in top-left PDF points."""

    page: int
    type: ParsingResultType
    text: str
    bbox: tuple[float, float, float, float]
    page_size: tuple[float, float]
    level: int | None = None
    rows: list[list[str]] = field(default_factory=list)

    def fractions(self) -> tuple[float, float, float, float]:
        w, h = self.page_size
        x0, y0, x1, y1 = self.bbox
        return x0 / w, y0 / h, x1 / w, y1 / h


def norm(text: str) -> str:
    """Whitespace-collapsed text without invisible format characters (zero-width spaces)."""
    return " ".join("".join(c for c in text if unicodedata.category(c) != "Cf").split())


def _inside(inner: tuple[float, ...], outer: tuple[float, ...], slack: float = 2.0) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[2] <= outer[2] + slack and inner[3] <= outer[3] + slack)


def reference_elements(pdf_path: Path, pages: list[int], tables: bool = True) -> list[RefElement]:
    """A real parse of ``pages`` (1-based) of ``pdf_path`` in reading order (PyMuPDF block order)."""
    out: list[RefElement] = []
    with pymupdf.open(pdf_path) as doc:
        for number in pages:
            page = doc[number - 1]
            size = (page.rect.width, page.rect.height)
            table_refs: list[RefElement] = []
            if tables:
                for tab in page.find_tables().tables:
                    rows = [[" ".join(str(c or "").split()) for c in row] for row in tab.extract()]
                    if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
                        table_refs.append(RefElement(number, T.TABLE, "", tuple(tab.bbox), size, rows=rows))
            blocks = page.get_text("dict", sort=False)["blocks"]
            sizes = [s["size"] for b in blocks if b["type"] == 0 for ln in b["lines"] for s in ln["spans"] if s["text"].strip()]
            body = statistics.median(sizes) if sizes else 10.0
            placed: set[int] = set()
            for block in blocks:
                bbox = tuple(block["bbox"])
                owner = next((i for i, t in enumerate(table_refs) if _inside(bbox, t.bbox)), None)
                if owner is not None:
                    if owner not in placed:
                        placed.add(owner)
                        out.append(table_refs[owner])
                    continue
                if block["type"] == 1:
                    if (bbox[2] - bbox[0]) * (bbox[3] - bbox[1]) > 400:
                        out.append(RefElement(number, T.FIGURE, "", bbox, size))
                    continue
                if any(abs(ln["dir"][1]) > 1e-3 for ln in block["lines"]):
                    continue  # rotated margin text: not part of the reading order we re-encode
                lines = ["".join(s["text"] for s in ln["spans"]) for ln in block["lines"]]
                text = "\n".join(ln for ln in lines if ln.strip()).strip()
                if not text:
                    continue
                span_sizes = [s["size"] for ln in block["lines"] for s in ln["spans"] if s["text"].strip()]
                big = min(span_sizes) >= 1.15 * body
                kind = T.SECTION_HEADER if big and len(text) < 200 else T.PARAGRAPH
                level = (1 if min(span_sizes) >= 1.5 * body else 2) if kind == T.SECTION_HEADER else None
                out.append(RefElement(number, kind, text, bbox, size, level=level))
            for i, t in enumerate(table_refs):
                if i not in placed:
                    out.append(t)
    return out


def text_in_box(doc: pymupdf.Document, box: ParsingBoundingBox) -> str:
    page = doc[box.page - 1]
    w, h = page.rect.width, page.rect.height
    return page.get_text("text", clip=pymupdf.Rect(box.left * w, box.top * h, box.right * w, box.bottom * h))


def box_text_distances(root: ParsingResult, pdf_path: Path, min_chars: int = 1) -> list[tuple[str, float]]:
    """(content, normalized edit distance to the PDF text inside its box) per boxed text element."""
    out = []
    with pymupdf.open(pdf_path) as doc:
        for node in root.walk():
            if node.type in TEXT_TYPES and len(node.geom) == 1 and len(norm(node.content)) >= min_chars:
                found = norm(text_in_box(doc, node.geom[0]))
                out.append((node.content, Levenshtein.normalized_distance(found, norm(node.content))))
    return out


def leaf_elements(root: ParsingResult) -> list[ParsingResult]:
    """Content elements in reading order: no ROOT, no synthetic list containers, no table internals."""
    out = []
    for node in root.walk():
        if node.type in (T.ROOT, T.TABLE_ROW, T.TABLE_CELL) or node.metadata.get("synthetic"):
            continue
        out.append(node)
    return out


def assert_same_as_reference(root: ParsingResult, refs: list[RefElement], tolerance: float) -> None:
    """The transformed elements are the reference elements: type, text, page and box."""
    got = leaf_elements(root)
    assert len(got) == len(refs), (len(got), len(refs))
    for node, ref in zip(got, refs):
        assert node.type == ref.type, (node.type, ref.type, ref.text[:40])
        if ref.type == T.TABLE:
            cells = [[norm(c.content) for c in row.children] for row in node.children]
            assert cells == [[norm(c) for c in r] for r in ref.rows]
        elif ref.type != T.FIGURE:
            assert norm(node.content) == norm(ref.text)
        if ref.level is not None:
            assert node.metadata.get("native_level", node.metadata.get("level")) == ref.level
        assert len(node.geom) == 1
        box = node.geom[0]
        assert box.page == ref.page
        for got_v, want_v in zip((box.left, box.top, box.right, box.bottom), ref.fractions()):
            assert abs(got_v - want_v) <= tolerance + 1e-9, (ref.text[:30], got_v, want_v)


def check_chunks(root: ParsingResult, pdf_path: Path, max_tokens: int = 128) -> list:
    """Chunk a finished tree and check every chunk has boxes on existing pages and exact offsets."""
    from grounded.chunking import chunk, document_text

    result = chunk(root, strategy="hierarchical", max_tokens=max_tokens)
    doc = document_text(root)
    with pymupdf.open(pdf_path) as d:
        page_count = d.page_count
    assert result.chunks
    index = root.index()
    for c in result.chunks:
        if not c.geom:
            # the chunker takes boxes from the elements; table cells whose tool gives no cell boxes
            # have none, so chunks made only of such cells are the only box-less ones
            cells = [index[e] for e in c.metadata["element_ids"]]
            assert cells and all(n.type == T.TABLE_CELL and not n.geom for n in cells), c.id
        assert all(1 <= b.page <= page_count for b in c.geom)
        assert doc.text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body
        assert c.metadata["token_count"] <= max_tokens
    return result.chunks
