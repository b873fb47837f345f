"""Highlight annotations and PNG renders built from real text positions of a real two-column PDF."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from grounded.attribution import (
    DEFAULT_COLOR,
    HEADING_COLOR,
    AttributionError,
    highlight,
    render,
    render_pages,
    render_to_files,
)
from grounded.attribution.geometry import FURNITURE_BOXES_KEY, chunk_boxes
from grounded.cli.main import main
from grounded.errors import GroundedError, InputError, InputNotFoundError, NotAPDFError
from grounded.model import Chunk, ChunkingResult, ParsingBoundingBox
from grounded.serialization import save_chunking_result, write_chunks_jsonl

# the end of page 1 (right column) continues at the top of page 2 (left column) in clinsci
P1_TAIL = "There are a number of ACE inhibitors"
P2_HEAD = "allows for effective reduction in blood pressure"


# -- helpers: chunk boxes from the PDF's own text layer ---------------------------------------------
def _block(page: pymupdf.Page, prefix: str) -> dict:
    for block in page.get_text("dict")["blocks"]:
        lines = block.get("lines", ())
        text = " ".join("".join(s["text"] for s in ln["spans"]) for ln in lines)
        if text.startswith(prefix):
            return block
    raise AssertionError(f"no block starting with {prefix!r} on page {page.number + 1}")


def _displayed(page: pymupdf.Page, unrotated: pymupdf.Rect, heading: bool = False) -> ParsingBoundingBox:
    """Unrotated page points (PyMuPDF text coordinates) -> fractions of the displayed page."""
    r = pymupdf.Rect(unrotated) * page.rotation_matrix
    return ParsingBoundingBox.from_points(page.number + 1, r.x0, r.y0, r.x1, r.y1, page.rect.width,
                                          page.rect.height, is_heading=heading)


def block_box(page: pymupdf.Page, prefix: str, *, heading: bool = False, max_lines: int | None = None) -> ParsingBoundingBox:
    """The block's line boxes as spans of one chunk box (what the chunker emits)."""
    lines = _block(page, prefix)["lines"][:max_lines]
    spans = [_displayed(page, pymupdf.Rect(ln["bbox"]), heading) for ln in lines]
    return ParsingBoundingBox.enclosing(spans, spans=spans, mode="line", element_id=f"p{page.number + 1}", is_heading=heading)


def words_of(page: pymupdf.Page, prefix: str, max_lines: int | None = None) -> list[str]:
    lines = _block(page, prefix)["lines"][:max_lines]
    return " ".join("".join(s["text"] for s in ln["spans"]) for ln in lines).split()


@dataclass
class Seen:
    """What a reopened annotation shows (copied out: PyMuPDF annots die with their page object)."""

    info: dict
    rect: pymupdf.Rect
    vertices: list
    stroke: tuple
    text: str  # page text inside the annotation rectangle


def annots(doc: pymupdf.Document, kind: str = "Highlight") -> dict[int, list[Seen]]:
    out: dict[int, list[Seen]] = {}
    for page in doc:
        found = [
            Seen(dict(a.info), pymupdf.Rect(a.rect), list(a.vertices or []), tuple(a.colors["stroke"] or ()),
                 " ".join(page.get_text("text", clip=a.rect).split()))
            for a in page.annots()
            if a.type[1] == kind
        ]
        if found:
            out[page.number + 1] = found
    return out


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def clinsci(clinsci_pdf: Path):
    with pymupdf.open(clinsci_pdf) as doc:
        yield doc


@pytest.fixture(scope="module")
def cross_page_chunk(clinsci) -> Chunk:
    geom = [block_box(clinsci[0], P1_TAIL), block_box(clinsci[1], P2_HEAD)]
    return Chunk("cross-1", "ACE inhibitors ... adverse drug effects", {"heading_path": ["INTRODUCTION"]}, geom)


@pytest.fixture(scope="module")
def intro_chunk(clinsci) -> Chunk:
    """A heading box (prepended section title) plus the first paragraph of the introduction."""
    page = clinsci[0]
    geom = [block_box(page, "INTRODUCTION", heading=True), block_box(page, "ACE (angiotensin-1-converting enzyme; EC")]
    return Chunk("intro-1", "INTRODUCTION\n\nACE (angiotensin-1-converting enzyme ...", {"body_start": 14}, geom)


# -- highlight ---------------------------------------------------------------------------------------
def test_highlight_marks_the_chunk_lines_on_its_page(clinsci_pdf, clinsci, intro_chunk, tmp_path):
    before = sha(clinsci_pdf)
    out = highlight(clinsci_pdf, [intro_chunk], tmp_path / "out.pdf")
    assert out == tmp_path / "out.pdf" and sha(clinsci_pdf) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.pdf"]  # atomic: no temp file left
    with pymupdf.open(out) as doc:
        found = annots(doc)
        assert list(found) == [1]
        body = next(a for a in found[1] if a.info["subject"] == "grounded chunk")
        head = next(a for a in found[1] if a.info["subject"] == "grounded heading")
        assert body.info["title"] == head.info["title"] == "intro-1"
        text = body.text
        assert " ".join(words_of(clinsci[0], "ACE (angiotensin-1-converting enzyme; EC")[:12]) in text
        assert "INTRODUCTION" in head.text and "INTRODUCTION" not in text
        # one quad per line span
        assert len(body.vertices) == 4 * len(intro_chunk.geom[1].spans)
        assert body.stroke == pytest.approx(DEFAULT_COLOR, abs=0.01)
        assert head.stroke == pytest.approx(HEADING_COLOR, abs=0.01)
        labels = annots(doc, "FreeText")
        assert [a.info["content"] for a in labels[1]] == ["[1]"]


def test_chunk_spanning_two_pages_is_highlighted_on_both(clinsci_pdf, clinsci, cross_page_chunk):
    data = highlight(clinsci_pdf, cross_page_chunk)
    assert isinstance(data, bytes)
    with pymupdf.open("pdf", data) as doc:
        found = annots(doc)
        assert sorted(found) == [1, 2]
        assert all(a.info["title"] == "cross-1" for page in found.values() for a in page)
        assert "There are a number of ACE inhibitors that have been ap" in found[1][0].text
        assert "allows for effective reduction in blood pressure, adverse drug" in found[2][0].text
        assert "pages 1, 2" in found[1][0].info["content"]


def test_highlight_several_chunks_with_custom_labels(clinsci_pdf, intro_chunk, cross_page_chunk):
    data = highlight(clinsci_pdf, ChunkingResult([intro_chunk, cross_page_chunk]), label=lambda c, n: f"{c.id}#{n}")
    with pymupdf.open("pdf", data) as doc:
        labels = {a.info["content"] for page in annots(doc, "FreeText").values() for a in page}
        assert labels == {"intro-1#1", "cross-1#2"}
    with pymupdf.open("pdf", highlight(clinsci_pdf, intro_chunk, label=False)) as doc:
        assert not annots(doc, "FreeText")


def test_labels_of_chunks_starting_on_the_same_line_do_not_overlap(clinsci_pdf, intro_chunk):
    twins = [Chunk(f"twin-{i}", "x", {}, intro_chunk.geom) for i in range(3)]
    with pymupdf.open("pdf", highlight(clinsci_pdf, twins)) as doc:
        labels = annots(doc, "FreeText")[1]
        assert [a.info["content"] for a in labels] == ["[1]", "[2]", "[3]"]
        for i, a in enumerate(labels):
            assert all(not a.rect.intersects(b.rect) for b in labels[i + 1 :])
            assert a.rect.x1 < intro_chunk.geom[0].left * doc[0].rect.width  # in the left margin


def test_box_without_spans_is_highlighted_as_a_whole(clinsci_pdf, clinsci):
    page = clinsci[1]
    block = _block(page, P2_HEAD)
    box = _displayed(page, pymupdf.Rect(block["bbox"]))
    with pymupdf.open("pdf", highlight(clinsci_pdf, Chunk("el", "x", {}, [box]))) as doc:
        (annot,) = annots(doc)[2]
        assert len(annot.vertices) == 4
        assert annot.rect.contains(pymupdf.Rect(block["bbox"]) + (1, 1, -1, -1))
        assert "Thus selective inhibition" in annot.text


CROP = pymupdf.Rect(40, 60, 560, 760)  # a crop box that does not start at the media box origin


def _rotated_copy(src: Path, out: Path, rotation: int, crop: bool) -> Path:
    with pymupdf.open(src) as doc:
        doc.select([0, 1])
        if crop:
            doc[1].set_cropbox(CROP)
        doc[1].set_rotation(rotation)
        doc.save(out)
    return out


def test_render_leaves_out_a_page_that_holds_only_the_prepended_heading(clinsci_pdf, clinsci):
    """Pages follow the body (issue 42 item 1): a chunk whose section heading sits at the foot of
    page 1 and whose body is on page 2 renders page 2 only -- no crop of the heading alone -- while
    a heading on the body's page is still drawn; a chunk of headings only still renders."""
    heading = block_box(clinsci[0], "INTRODUCTION", heading=True)
    body = block_box(clinsci[1], P2_HEAD)
    chunk = Chunk("heading-elsewhere", "INTRODUCTION\n\nA later paragraph", {"body_start": 14}, [heading, body])
    assert chunk.pages == [2]
    assert [p for p, _ in render_pages(clinsci_pdf, chunk, dpi=50)] == [2]
    both = Chunk("intro-2", "INTRODUCTION\n\nACE ...", {"body_start": 14},
                 [heading, block_box(clinsci[0], "ACE (angiotensin-1-converting enzyme; EC")])
    with_heading = _pixels(render_pages(clinsci_pdf, both, dpi=72)[0][1])
    without = _pixels(render_pages(clinsci_pdf, Chunk("b", "ACE ...", {}, both.geom[1:]), dpi=72)[0][1])
    region = _px(heading.spans[0] if heading.spans else heading, with_heading.shape)
    assert np.abs(with_heading[region].astype(int) - without[region].astype(int)).mean() > 5  # the heading is drawn
    only_heading = Chunk("h", "INTRODUCTION", {}, [heading])
    assert [p for p, _ in render_pages(clinsci_pdf, only_heading, dpi=50)] == [1]


@pytest.mark.parametrize("crop", [False, True], ids=["mediabox", "cropbox"])
@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotated_page_highlight_covers_the_same_words(clinsci_pdf, tmp_path, rotation, crop):
    src = _rotated_copy(clinsci_pdf, tmp_path / "rot.pdf", rotation, crop)
    with pymupdf.open(src) as doc:
        page = doc[1]
        box = block_box(page, P2_HEAD)
        line_rects = [pymupdf.Rect(ln["bbox"]) for ln in _block(page, P2_HEAD)["lines"]]
        expected = words_of(page, P2_HEAD)
        if rotation in (90, 270):
            assert box.width < box.height  # the displayed page is landscape: the column runs across it
    with pymupdf.open("pdf", highlight(src, Chunk("rot", "x", {}, [box]), label=False)) as doc:
        page = doc[1]
        (annot,) = annots(doc)[2]
        assert " ".join(expected[:10]) in annot.text and " ".join(expected[-5:]) in annot.text
        # each quad sits exactly on its text line (unrotated page space)
        quads = [pymupdf.Quad(annot.vertices[i : i + 4]).rect for i in range(0, len(annot.vertices), 4)]
        assert len(quads) == len(line_rects)
        for q, r in zip(quads, line_rects, strict=True):
            assert abs(q.x0 - r.x0) < 0.5 and abs(q.y0 - r.y0) < 0.5 and abs(q.x1 - r.x1) < 0.5 and abs(q.y1 - r.y1) < 0.5
        # and a viewer shows the highlight where the chunk box is on the displayed page
        img = _pixels(page.get_pixmap(dpi=72).tobytes("png"))
        tinted = _tinted(img)
        assert tinted[_px(box.spans[0], img.shape)].mean() > 0.3
        assert tinted.sum() < 1.5 * box.area * img.shape[0] * img.shape[1]


def test_box_on_a_missing_page_is_a_typed_error_and_writes_nothing(clinsci_pdf, intro_chunk, tmp_path):
    bad = Chunk("ghost", "x", {}, [*intro_chunk.geom, ParsingBoundingBox(14, 0.1, 0.1, 0.5, 0.2)])
    out = tmp_path / "never.pdf"
    with pytest.raises(AttributionError) as err:
        highlight(clinsci_pdf, [intro_chunk, bad], out)
    assert isinstance(err.value, InputError) and isinstance(err.value, GroundedError)
    message = str(err.value)
    assert str(clinsci_pdf) in message and "'ghost'" in message and "page 14" in message and "13 page" in message
    assert not out.exists() and not list(tmp_path.iterdir())
    with pytest.raises(AttributionError):
        render(clinsci_pdf, bad)


def test_bad_pdf_inputs_are_typed_errors(tmp_path, intro_chunk):
    with pytest.raises(InputNotFoundError, match="missing.pdf"):
        highlight(tmp_path / "missing.pdf", intro_chunk)
    text = tmp_path / "notes.pdf"
    text.write_text("just some text, not a PDF")
    with pytest.raises(NotAPDFError, match="notes.pdf"):
        render(text, intro_chunk)
    with pytest.raises(TypeError):
        highlight(text, ["not a chunk"])  # type: ignore[list-item]


def test_chunk_without_boxes_warns_in_highlight_and_fails_in_render(clinsci_pdf):
    empty = Chunk("nobox", "text without boxes", {}, [])
    with pytest.warns(UserWarning, match="nobox"):
        highlight(clinsci_pdf, empty)
    with pytest.raises(AttributionError, match="nobox"):
        render(clinsci_pdf, empty)


# -- render ------------------------------------------------------------------------------------------
def _pixels(png: bytes) -> np.ndarray:
    pix = pymupdf.Pixmap(png)
    assert pix.n == 3 and not pix.alpha
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, 3)


def _tinted(rgb: np.ndarray) -> np.ndarray:
    """Pixels where the yellow fill shows (background: red/green high, blue clearly lower)."""
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    return (r > 200) & (g > 170) & (b < r - 40)


def _px(box: ParsingBoundingBox, shape: tuple[int, ...]) -> tuple[slice, slice]:
    h, w = shape[:2]
    return slice(int(box.top * h) + 1, int(box.bottom * h) - 1), slice(int(box.left * w) + 1, int(box.right * w) - 1)


def test_render_draws_translucent_boxes_at_the_right_size(clinsci_pdf, clinsci, intro_chunk):
    dpi = 110
    (png,) = render(clinsci_pdf, intro_chunk, dpi=dpi)
    img = _pixels(png)
    page = clinsci[0]
    assert img.shape[1] == pytest.approx(page.rect.width * dpi / 72, abs=1)
    assert img.shape[0] == pytest.approx(page.rect.height * dpi / 72, abs=1)
    body = intro_chunk.geom[1]
    inside = img[_px(body.spans[0], img.shape)]
    assert _tinted(inside).mean() > 0.3  # background of the first line shows the fill
    assert (inside.min(axis=2) < 90).any()  # the text is still visible through it
    plain = _pixels(page.get_pixmap(dpi=dpi).tobytes("png"))
    assert not _tinted(plain[_px(body.spans[0], img.shape)]).any()
    # the rest of the page is untouched (e.g. the abstract above the chunk)
    above = slice(0, int(intro_chunk.geom[0].top * img.shape[0]) - 4)
    assert np.array_equal(img[above], plain[above])


def test_render_one_png_per_page_in_reading_order_and_crop(clinsci_pdf, cross_page_chunk, clinsci):
    pages = render_pages(clinsci_pdf, cross_page_chunk, dpi=72)
    assert [p for p, _ in pages] == [1, 2]
    for (number, png), box in zip(pages, cross_page_chunk.geom, strict=True):
        img = _pixels(png)
        assert img.shape[0] == pytest.approx(clinsci[number - 1].rect.height, abs=1)
        assert img.shape[1] == pytest.approx(clinsci[number - 1].rect.width, abs=1)
        assert _tinted(img[_px(box.spans[0], img.shape)]).mean() > 0.3
    cropped = render(clinsci_pdf, cross_page_chunk, dpi=144, crop=True, margin=10)
    box = cross_page_chunk.geom[1]
    page = clinsci[1]
    img = _pixels(cropped[1])
    assert img.shape[1] == pytest.approx((box.width * page.rect.width + 2 * 11) * 2, abs=3)
    assert img.shape[0] == pytest.approx((box.height * page.rect.height + 2 * 11) * 2, abs=3)
    assert _tinted(img).mean() > 0.2


@pytest.mark.parametrize("crop", [False, True], ids=["mediabox", "cropbox"])
@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_render_rotated_page_tints_the_displayed_box(clinsci_pdf, tmp_path, rotation, crop):
    src = _rotated_copy(clinsci_pdf, tmp_path / "rot.pdf", rotation, crop)
    with pymupdf.open(src) as doc:
        box = block_box(doc[1], P2_HEAD)
        size = doc[1].rect
    (png,) = render(src, Chunk("r", "x", {}, [box]), dpi=72)
    img = _pixels(png)
    assert img.shape[:2] == pytest.approx((size.height, size.width), abs=1)
    tinted = _tinted(img)
    assert tinted[_px(box, img.shape)].mean() > 0.3
    assert tinted.sum() < 1.5 * (box.area * img.shape[0] * img.shape[1])  # nowhere else


def test_render_to_files_names_pages(clinsci_pdf, cross_page_chunk, tmp_path):
    paths = render_to_files(clinsci_pdf, cross_page_chunk, tmp_path / "answer.png", dpi=40)
    assert [p.name for p in paths] == ["answer-p1.png", "answer-p2.png"]
    assert all(pymupdf.Pixmap(str(p)).width > 0 for p in paths)


def test_render_rejects_bad_parameters(clinsci_pdf, intro_chunk):
    with pytest.raises(ValueError, match="dpi"):
        render(clinsci_pdf, intro_chunk, dpi=0)
    with pytest.raises(ValueError, match="colour"):
        render(clinsci_pdf, intro_chunk, color="#12")
    with pytest.raises(AttributionError, match="Mpx"):
        render(clinsci_pdf, intro_chunk, dpi=2400)


# -- CLI ---------------------------------------------------------------------------------------------
@pytest.fixture()
def chunks_file(tmp_path, intro_chunk, cross_page_chunk) -> Path:
    return write_chunks_jsonl(ChunkingResult([intro_chunk, cross_page_chunk], {"strategy": "test"}), tmp_path / "c.jsonl")


def test_cli_highlight_pdf_all_and_selected_chunks(clinsci_pdf, chunks_file, tmp_path, capsys):
    out = tmp_path / "all.pdf"
    assert main(["highlight", str(clinsci_pdf), str(chunks_file), "-o", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    with pymupdf.open(out) as doc:
        assert {a.info["title"] for page in annots(doc).values() for a in page} == {"intro-1", "cross-1"}
    json_file = save_chunking_result(ChunkingResult([]), tmp_path / "empty.json")
    assert main(["highlight", str(clinsci_pdf), str(json_file), "-o", str(tmp_path / "e.pdf")]) == 1
    one = tmp_path / "one.pdf"
    assert main(["highlight", str(clinsci_pdf), str(chunks_file), "--chunk", "cross-1", "-o", str(one), "--no-label"]) == 0
    with pymupdf.open(one) as doc:
        assert sorted(annots(doc)) == [1, 2] and not annots(doc, "FreeText")


def test_cli_png_output_first_page_under_the_given_name(clinsci_pdf, chunks_file, cross_page_chunk, tmp_path, capsys):
    """``-o view.png``: the first page is view.png itself, further pages view-p<page>.png; stdout names
    each file with its page (issue 34.6: it wrote view-p1.png, not the file asked for)."""
    out = tmp_path / "view.png"
    code = main(["highlight", str(clinsci_pdf), str(chunks_file), "-c", "cross-1", "-o", str(out), "--dpi", "50", "--crop"])
    assert code == 0
    assert sorted(p.name for p in tmp_path.glob("view*.png")) == ["view-p2.png", "view.png"]
    assert capsys.readouterr().out == f"1 chunk(s) on 2 page(s) -> {out} (page 1), {tmp_path / 'view-p2.png'} (page 2)\n"
    (p1, png1), (p2, png2) = render_pages(clinsci_pdf, cross_page_chunk, 50, crop=True)
    assert (p1, p2) == (1, 2) and out.read_bytes() == png1 and (tmp_path / "view-p2.png").read_bytes() == png2
    one = tmp_path / "one.png"  # a chunk on one page: that page is the file asked for, nothing else
    assert main(["highlight", str(clinsci_pdf), str(chunks_file), "-c", "intro-1", "-o", str(one), "--dpi", "30"]) == 0
    assert sorted(p.name for p in tmp_path.glob("one*")) == ["one.png"]
    assert capsys.readouterr().out.endswith(f"-> {one} (page 1)\n")


def test_cli_missing_chunk_id_fails_with_one_line(clinsci_pdf, chunks_file, tmp_path, capsys):
    out = tmp_path / "x.pdf"
    code = main(["highlight", str(clinsci_pdf), str(chunks_file), "--chunk", "intro-1", "nope-7", "-o", str(out)])
    assert code == 1 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'nope-7'" in err and str(chunks_file) in err


def test_cli_bad_inputs(clinsci_pdf, chunks_file, tmp_path, capsys):
    assert main(["highlight", str(tmp_path / "no.pdf"), str(chunks_file), "-o", str(tmp_path / "o.pdf")]) == 1
    assert "no.pdf" in capsys.readouterr().err
    assert main(["highlight", str(clinsci_pdf), str(chunks_file), "-o", str(tmp_path / "o.txt")]) == 1
    assert ".pdf" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["highlight", str(clinsci_pdf), str(chunks_file), "--color", "yellow"])
    assert exc.value.code == 2


def test_sample_guideline_table_chunk_is_highlighted_across_the_page_break(tmp_path):
    from grounded.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    geom = []
    with pymupdf.open(pdf) as doc:
        for page in doc:
            for table in page.find_tables().tables:
                spans = [_displayed(page, pymupdf.Rect(row.bbox)) for row in table.rows]
                geom.append(ParsingBoundingBox.enclosing(spans, spans=spans, mode="element"))
    assert len(geom) == 2 and geom[1].page == geom[0].page + 1
    with pymupdf.open("pdf", highlight(pdf, Chunk("table-1", "Table 1", {}, geom))) as doc:
        found = annots(doc)
        assert sorted(found) == [geom[0].page, geom[1].page]
        first, second = (found[p][0] for p in sorted(found))
        assert first.text.startswith("Subtype") and second.text.startswith("Subtype")  # repeated header row
        assert "Add bisphosphonate (zoledronic acid)" in second.text


def test_cli_box_on_a_missing_page_names_the_chunks_file(clinsci_pdf, intro_chunk, tmp_path, capsys):
    """The bad box is in the chunks file: the one-line error names that file, the chunk and the PDF."""
    bad = Chunk("ghost", "x", {}, [ParsingBoundingBox(14, 0.1, 0.1, 0.5, 0.2)])
    chunks = write_chunks_jsonl(ChunkingResult([intro_chunk, bad], {"strategy": "test"}), tmp_path / "c.jsonl")
    out = tmp_path / "never.pdf"
    assert main(["highlight", str(clinsci_pdf), str(chunks), "-o", str(out), "--force"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"grounded highlight: error: {chunks}: chunk 'ghost' has a box on page 14"), err
    assert f"{clinsci_pdf} has 13 page(s)" in err and not out.exists()


def test_page_furniture_found_by_grounding_is_highlighted_too(clinsci_pdf, clinsci, intro_chunk, tmp_path):
    """A grounded third-party chunk that holds a running header keeps it in
    ``grounding_furniture_boxes`` (outside the tree): highlight and render draw it with the chunk."""
    with pymupdf.open(clinsci_pdf) as doc:
        words = doc[1].get_text("words")
    top = min(words, key=lambda w: w[1])  # the topmost word of page 2: its running header
    with pymupdf.open(clinsci_pdf) as doc:
        w, h = doc[1].rect.width, doc[1].rect.height
    row = [2, top[0] / w, top[1] / h, top[2] / w, top[3] / h]
    chunk = Chunk("with-header", intro_chunk.content, {FURNITURE_BOXES_KEY: [row]}, list(intro_chunk.geom))
    assert [b.page for b in chunk_boxes(chunk, "x")] == [b.page for b in intro_chunk.geom] + [2]
    out = tmp_path / "h.pdf"
    highlight(clinsci_pdf, [chunk], out)
    with pymupdf.open(out) as doc:
        seen = annots(doc)
    assert top[4] in " ".join(s.text for s in seen[2]) and all(s.info["title"] == "with-header" for s in seen[2])
    furniture_only = Chunk("header-only", "x", {FURNITURE_BOXES_KEY: [row]}, [])
    assert [number for number, _ in render_pages(clinsci_pdf, furniture_only)] == [2]
    for bad in ([[2, 0.1, 0.1, 0.2]], [[0, 0.1, 0.1, 0.2, 0.2]], [[2, 0.5, 0.1, 0.2, 0.2]], "rows", [[True, 0, 0, 1, 1]]):
        with pytest.raises(AttributionError, match=f"'bad': {FURNITURE_BOXES_KEY}"):
            highlight(clinsci_pdf, [Chunk("bad", "x", {FURNITURE_BOXES_KEY: bad}, list(intro_chunk.geom))])
