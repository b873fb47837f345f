"""Element boxes vs layout boxes, pictures and table notes (#13.5): box growth per class, a scan
stored as image strips is one picture, stacked sub-figure panels stay apart, table footnotes
follow their table as footnotes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from grounded.model import ParsingResult, ParsingResultType
from grounded.parsers.backends.pymupdf import tree as pymupdf_tree
from grounded.parsers.backends.pymupdf.layout import _layout_pages
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from tests.support.data import shared

T = ParsingResultType


def _points(node: ParsingResult, page: pymupdf.Page) -> tuple[float, float, float, float]:
    return node.geom[0].to_points(page.rect.width, page.rect.height)


def _top_level(root: ParsingResult, page: int = 1) -> list[ParsingResult]:
    return [n for n in root.children if n.geom and n.geom[0].page == page] + [
        d for n in root.children if not n.geom for d in n.children if d.geom and d.geom[0].page == page
    ]


def _flat(root: ParsingResult) -> list[ParsingResult]:
    """Elements in reading order, section nesting flattened (tables and lists kept whole)."""
    out: list[ParsingResult] = []
    for n in root.children:
        out.append(n)
        if n.type in (T.SECTION_HEADER, T.TITLE):
            out.extend(_flat(n))
    return out


# -- box growth per class ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def heading_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("growth") / "heading.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 90), "1 Introduction", fontsize=16, fontname="hebo")
        body = "Layout boxes and line boxes differ by the font's ascender and descender. " * 6
        page.insert_textbox(pymupdf.Rect(72, 110, 540, 300), body, fontsize=10)
        page.insert_text((72, 340), "2 Methods", fontsize=16, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 360, 540, 500), body, fontsize=10)
        doc.save(path)
    return path


def test_growth_policy_keeps_or_grows_the_layout_box(heading_page, monkeypatch):
    (layout,) = _layout_pages(heading_page, [0])
    model_boxes = [(b.x0, b.y0, b.x1, b.y1) for b in layout.boxes if b.boxclass == "section-header"]
    assert len(model_boxes) == 2
    with pymupdf.open(heading_page) as doc:
        page = doc[0]
        grown = [n for n in _flat(PyMuPDFParser().parse(heading_page)) if n.type == T.SECTION_HEADER]
        monkeypatch.setitem(pymupdf_tree.BOX_GROWTH, T.SECTION_HEADER, "layout")
        kept = [n for n in _flat(PyMuPDFParser().parse(heading_page)) if n.type == T.SECTION_HEADER]
        monkeypatch.setitem(pymupdf_tree.BOX_GROWTH, T.SECTION_HEADER, "width")
        sideways = [n for n in _flat(PyMuPDFParser().parse(heading_page)) if n.type == T.SECTION_HEADER]
        for g, k, s, model in zip(grown, kept, sideways, model_boxes, strict=True):
            assert _points(k, page) == pytest.approx(model, abs=1e-3)  # the model's box as is
            gx0, gy0, gx1, gy1 = _points(g, page)
            for span in g.geom[0].spans:  # grown: encloses its lines at full height
                sx0, sy0, sx1, sy1 = span.to_points(page.rect.width, page.rect.height)
                assert gx0 <= sx0 + 1e-6 and gy0 <= sy0 + 1e-6 and sx1 <= gx1 + 1e-6 and sy1 <= gy1 + 1e-6
            assert (gy0, gy1) != pytest.approx((model[1], model[3]), abs=0.05)  # the line height differs
            sx0, sy0, sx1, sy1 = _points(s, page)  # sideways only: the model's top and bottom
            assert (sy0, sy1) == pytest.approx((model[1], model[3]), abs=1e-3)
            assert (sx0, sx1) == pytest.approx((gx0, gx1), abs=1e-3)
            assert k.geom[0].spans and k.content == g.content  # text and line spans unchanged


def test_growth_policy_names_a_known_mode():
    assert set(pymupdf_tree.BOX_GROWTH.values()) <= {"grow", "width", "layout"}


# -- a scan stored as horizontal image strips ----------------------------------------------------


def _scan(height: int = 1200, width: int = 1000) -> np.ndarray:
    rng = np.random.default_rng(0)
    img = np.full((height, width), 235, dtype=np.uint8)
    for y in range(60, height - 60, 40):
        for x in range(60, width - 60, 120):
            img[y : y + 14, x : x + int(rng.integers(40, 110))] = 40
    return img


def build_strips(path: Path, strips: int, gap: float = 0.0) -> tuple[float, float, float, float]:
    """A page whose scan is stored as ``strips`` stacked images (``gap`` points apart); returns the
    area they cover."""
    img = _scan()
    x0, y0, x1, y1 = 56.0, 60.0, 556.0, 560.0
    step, height = img.shape[0] // strips, (y1 - y0 - gap * (strips - 1)) / strips
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        for k in range(strips):
            part = np.ascontiguousarray(img[k * step : (k + 1) * step])
            pix = pymupdf.Pixmap(pymupdf.csGRAY, part.shape[1], part.shape[0], part.tobytes(), False)
            top = y0 + k * (height + gap)
            page.insert_image(pymupdf.Rect(x0, top, x1, top + height), pixmap=pix, keep_proportion=False)
        page.insert_text((56, 576), "Figure 1. A scanned page.", fontsize=9)
        body = "The record above was scanned at the clinic and stored by the scanner in strips. " * 5
        page.insert_textbox(pymupdf.Rect(56, 600, 556, 700), body, fontsize=10)
        doc.save(path)
    return x0, y0, x1, y1


def test_image_strips_become_one_picture(tmp_path):
    path = tmp_path / "strips.pdf"
    area = build_strips(path, 15)
    root = PyMuPDFParser().parse(path)
    figures = [n for n in root.walk() if n.type == T.FIGURE]
    assert len(figures) == 1
    assert figures[0].metadata["image_strips"] == 15
    with pymupdf.open(path) as doc:
        assert _points(figures[0], doc[0]) == pytest.approx(area, abs=1.0)
    assert "stored by the scanner in strips" in "\n".join(n.content for n in root.walk())


def test_separated_images_stay_separate_pictures(tmp_path):
    path = tmp_path / "apart.pdf"
    build_strips(path, 3, gap=30.0)
    figures = [n for n in PyMuPDFParser().parse(path).walk() if n.type == T.FIGURE]
    assert len(figures) == 3
    assert all("image_strips" not in f.metadata for f in figures)


# -- stacked sub-figure panels (vector graphics) -------------------------------------------------


def build_panels(path: Path, gap: float, frame: bool = False) -> list[pymupdf.Rect]:
    """Three stacked plot panels drawn as vector paths with axis labels and sub-captions; with
    ``frame`` one rectangle around all of them (one figure). Returns the panels' frames."""
    frames = []
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        page.insert_textbox(pymupdf.Rect(72, 60, 540, 120), "The panels below show the curves. " * 5, fontsize=10)
        y = 130.0
        for k in range(3):
            r = pymupdf.Rect(100, y, 510, y + 140)
            frames.append(r)
            page.draw_rect(r, color=(0, 0, 0), width=0.8)
            curve = [pymupdf.Point(100 + i * 4.1, y + 70 - 50 * math.sin(i / (6 + 3 * k))) for i in range(100)]
            page.draw_polyline(curve, color=(0.8, 0.1, 0.2), width=1.2)
            for i in range(0, 410, 50):
                page.insert_text((100 + i, y + 150), str(i), fontsize=6)
            page.insert_text((100, y + 166), f"({'abc'[k]}) Setting {k + 1}: response over time.", fontsize=9)
            y += 170 + gap
        if frame:
            page.draw_rect(pymupdf.Rect(90, 120, 520, y - gap + 4), color=(0, 0, 0), width=0.5)
        page.insert_textbox(pymupdf.Rect(72, y, 540, y + 40), "Figure 2. Responses (a-c).", fontsize=9)
        doc.save(path)
    return frames


def _holding(figures: list[ParsingResult], frame: pymupdf.Rect, page: pymupdf.Page) -> list[ParsingResult]:
    out = []
    for f in figures:
        x0, y0, x1, y1 = _points(f, page)
        if x0 - 2 <= frame.x0 and y0 - 2 <= frame.y0 and frame.x1 <= x1 + 2 and frame.y1 <= y1 + 2:
            out.append(f)
    return out


def test_separated_panels_stay_separate(tmp_path):
    path = tmp_path / "panels.pdf"
    frames = build_panels(path, gap=24)
    figures = [n for n in PyMuPDFParser().parse(path).walk() if n.type == T.FIGURE]
    with pymupdf.open(path) as doc:
        for frame in frames:  # each panel lies whole in exactly one picture, alone
            (holder,) = _holding(figures, frame, doc[0])
            assert sum(1 for other in frames if _holding([holder], other, doc[0])) == 1


def test_framed_panels_stay_one_figure(tmp_path):
    path = tmp_path / "framed.pdf"
    frames = build_panels(path, gap=24, frame=True)
    figures = [n for n in PyMuPDFParser().parse(path).walk() if n.type == T.FIGURE]
    assert not any("panel" in f.metadata for f in figures)
    with pymupdf.open(path) as doc:
        assert all(len(_holding(figures, frame, doc[0])) == 1 for frame in frames)


# -- table footnotes ------------------------------------------------------------------------------


def build_table_with_notes(path: Path) -> None:
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        body = "Patients were enrolled in three centres and followed for twelve months. " * 4
        page.insert_textbox(pymupdf.Rect(72, 60, 540, 140), body, fontsize=10)
        page.insert_text((72, 160), "Table 1. Outcomes by centre.", fontsize=10)
        rows = [("Centre", "Patients", "Events", "Rate"), ("North", "120", "14", "11.7%"),
                ("South", "98", "9*", "9.2%"), ("East", "143", "n.d.", "-"), ("Total", "361", "23", "8.5%")]
        y = 172.0
        for row in rows:
            for c, text in enumerate(row):
                page.insert_text((80 + 110 * c, y + 12), text, fontsize=9)
            page.draw_line((72, y), (520, y))
            y += 18
        page.draw_line((72, y), (520, y))
        page.insert_text((72, y + 12), "* Two events were adjudicated after the data lock.", fontsize=7)
        page.insert_text((72, y + 22), "n.d., not determined. Source: trial registry, 2020.", fontsize=7)
        page.insert_textbox(pymupdf.Rect(72, y + 50, 540, y + 140), body, fontsize=10)
        doc.save(path)


def test_table_notes_are_footnotes_after_their_table(tmp_path):
    path = tmp_path / "notes.pdf"
    build_table_with_notes(path)
    elements = _flat(PyMuPDFParser().parse(path))
    types = [n.type for n in elements]
    t = types.index(T.TABLE)
    notes = elements[t + 1 : t + 1 + sum(1 for n in elements if n.metadata.get("table_note"))]
    assert notes and all(n.type == T.FOOTNOTE and n.metadata["table_note"] for n in notes)
    text = " ".join(n.content for n in notes)
    assert "Two events were adjudicated" in text and "Source: trial registry" in text
    after = elements[t + 1 + len(notes) :]
    assert after and after[0].type == T.PARAGRAPH and after[0].content.startswith("Patients were enrolled")


def _pages_of(src: Path, pages: list[int], out: Path) -> Path:
    with pymupdf.open(src) as doc, pymupdf.open() as part:
        for p in pages:
            part.insert_pdf(doc, from_page=p - 1, to_page=p - 1)
        part.save(out)
    return out


@pytest.mark.parametrize(
    ("name", "pages", "notes"),
    [
        ("cermine_test6_peerjcs118.pdf", [3], ["Notes.", "aIndicates phases of VESPA"]),
        ("cermine_test6_peerjcs118.pdf", [11], ["Notes.", "*False positives."]),
        ("cermine_web_example3_clinsci.pdf", [5], ["∗Not determined in the study"]),
    ],
)
def test_shared_table_notes_follow_their_table(tmp_path, name, pages, notes):
    path = _pages_of(shared("long", name), pages, tmp_path / f"{Path(name).stem}.pdf")
    elements = _flat(PyMuPDFParser().parse(path))
    t = next(i for i, n in enumerate(elements) if n.type == T.TABLE)
    following = elements[t + 1 : t + 1 + len(notes)]
    assert [n.type for n in following] == [T.FOOTNOTE] * len(notes)
    for node, start in zip(following, notes, strict=True):
        assert node.content.startswith(start) and node.metadata["table_note"]
    body = [n for n in elements if n.type == T.PARAGRAPH]
    assert body and not any(n.metadata.get("table_note") for n in body)  # body text stays body text
