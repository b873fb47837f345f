"""The default pymupdf parser on real PDFs (real layout model, real text layer; offline)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pymupdf
import pytest
import yaml

from grounded.model import TEXT_TYPES, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import get_parser, map_label
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.base import ParseOutput
from grounded.parsers.pdf_input import NoTextLayerWarning
from grounded.serialization import load_parsing_result
from tests.support.data import DOCLING_GT_PDFS, LONG_PDFS, shared


class _Runs:
    """``PyMuPDFParser().run(pdf)`` once per PDF for this module, with the warnings the parse gave:
    the reference document, the header-level PDFs and the every-shared-PDF check read the same
    default parse (each was parsed two or three times before)."""

    def __init__(self) -> None:
        self._done: dict[Path, tuple[ParseOutput, list[warnings.WarningMessage]]] = {}

    def __call__(self, pdf: Path) -> tuple[ParseOutput, list[warnings.WarningMessage]]:
        pdf = Path(pdf).resolve()
        if pdf not in self._done:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = PyMuPDFParser().run(pdf)
            self._done[pdf] = (out, list(caught))
        return self._done[pdf]


@pytest.fixture(scope="module")
def runs() -> _Runs:
    return _Runs()


def _user_warnings(caught: list[warnings.WarningMessage], category: type[Warning] = UserWarning) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, category)]


@pytest.fixture(scope="module")
def clinsci(runs: _Runs):
    """(parse output, pdf path) for the issue's reference document, parsed once."""
    path = shared("long", "cermine_web_example3_clinsci.pdf")
    return runs(path)[0], path


def _text_nodes(root: ParsingResult) -> list[ParsingResult]:
    return [n for n in root.walk() if n.type in TEXT_TYPES and n.content.strip()]


# -- label mapping ------------------------------------------------------------------------------


def test_label_map_covers_every_class_of_the_bundled_layout_model():
    import pymupdf.layout

    resources = Path(pymupdf.layout.__file__).parent / "resources" / "onnx"
    configs = sorted(resources.glob("layout_*.yaml"))
    assert configs, "layout model configs not found"
    classes = set()
    for cfg in configs:
        classes |= set(yaml.safe_load(cfg.read_text())["data"]["class_list"])
    assert classes <= set(PyMuPDFParser.LABEL_MAP)
    assert map_label("section-header", PyMuPDFParser.LABEL_MAP)[0] == T.SECTION_HEADER
    assert map_label("picture", PyMuPDFParser.LABEL_MAP)[0] == T.FIGURE
    assert map_label("checkbox", PyMuPDFParser.LABEL_MAP) == (T.MISSING, {"native_label": "checkbox"})


def test_registry_builds_the_default_parser():
    parser = get_parser()
    assert isinstance(parser, PyMuPDFParser) and parser.name == "pymupdf" and parser.ocr == "auto"
    assert PyMuPDFParser(ocr="never").requires_text_layer


# -- the reference document -----------------------------------------------------------------------


def test_root_metadata(clinsci):
    out, path = clinsci
    md = out.root.metadata
    assert md["parser"] == "pymupdf" and md["page_count"] == 13
    assert md["source"]["name"] == path.name and len(md["source"]["sha256"]) == 64
    first = {k: md["pages"][0][k] for k in ("page", "width", "height", "status", "warnings")}
    assert first == {"page": 1, "width": pytest.approx(595.28, abs=0.01), "height": pytest.approx(788.03, abs=0.01),
                     "status": "ok", "warnings": []}
    assert all(p["status"] == "ok" and p["chars"] > 0 for p in md["pages"])
    assert 0 < md["layout_seconds"] <= md["elapsed_seconds"]
    assert [n.id for n in out.root.walk()][:3] == ["root", "e1", "e2"]


def test_tables_have_rows_and_cells_with_boxes(clinsci):
    out, _ = clinsci
    tables = [n for n in out.root.walk() if n.type == T.TABLE]
    assert len(tables) == 5
    for table in tables:
        assert table.content.startswith("|") and "|---|" in table.content
        rows = table.children
        assert len(rows) >= 2 and all(r.type == T.TABLE_ROW for r in rows)
        tb = table.geom[0]
        for row in rows:
            assert row.children and all(c.type == T.TABLE_CELL for c in row.children)
            for cell in row.children:
                cb = cell.geom[0]
                assert cb.page == tb.page
                assert tb.left - 1e-3 <= cb.left <= cb.right <= tb.right + 1e-3
                assert tb.top - 1e-3 <= cb.top <= cb.bottom <= tb.bottom + 1e-3
    # table 2 (crystallographic statistics) keeps its row labels and values
    table2 = next(t for t in tables if "Space group" in t.content)
    assert any(c.content == "Resolution (˚A)" or c.content.startswith("Resolution") for r in table2.children for c in r.children)


def test_section_headers_nested_by_level(clinsci):
    out, _ = clinsci
    root = out.root
    top = [c for c in root.children]
    titles = [c for c in top if c.type == T.TITLE]
    assert titles and titles[0].content.startswith("Fragment-based design for the development")
    assert not titles[0].children  # the title is a leaf; sections are its siblings
    headers: dict[str, ParsingResult] = {}
    for n in root.walk():  # first occurrence (the supplement repeats some headings)
        if n.type == T.SECTION_HEADER:
            headers.setdefault(n.content, n)
    for name in ("INTRODUCTION", "MATERIALS AND METHODS", "RESULTS", "DISCUSSION"):
        assert headers[name].parent is root, name
    methods = headers["MATERIALS AND METHODS"]
    assert [c.content for c in methods.children if c.type == T.SECTION_HEADER] == [
        "Modelling methodology and synthesis",
        "Inhibition characterization",
        "Protein purification and X-ray crystallography",
    ]
    for n in root.walk():
        if n.type == T.SECTION_HEADER:
            for anc in n.ancestors():
                if anc.type == T.SECTION_HEADER:
                    assert anc.level < n.level
    # body text sits under its section
    intro_text = " ".join(c.content for c in headers["INTRODUCTION"].children)
    assert "zinc dipeptidyl carboxypeptidase" in intro_text
    # furniture is filtered by default
    assert not any(n.type in (T.PAGE_HEADER, T.PAGE_FOOTER) for n in root.walk())


def test_every_text_element_has_line_spans_with_characters(clinsci):
    out, _ = clinsci
    nodes = _text_nodes(out.root)
    assert len(nodes) > 300
    for n in nodes:
        covered = set()
        for box in n.geom:
            assert box.spans, n.id
            for s in box.spans:
                assert s.page == box.page
                assert box.left - 0.01 <= s.left <= s.right <= box.right + 0.01, n.id
                assert box.top - 0.01 <= s.top <= s.bottom <= box.bottom + 0.01, n.id
                assert s.char_start is not None and 0 <= s.char_start < s.char_end <= len(n.content)
                if s.char_x is not None:
                    assert len(s.char_x) == 2 * (s.char_end - s.char_start)
                covered.update(range(s.char_start, s.char_end))
        assert all(i in covered for i, c in enumerate(n.content) if not c.isspace()), n.id


def test_character_boxes_reproduce_pdf_word_positions(clinsci):
    out, path = clinsci
    doc = pymupdf.open(path)
    checked = matched = 0
    for pno in (2, 3, 7):
        page = doc[pno - 1]
        w, h = page.rect.width, page.rect.height
        words = page.get_text("words")
        for n in _text_nodes(out.root):
            for box in n.geom:
                if box.page != pno:
                    continue
                for s in box.spans:
                    if s.char_x is None:
                        continue
                    line = n.content[s.char_start : s.char_end]
                    x0, y0, x1, y1 = s.to_points(w, h)
                    pdf_words = [
                        wd for wd in words if x0 - 1 <= (wd[0] + wd[2]) / 2 <= x1 + 1 and y0 <= (wd[1] + wd[3]) / 2 <= y1
                    ]
                    by_text = {}
                    for wd in pdf_words:
                        by_text.setdefault(wd[4], []).append(wd)
                    for m in re.finditer(r"\S+", line):
                        candidates = by_text.get(m.group())
                        if not candidates or len(candidates) > 1:
                            continue  # hyphen-joined or repeated words: ambiguous
                        checked += 1
                        cb = s.char_box(s.char_start + m.start(), s.char_start + m.end())
                        ref = candidates[0]
                        if abs(cb.left * w - ref[0]) < 0.6 and abs(cb.right * w - ref[2]) < 0.6:
                            matched += 1
    assert checked > 1500
    assert matched / checked > 0.99


def test_two_column_reading_order(clinsci):
    out, _ = clinsci
    order = [n for n in out.root.walk() if n.type in (T.PARAGRAPH, T.SECTION_HEADER, T.CAPTION) and n.pages == [2]]
    left = [i for i, n in enumerate(order) if n.geom[0].right < 0.5]
    right = [i for i, n in enumerate(order) if n.geom[0].left > 0.5]
    assert len(left) >= 5 and len(right) >= 4
    assert max(left) < min(right)  # the whole left column before the right one
    texts = [n.content for n in order]
    assert texts.index(next(t for t in texts if t.startswith("allows for effective reduction"))) < texts.index(
        next(t for t in texts if t.startswith("active site interaction properties"))
    )


def test_content_is_dehyphenated_and_whitespace_normalized(clinsci):
    out, _ = clinsci
    text = "\n".join(n.content for n in _text_nodes(out.root))
    assert "approved for clinical use" in text  # "ap-" / "proved" across a line break
    assert "ap- proved" not in text and "ap-proved" not in text
    assert not re.search(r"[ \t]{2,}", text)
    assert all(n.content == n.content.strip() for n in _text_nodes(out.root))


def test_hyphenated_compound_broken_at_its_hyphen_keeps_the_hyphen(clinsci):
    """p. 1: "... molecular basis for N-domain-" / "selective inhibition ..." -- the compound keeps
    its hyphen ("N-domainselective" before), "ap-" / "proved" still loses its one, and the
    kept hyphen's char box is the PDF's."""
    out, path = clinsci
    text = "\n".join(n.content for n in _text_nodes(out.root))
    assert "molecular basis for N-domain-selective inhibition" in text
    assert "N-domain-specific Tyr369" in text  # p. 6, the same break
    assert "N-domainselective" not in text and "N-domainspecific" not in text
    assert "approved for clinical use" in text
    node = next(n for n in _text_nodes(out.root) if "molecular basis for N-domain-selective inhibition" in n.content)
    words = pymupdf.open(path)[0].get_text("words")
    start = node.content.index("N-domain-selective inhibition")
    spans = [s for b in node.geom for s in b.spans]
    first = next(s for s in spans if s.char_start <= start < s.char_end)
    second = next(s for s in spans if s.char_start <= start + len("N-domain-") < s.char_end)
    assert first is not second and node.content[first.char_end - 9 : first.char_end] == "N-domain-"
    assert node.content[second.char_start : second.char_start + 9] == "selective"
    w, h = out.root.metadata["pages"][0]["width"], out.root.metadata["pages"][0]["height"]
    for span, lo, word in ((first, start, "N-domain-"), (second, start + 9, "selective")):
        ref = next(wd for wd in words if wd[4] == word and span.top * h <= (wd[1] + wd[3]) / 2 <= span.bottom * h)
        box = span.char_box(lo, lo + len(word))
        assert box.left * w == pytest.approx(ref[0], abs=0.05) and box.right * w == pytest.approx(ref[2], abs=0.05)


def test_markdown_follows_reading_order(clinsci):
    out, _ = clinsci
    md = out.markdown
    positions = [md.index(h) for h in ("INTRODUCTION", "MATERIALS AND METHODS", "RESULTS", "DISCUSSION", "REFERENCES")]
    assert positions == sorted(positions)
    assert md.index("allows for effective reduction") < md.index("active site interaction properties")
    assert md.startswith("#") and "\n\n\n" not in md


def test_save_writes_json_and_md_that_reload(clinsci, tmp_path):
    out, path = clinsci
    json_path, md_path = out.save(tmp_path, path.stem)
    assert json_path.name == path.stem + ".json" and md_path.read_text() == out.markdown
    assert load_parsing_result(json_path) == out.root
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([json_path.name, md_path.name])  # no temp files


def test_header_levels_follow_numbering_and_table_notes_are_not_sections(runs: _Runs):
    out, caught = runs(shared("pdfs", "docling_groundtruth", "redp5110_sampled.pdf"))
    assert any("pages 17" in m for m in _user_warnings(caught, NoTextLayerWarning))  # one scanned page in that document
    root = out.root
    headers = [n for n in root.walk() if n.type == T.SECTION_HEADER]
    numbered = [n for n in headers if re.match(r"\d+\.\d+(\.\d+)* ", n.content)]
    assert len(numbered) >= 8
    for n in numbered:  # "1.1 ..." -> 2, "3.6.6 ..." -> 3
        assert n.level == n.content.split()[0].count(".") + 1, n.content
    chapter = next(n for n in headers if n.content == "Securing and protecting IBM DB2 data")
    assert "1.1 Security fundamentals" in [c.content for c in chapter.children]
    # PeerJ table notes ("Notes.", set smaller than the body text) do not swallow the next section
    peerj = runs(shared("long", "cermine_test6_peerjcs118.pdf"))[0].root
    assert not any(n.type == T.SECTION_HEADER and n.content == "Notes." for n in peerj.walk())
    top = [c.content for c in peerj.children if c.type == T.SECTION_HEADER]
    assert top[:4] == ["ABSTRACT", "INTRODUCTION", "METHODS", "RESULTS"]


# -- rotated pages ------------------------------------------------------------------------------


def test_rotated_page_gives_boxes_of_the_displayed_page(tmp_path):
    """Page 2 shows the same content as page 1, but stored rotated with /Rotate 90."""
    src = pymupdf.open(shared("long", "cermine_web_example3_clinsci.pdf"))
    w, h = src[1].rect.width, src[1].rect.height
    doc = pymupdf.open()
    doc.insert_pdf(src, from_page=1, to_page=1)
    page = doc.new_page(width=h, height=w)
    page.show_pdf_page(page.rect, src, 1, rotate=90)
    page.set_rotation(90)
    path = tmp_path / "rotated.pdf"
    doc.save(path)
    root = PyMuPDFParser().parse(path)
    assert root.metadata["pages"][1]["width"] == pytest.approx(w) and root.metadata["pages"][1]["height"] == pytest.approx(h)
    by_page = {1: [], 2: []}
    for n in _text_nodes(root):
        if n.type != T.TABLE_CELL:
            by_page[n.geom[0].page].append(n)
    assert len(by_page[1]) >= 10
    assert [n.content for n in by_page[1]] == [n.content for n in by_page[2]]
    for a, b in zip(by_page[1], by_page[2], strict=True):
        ga, gb = a.geom[0], b.geom[0]
        assert (gb.left, gb.top, gb.right, gb.bottom) == pytest.approx((ga.left, ga.top, ga.right, ga.bottom), abs=2e-3)
        for sa, sb in zip(ga.spans, gb.spans, strict=True):
            assert (sb.left, sb.top, sb.right, sb.bottom) == pytest.approx((sa.left, sa.top, sa.right, sa.bottom), abs=2e-3)
            assert sb.char_x == pytest.approx(sa.char_x, abs=2e-3)


# -- options ------------------------------------------------------------------------------------


def test_keep_furniture_figures_with_images_and_progress(tmp_path):
    calls = []
    parser = PyMuPDFParser(drop_types=(), image_dir=tmp_path / "img", progress=lambda d, n: calls.append((d, n)))
    root = parser.parse(shared("long", "cermine_web_example3_clinsci.pdf"))
    assert calls[-1] == (13, 13) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert any(n.type == T.PAGE_FOOTER and "The Author(s)" in n.content for n in root.walk())
    assert any(n.type == T.PAGE_HEADER and "Douglas and others" in n.content for n in root.walk())
    figures = [n for n in root.walk() if n.type == T.FIGURE]
    assert figures and all(n.image and Path(n.image).is_file() for n in figures)
    assert pymupdf.open(figures[0].image).page_count == 1  # a real PNG
    lists = [n for n in root.walk() if n.type == T.LIST]
    assert lists and all(c.type == T.LIST_ITEM for lst in lists for c in lst.children)


def test_layout_threads_configure_the_onnx_sessions_of_a_fresh_process():
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from grounded.parsers.backends.pymupdf import PyMuPDFParser\n"
        "PyMuPDFParser(layout_threads=1)\n"
        "import pymupdf\n"
        "model = pymupdf._get_layout.__closure__[0].cell_contents._model\n"
        "print(model.session.get_session_options().intra_op_num_threads)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "1"


@pytest.mark.slow
def test_two_workers_give_the_same_tree():
    path = shared("pdfs", "docling_groundtruth", "multi_page.pdf")
    single = PyMuPDFParser().parse(path)
    with PyMuPDFParser(workers=2, batch_pages=1) as parser:
        double = parser.parse(path)
    for r in (single, double):
        for key in ("elapsed_seconds", "layout_seconds"):
            r.metadata.pop(key)
    assert double == single


@pytest.mark.slow
@pytest.mark.parametrize("pdf", LONG_PDFS + DOCLING_GT_PDFS, ids=lambda p: p.name)
def test_every_shared_pdf_parses_with_valid_boxes(pdf, runs: _Runs):
    out, caught = runs(pdf)
    if pdf.name == "redp5110_sampled.pdf":
        assert _user_warnings(caught, NoTextLayerWarning)
    else:
        assert not _user_warnings(caught), _user_warnings(caught)
    root = out.root
    nodes = _text_nodes(root)
    assert nodes and out.markdown.strip()
    count = root.metadata["page_count"]
    for n in root.walk():
        for box in n.geom:
            assert 1 <= box.page <= count
            assert 0 <= box.left <= box.right <= 1 and 0 <= box.top <= box.bottom <= 1
            for s in box.spans:
                assert s.page == box.page
    for n in nodes:
        assert any(b.spans for b in n.geom), n.id
    for n in root.walk():
        for c in n.children:
            assert c.parent is n
