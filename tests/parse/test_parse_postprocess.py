"""Shared post-processing: filtering, hierarchy inference, line spans + char alignment, ids."""

from __future__ import annotations

import pymupdf
import pytest

from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import hierarchy
from grounded.parsers import postprocess as pp
from grounded.parsers.base import DEFAULT_DROP_TYPES
from grounded.parsers.textlayer import JOIN_DROP, JOIN_KEEP, JOIN_SPACE, TextLayer, build_lines, hyphen_join
from tests.support.data import shared


def node(type_: T, content: str = "", level: int | None = None, **meta) -> ParsingResult:
    md = dict(meta)
    if level is not None:
        md["level"] = level
    return ParsingResult("", type_, content=content, metadata=md)


def tree(*children: ParsingResult) -> ParsingResult:
    root = ParsingResult("", T.ROOT)
    for c in children:
        root.add_child(c)
    return root


def shape(n: ParsingResult) -> list:
    return [(c.type.value, c.content, shape(c)) for c in n.children]


# -- filtering ----------------------------------------------------------------------------------


def test_filter_drops_types_and_empty_text_and_lifts_children():
    form = node(T.FORM_AREA)
    form.add_child(node(T.KEY_VALUE, "Name: X"))
    refs = node(T.REFERENCE_LIST)
    refs.add_child(node(T.REFERENCE_ITEM, "[1] A. Author"))
    table = node(T.TABLE, "| a |")
    row = table.add_child(node(T.TABLE_ROW))
    row.add_child(node(T.TABLE_CELL, "a"))
    row.add_child(node(T.TABLE_CELL, ""))  # empty cell: grid placeholder, kept
    empty_list = node(T.LIST)
    empty_list.add_child(node(T.LIST_ITEM, "   "))
    root = tree(
        node(T.PAGE_HEADER, "Journal 2014"),
        node(T.PARAGRAPH, "Body"),
        node(T.PARAGRAPH, "  \n "),
        form,
        refs,
        table,
        empty_list,
        node(T.FIGURE, ""),
        node(T.PAGE_FOOTER, "12"),
    )
    removed = pp.filter_elements(root, DEFAULT_DROP_TYPES)
    assert shape(root) == [
        ("PARAGRAPH", "Body", []),
        ("KEY_VALUE", "Name: X", []),
        ("TABLE", "| a |", [("TABLE_ROW", "", [("TABLE_CELL", "a", []), ("TABLE_CELL", "", [])])]),
        ("FIGURE", "", []),
    ]
    # page header, blank paragraph, form area, reference item + list, blank item + its list, footer
    assert removed == 8
    assert all(c.parent is root for c in root.children)


def test_filter_with_empty_drop_set_keeps_typed_elements():
    root = tree(node(T.PAGE_HEADER, "Header"), node(T.PARAGRAPH, ""))
    assert pp.filter_elements(root, ()) == 1
    assert shape(root) == [("PAGE_HEADER", "Header", [])]


# -- hierarchy ----------------------------------------------------------------------------------


def test_hierarchy_nests_by_level_and_keeps_title_a_leaf():
    lst = node(T.LIST)
    lst.add_child(node(T.LIST_ITEM, "item"))
    root = tree(
        node(T.TITLE, "Paper"),
        node(T.PARAGRAPH, "authors"),
        node(T.SECTION_HEADER, "Intro", level=1),
        node(T.PARAGRAPH, "p1"),
        node(T.SECTION_HEADER, "Sub", level=2),
        lst,
        node(T.SECTION_HEADER, "Subsub", level=3),
        node(T.PARAGRAPH, "p2"),
        node(T.SECTION_HEADER, "Sub2", level=2),
        node(T.PARAGRAPH, "p3"),
        node(T.SECTION_HEADER, "Methods", level=1),
        node(T.PARAGRAPH, "p4"),
    )
    pp.infer_hierarchy(root)
    assert shape(root) == [
        ("TITLE", "Paper", []),
        ("PARAGRAPH", "authors", []),
        (
            "SECTION_HEADER",
            "Intro",
            [
                ("PARAGRAPH", "p1", []),
                (
                    "SECTION_HEADER",
                    "Sub",
                    [("LIST", "", [("LIST_ITEM", "item", [])]), ("SECTION_HEADER", "Subsub", [("PARAGRAPH", "p2", [])])],
                ),
                ("SECTION_HEADER", "Sub2", [("PARAGRAPH", "p3", [])]),
            ],
        ),
        ("SECTION_HEADER", "Methods", [("PARAGRAPH", "p4", [])]),
    ]
    # reading order (DFS) is unchanged by the nesting
    assert [n.content for n in root.walk()][1:] == [
        "Paper", "authors", "Intro", "p1", "Sub", "", "item", "Subsub", "p2", "Sub2", "p3", "Methods", "p4",
    ]
    for n in root.walk():
        for c in n.children:
            assert c.parent is n


def test_hierarchy_infers_missing_levels_from_numbering_then_style():
    root = tree(
        node(T.SECTION_HEADER, "1 Introduction"),
        node(T.PARAGRAPH, "a"),
        node(T.SECTION_HEADER, "1.1 Background"),
        node(T.PARAGRAPH, "b"),
        node(T.SECTION_HEADER, "Big header", font_size=14.0),
        node(T.SECTION_HEADER, "Small header", font_size=10.0),
        node(T.PARAGRAPH, "c"),
        node(T.SECTION_HEADER, "No clue"),
    )
    pp.infer_hierarchy(root)
    levels = {n.content: (n.metadata["level"], n.metadata["level_source"]) for n in root.walk() if n.type == T.SECTION_HEADER}
    assert levels == {
        "1 Introduction": (1, "numbering"),
        "1.1 Background": (2, "numbering"),
        # no numbered heading has a style here: styled ones are ranked by style (larger first)
        "Big header": (1, "style"),
        "Small header": (2, "style"),
        "No clue": (1, "default"),
    }
    intro = root.children[0]
    assert [c.content for c in intro.children] == ["a", "1.1 Background"]
    big = root.children[1]
    assert big.content == "Big header" and big.children[0].content == "Small header"


@pytest.mark.parametrize(
    ("text", "level"),
    [("2 Methods", 1), ("2.1 Patients", 2), ("3.2.1. Dosing", 3), ("IV. Results", 1), ("2014 results", None),
     ("3 mg daily", None), ("Methods", None), ("1) Scope", 1)],
)
def test_numbering_level(text, level):
    assert pp.numbering_level(text) == level


# -- ids ----------------------------------------------------------------------------------------


def test_assign_ids_dfs_order_stable_and_native_kept():
    def build():
        sec = node(T.SECTION_HEADER, "S", level=1)
        sec.id = "#/texts/3"
        sec.add_child(node(T.PARAGRAPH, "x"))
        return tree(node(T.TITLE, "t"), sec, node(T.PARAGRAPH, "y"))

    a, b = build(), build()
    pp.assign_ids(a)
    pp.assign_ids(b)
    assert [n.id for n in a.walk()] == ["root", "e1", "e2", "e3", "e4"]
    assert a == b
    assert a.children[1].metadata["native_id"] == "#/texts/3"
    pp.assign_ids(a)  # idempotent: own ids are not mistaken for native ones
    assert [n.id for n in a.walk()] == ["root", "e1", "e2", "e3", "e4"]
    assert "native_id" not in a.children[0].metadata


# -- line spans ---------------------------------------------------------------------------------


@pytest.fixture
def fragmented_pdf(tmp_path):
    """One visual line written as two text runs with baselines 3 pt apart, then a second line."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_text((50, 100), "Hello", fontsize=12)
    page.insert_text((90, 103), "world again", fontsize=12)
    page.insert_text((50, 130), "second line", fontsize=12)
    path = tmp_path / "fragments.pdf"
    doc.save(path)
    return path


def _element(path, content):
    box = ParsingBoundingBox.from_points(1, 40, 80, 200, 140, 400, 300)
    root = tree(ParsingResult("", T.PARAGRAPH, content=content, geom=[box]))
    return root, root.children[0]


def test_fragments_of_one_line_merge_by_vertical_overlap(fragmented_pdf):
    root, el = _element(fragmented_pdf, "Hello world again second line")
    pp.attach_line_spans(root, fragmented_pdf, merge_overlap=0.5)
    spans = el.geom[0].spans
    assert [el.content[s.char_start : s.char_end] for s in spans] == ["Hello world again", "second line"]
    assert el.metadata["char_alignment"] == 1.0
    # the merged line box covers both fragments
    assert spans[0].left == pytest.approx(50 / 400, abs=1e-3)
    assert spans[0].right == pytest.approx(151.4 / 400, abs=2e-3)
    # a stricter threshold keeps the fragments apart (char boxes capped at 12 pt: overlap 9/12 = 0.75)
    root2, el2 = _element(fragmented_pdf, "Hello world again second line")
    pp.attach_line_spans(root2, fragmented_pdf, merge_overlap=0.9)
    assert [el2.content[s.char_start : s.char_end] for s in el2.geom[0].spans] == ["Hello", "world again", "second line"]


def test_char_x_reproduces_word_positions(fragmented_pdf):
    root, el = _element(fragmented_pdf, "Hello world again second line")
    pp.attach_line_spans(root, fragmented_pdf)
    first = el.geom[0].spans[0]
    words = {w[4]: w for w in pymupdf.open(fragmented_pdf)[0].get_text("words")}
    for word in ("Hello", "world", "again"):
        start = el.content.index(word)
        box = first.char_box(start, start + len(word))
        assert box.left * 400 == pytest.approx(words[word][0], abs=0.05)
        assert box.right * 400 == pytest.approx(words[word][2], abs=0.05)


def test_foreign_content_is_aligned_with_fallback(fragmented_pdf):
    # an OCR/VLM backend's text: different case, a typo, a missing word
    root, el = _element(fragmented_pdf, "HELLO w0rld second line")
    pp.attach_line_spans(root, fragmented_pdf)
    assert 0.8 <= el.metadata["char_alignment"] < 1.0
    spans = el.geom[0].spans
    assert [el.content[s.char_start : s.char_end] for s in spans] == ["HELLO w0rld", "second line"]
    # garbage content: lines kept, but no char info
    root, el = _element(fragmented_pdf, "completely unrelated text from elsewhere")
    pp.attach_line_spans(root, fragmented_pdf)
    assert el.metadata["char_alignment"] < pp.MIN_CHAR_ALIGNMENT
    assert len(el.geom[0].spans) == 2
    assert all(s.char_start is None and s.char_x is None for s in el.geom[0].spans)


def test_existing_char_spans_are_left_alone(fragmented_pdf):
    root, el = _element(fragmented_pdf, "Hello")
    own = ParsingBoundingBox(1, 0.1, 0.1, 0.2, 0.2, char_start=0, char_end=5, char_x=(0.1, 0.12) * 5)
    el.geom[0].spans = [own]
    pp.attach_line_spans(root, fragmented_pdf)
    assert el.geom[0].spans == [own]


def test_line_spans_on_real_two_column_page_match_pymupdf_text(clinsci_pdf):
    """Paragraph blocks of a real page, content taken from PyMuPDF's own block text."""
    doc = pymupdf.open(clinsci_pdf)
    page = doc[1]
    w, h = page.rect.width, page.rect.height
    root = tree()
    for b in page.get_text("blocks"):
        if b[6] == 0 and len(b[4]) > 200 and b[3] < 0.9 * h:  # body text, not the footer
            root.add_child(ParsingResult("", T.PARAGRAPH, content=b[4], geom=[ParsingBoundingBox.from_points(2, *b[:4], w, h)]))
    assert len(root.children) >= 4
    pp.attach_line_spans(root, clinsci_pdf)
    words = page.get_text("words")
    for el in root.children:
        assert el.metadata["char_alignment"] == 1.0
        spans = el.geom[0].spans
        assert len(spans) == len([ln for ln in el.content.splitlines() if ln.strip()])
        for s in spans:
            assert el.geom[0].left - 0.01 <= s.left <= s.right <= el.geom[0].right + 0.01
            assert len(s.char_x) == 2 * (s.char_end - s.char_start)
            # the span's text is exactly the PyMuPDF words whose centre lies in the span's box
            x0, y0, x1, y1 = s.to_points(w, h)
            found = [
                wd[4] for wd in words
                if x0 <= (wd[0] + wd[2]) / 2 <= x1 and y0 <= (wd[1] + wd[3]) / 2 <= y1
            ]
            assert el.content[s.char_start : s.char_end].split() == found


def test_text_layer_rotated_page_uses_displayed_coordinates(tmp_path):
    src = pymupdf.open(shared("long", "cermine_web_example3_clinsci.pdf"))
    doc = pymupdf.open()
    doc.insert_pdf(src, from_page=0, to_page=0)
    doc[0].set_rotation(90)
    path = tmp_path / "rotated.pdf"
    doc.save(path)
    with TextLayer(path) as layer:
        pc = layer.page(1)
    assert (pc.width, pc.height) == pytest.approx((788.03, 595.28), abs=0.01)
    # compare with the same page after PyMuPDF removed the rotation (content rewritten as displayed)
    ref = pymupdf.open(path)
    ref[0].remove_rotation()
    words = ref[0].get_text("words")
    first = words[0]
    sel = pc.select(*first[:4])
    built = build_lines([pc], [sel])
    assert first[4] in built.text


@pytest.mark.parametrize(("rotate", "has_char_x"), [(0, True), (90, False), (180, True), (270, False)])
def test_text_in_any_writing_direction_reads_in_order(tmp_path, rotate, has_char_x):
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=400)
    # two lines in one writing direction (90 = bottom-to-top), the second after the first in reading order
    origin = {0: [(100, 100), (100, 116)], 90: [(100, 300), (116, 300)], 180: [(300, 300), (300, 284)],
              270: [(300, 100), (284, 100)]}[rotate]
    page.insert_text(origin[0], "first line of text", fontsize=12, rotate=rotate)
    page.insert_text(origin[1], "second line here", fontsize=12, rotate=rotate)
    path = tmp_path / f"dir{rotate}.pdf"
    doc.save(path)
    with TextLayer(path) as layer:
        pc = layer.page(1)
        built = build_lines([pc], [pc.select(0, 0, 400, 400)])
    assert built.text == "first line of text second line here"
    assert [built.text[ln.start : ln.end] for ln in built.lines] == ["first line of text", "second line here"]
    assert all((ln.char_x is not None) == has_char_x for ln in built.lines)


# -- de-hyphenation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "first", "join"),
    [
        ("treat-", "ment", JOIN_DROP),  # a plain lowercase word broken by hyphenation
        ("Treat-", "ment", JOIN_DROP),  # sentence-initial capital: still a plain word
        ("treat\u2010", "ment", JOIN_DROP),  # U+2010 HYPHEN
        ("treat\u00ad", "Ment", JOIN_DROP),  # a soft hyphen is always a break
        ("N-domain-", "selective", JOIN_KEEP),  # compound already hyphenated before the break
        ("N-acetyl-Ser-", "Asp", JOIN_KEEP),
        ("non-", "Hodgkin", JOIN_KEEP),  # next line starts with an uppercase letter
        ("SARS-CoV-", "2", JOIN_KEEP),  # ... or a digit
        ("10-", "20", JOIN_KEEP),
        ("HIV-", "positive", JOIN_KEEP),  # acronym: not a plain lowercase word
        ("33RE-", "binding", JOIN_KEEP),  # digits in the token
        ("-", "next", JOIN_SPACE),  # a free-standing dash
        ("word-", "(see", JOIN_SPACE),  # next line starts with punctuation
        ("word", "next", JOIN_SPACE),
        ("word\u2013", "next", JOIN_SPACE),  # an en dash is not a hyphen
    ],
)
def test_hyphen_join_rule(token, first, join):
    assert hyphen_join(token, first) == join


HYPHEN_LINES = ["the N-domain-", "selective inhibitor treat-", "ment of HIV-", "positive and non-", "Hodgkin cases 10-", "20 with a -", "next one"]


@pytest.fixture
def hyphen_pdf(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    for k, t in enumerate(HYPHEN_LINES):
        page.insert_text((40, 40 + 14 * k), t, fontsize=11)
    path = tmp_path / "hyphens.pdf"
    doc.save(path)
    return path


def test_dehyphenation_keeps_compounds_and_char_boxes(hyphen_pdf):
    with TextLayer(hyphen_pdf) as layer:
        pc = layer.page(1)
        sel = pc.select(0, 0, 400, 300)
        built = build_lines([pc], [sel])
        kept = build_lines([pc], [sel], keep_hyphens=True)
    expected = "the N-domain-selective inhibitor treatment of HIV-positive and non-Hodgkin cases 10-20 with a - next one"
    assert built.text == expected
    assert not built.droppable
    # only the broken word lost its hyphen; every line keeps its own text and char range
    assert [built.text[ln.start : ln.end] for ln in built.lines] == [t.replace("treat-", "treat") for t in HYPHEN_LINES]
    # with keep_hyphens all joining hyphens stay, listed as droppable for alignment
    assert kept.text == expected.replace("treatment", "treat-ment")
    assert [kept.text[ln.start : ln.end] for ln in kept.lines] == HYPHEN_LINES
    assert [kept.text[i - 3 : i + 2] for i in sorted(kept.droppable)] == ["ain-s", "eat-m", "HIV-p", "non-H", " 10-2"]
    # each text char's horizontal extent is its own PDF char's
    words = {w[4]: w for w in pymupdf.open(hyphen_pdf)[0].get_text("words")}
    for b in (built, kept):
        for ln in b.lines:
            assert len(ln.char_x) == 2 * (ln.end - ln.start)
            for t in range(ln.start, ln.end):
                i = b.source[t]
                if i >= 0:
                    off = 2 * (t - ln.start)
                    assert ln.char_x[off : off + 2] == [pc.x0[i], pc.x1[i]] and b.text[t] == pc.chars[i]
        first = b.lines[0]
        hyphen = first.end - 1  # the kept line-final hyphen of "N-domain-"
        assert b.text[hyphen] == "-"
        assert first.char_x[-1] == pytest.approx(words["N-domain-"][2], abs=0.01)


@pytest.mark.parametrize("content", ["the N-domain-selective", "the N-domainselective", "the N-domain- selective"])
def test_compound_hyphen_at_line_end_aligns_with_or_without_it(tmp_path, content):
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_text((50, 100), "the N-domain-", fontsize=12)
    page.insert_text((50, 116), "selective", fontsize=12)
    path = tmp_path / "compound.pdf"
    doc.save(path)
    root, el = _element(path, content)
    pp.attach_line_spans(root, path)
    assert el.metadata["char_alignment"] == 1.0
    first, second = el.geom[0].spans
    assert el.content[first.char_start : first.char_end].rstrip() in ("the N-domain-", "the N-domain")
    assert el.content[second.char_start : second.char_end] == "selective"


# -- one heading-level algorithm (grounded.parsers.hierarchy, #13.6) ------------------------------


def styled(type_: T, content: str, size: float, page: int = 1, **meta) -> ParsingResult:
    n = node(type_, content, font_size=size, **meta)
    n.geom = [ParsingBoundingBox(page, 0.1, 0.1, 0.9, 0.12)]
    return n


def decided(root: ParsingResult) -> dict[str, tuple]:
    return {
        n.content: (n.type.value, n.metadata.get("level"), n.metadata.get("level_source"))
        for n in root.walk()
        if n.type != T.ROOT
    }


def test_levels_from_numbering_and_from_the_style_numbered_headings_have():
    root = tree(
        styled(T.SECTION_HEADER, "1 Introduction", 14),
        styled(T.SECTION_HEADER, "1.1 Background", 12),
        styled(T.SECTION_HEADER, "Aims", 12),  # unnumbered, set like the depth-2 headings
        styled(T.SECTION_HEADER, "Acknowledgements", 14),  # set like the depth-1 headings
        styled(T.SECTION_HEADER, "Minor point", 11),  # a size no numbered heading has: below the deepest
        styled(T.SECTION_HEADER, "2 Methods", 14),
        styled(T.SECTION_HEADER, "2.1.1. Dosing", 12),  # numbering wins over the style's depth
    )
    hierarchy.assign_heading_levels(root)
    assert decided(root) == {
        "1 Introduction": ("SECTION_HEADER", 1, "numbering"),
        "1.1 Background": ("SECTION_HEADER", 2, "numbering"),
        "Aims": ("SECTION_HEADER", 2, "numbering_style"),
        "Acknowledgements": ("SECTION_HEADER", 1, "numbering_style"),
        "Minor point": ("SECTION_HEADER", 3, "font_size"),
        "2 Methods": ("SECTION_HEADER", 1, "numbering"),
        "2.1.1. Dosing": ("SECTION_HEADER", 3, "numbering"),
    }


def test_levels_without_numbering_rank_the_styles_size_then_caps():
    root = tree(
        styled(T.SECTION_HEADER, "RESULTS", 12),
        styled(T.SECTION_HEADER, "Patients", 12),
        styled(T.SECTION_HEADER, "Overview", 16),
        styled(T.SECTION_HEADER, "Doses", 10),
    )
    hierarchy.assign_heading_levels(root)
    levels = {k: v[1:] for k, v in decided(root).items()}
    assert levels == {"Overview": (1, "style"), "RESULTS": (2, "style"), "Patients": (3, "style"), "Doses": (4, "style")}


def test_backend_levels_are_kept_when_valid_and_the_rest_is_mixed_evidence():
    root = tree(
        node(T.TITLE, "A trial"),
        node(T.SECTION_HEADER, "Given", native_level=3),
        node(T.SECTION_HEADER, "Written by an old backend", level=2),
        node(T.SECTION_HEADER, "3.2 Bad native level", native_level=0),  # invalid: numbering decides
        node(T.SECTION_HEADER, "Not a number", native_level="x"),  # invalid, no other evidence
        styled(T.SECTION_HEADER, "Big", 18),
        styled(T.SECTION_HEADER, "Small", 12),
    )
    hierarchy.assign_heading_levels(root)
    assert decided(root) == {
        "A trial": ("TITLE", 1, "title"),
        "Given": ("SECTION_HEADER", 3, "backend"),
        "Written by an old backend": ("SECTION_HEADER", 2, "backend"),
        "3.2 Bad native level": ("SECTION_HEADER", 2, "numbering"),
        "Not a number": ("SECTION_HEADER", 1, "default"),
        "Big": ("SECTION_HEADER", 1, "style"),
        "Small": ("SECTION_HEADER", 2, "style"),
    }
    before = decided(root)
    hierarchy.assign_heading_levels(root)  # decided once: a second run changes nothing
    assert decided(root) == before


def test_small_unnumbered_headers_become_paragraphs_and_a_large_first_one_the_title():
    root = tree(
        styled(T.SECTION_HEADER, "Heparin after surgery", 20),
        styled(T.SECTION_HEADER, "1 Introduction", 12),
        styled(T.SECTION_HEADER, "Abbreviations: LMWH", 7),  # a table note the layout model took for a heading
        styled(T.SECTION_HEADER, "2.1 Small but numbered", 7),
        styled(T.SECTION_HEADER, "Results", 12, page=2),
    )
    root.metadata["body_font_size"] = 10.0
    hierarchy.assign_heading_levels(root)
    got = decided(root)
    assert got["Heparin after surgery"] == ("TITLE", 1, "title")
    assert got["Abbreviations: LMWH"] == ("PARAGRAPH", None, None)
    assert got["2.1 Small but numbered"] == ("SECTION_HEADER", 2, "numbering")
    note = next(n for n in root.walk() if n.content.startswith("Abbreviations"))
    assert note.metadata["demoted_from"] == "section-header" and "font_size" not in note.metadata
    title = root.children[0]
    assert title.metadata["promoted_from"] == "section-header"


def test_no_title_promotion_when_a_heading_is_larger_or_a_title_exists():
    larger_later = tree(styled(T.SECTION_HEADER, "First", 14), styled(T.SECTION_HEADER, "Huge", 24))
    hierarchy.assign_heading_levels(larger_later)
    assert [n.type for n in larger_later.children] == [T.SECTION_HEADER, T.SECTION_HEADER]
    has_title = tree(styled(T.TITLE, "The title", 14), styled(T.SECTION_HEADER, "Big", 30), styled(T.SECTION_HEADER, "s", 9))
    hierarchy.assign_heading_levels(has_title)
    assert [n.type for n in has_title.children] == [T.TITLE, T.SECTION_HEADER, T.SECTION_HEADER]


def test_measure_styles_reads_font_sizes_and_body_size_from_the_text_layer(tmp_path):
    pdf = tmp_path / "styled.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=400)
    page.insert_text((40, 50), "Big heading", fontsize=18, fontname="hebo")
    page.insert_text((40, 100), "Body text of the page, set at ten points.", fontsize=10)
    page.insert_text((40, 150), "Tiny note", fontsize=6)
    doc.save(pdf)

    def box(y0: float, y1: float) -> list[ParsingBoundingBox]:
        return [ParsingBoundingBox(1, 0.05, y0 / 400, 0.95, y1 / 400)]

    big, body, tiny = (node(T.SECTION_HEADER, "Big heading"), node(T.PARAGRAPH, "Body text"), node(T.SECTION_HEADER, "Tiny note"))
    big.geom, body.geom, tiny.geom = box(30, 56), box(88, 104), box(142, 153)
    root = tree(big, body, tiny)
    assert hierarchy.measure_styles(root, pdf) == 2
    assert (big.metadata["font_size"], big.metadata["font_bold"]) == (18.0, True)
    assert (tiny.metadata["font_size"], tiny.metadata["font_bold"]) == (6.0, False)
    assert root.metadata["body_font_size"] == 10.0
    hierarchy.assign_heading_levels(root)
    assert big.type == T.SECTION_HEADER and tiny.type == T.PARAGRAPH  # 6 pt < 0.85 x 10 pt


# -- one list-grouping algorithm ------------------------------------------------------------------


def item(content: str, page: int = 1, top: float = 0.1, type_: T = T.LIST_ITEM) -> ParsingResult:
    n = node(type_, content)
    n.geom = [ParsingBoundingBox(page, 0.1, top, 0.8, top + 0.02)]
    return n


def test_list_runs_split_by_a_paragraph_and_by_type():
    root = tree(
        item("a", top=0.1), item("b", page=2, top=0.5), item("c", page=2, top=0.6),
        node(T.PARAGRAPH, "p"),
        item("d"),
        item("[1] Ref", type_=T.REFERENCE_ITEM), item("[2] Ref", type_=T.REFERENCE_ITEM),
    )
    assert hierarchy.group_lists(root) == 3
    assert shape(root) == [
        ("LIST", "", [("LIST_ITEM", "a", []), ("LIST_ITEM", "b", []), ("LIST_ITEM", "c", [])]),
        ("PARAGRAPH", "p", []),
        ("LIST", "", [("LIST_ITEM", "d", [])]),
        ("REFERENCE_LIST", "", [("REFERENCE_ITEM", "[1] Ref", []), ("REFERENCE_ITEM", "[2] Ref", [])]),
    ]
    first = root.children[0]
    assert all(c.metadata.get("synthetic") is True for c in root.children if c.type != T.PARAGRAPH)
    assert [b.page for b in first.geom] == [1, 2]  # one box per page, around the items
    assert first.geom[1].top == pytest.approx(0.5) and first.geom[1].bottom == pytest.approx(0.62)
    assert all(c.parent is first for c in first.children)
    assert hierarchy.group_lists(root) == 0  # nothing left to group


def test_nested_items_get_a_nested_list_and_backend_lists_are_kept():
    outer = item("outer")
    outer.add_child(item("inner 1"))
    outer.add_child(item("inner 2"))
    native = node(T.LIST, "")
    native.add_child(item("x"))
    native.add_child(item("y"))
    root = tree(outer, native)
    assert hierarchy.group_lists(root) == 2
    assert shape(root) == [
        ("LIST", "", [("LIST_ITEM", "outer", [("LIST", "", [("LIST_ITEM", "inner 1", []), ("LIST_ITEM", "inner 2", [])])])]),
        ("LIST", "", [("LIST_ITEM", "x", []), ("LIST_ITEM", "y", [])]),
    ]
    assert "synthetic" not in root.children[1].metadata


def test_dropped_page_furniture_does_not_split_a_list():
    def build() -> ParsingResult:
        return tree(item("a"), node(T.PAGE_FOOTER, "12"), node(T.PAGE_HEADER, "Journal"), item("b", page=2), node(T.PARAGRAPH, "p"))

    root = build()
    assert hierarchy.group_lists(root, DEFAULT_DROP_TYPES) == 1
    assert [c.type for c in root.children] == [T.LIST, T.PAGE_FOOTER, T.PAGE_HEADER, T.PARAGRAPH]
    assert [c.content for c in root.children[0].children] == ["a", "b"]
    kept = build()  # furniture that stays in the output ends the list where it stands
    assert hierarchy.group_lists(kept, ()) == 2
    assert [c.type for c in kept.children] == [T.LIST, T.PAGE_FOOTER, T.PAGE_HEADER, T.LIST, T.PARAGRAPH]


def test_headings_without_text_under_them_keep_numbering_and_default(tmp_path):
    pdf = tmp_path / "blank.pdf"
    doc = pymupdf.open()
    doc.new_page(width=300, height=300)  # no text layer at all (an image-only page reads the same)
    doc.save(pdf)
    numbered, plain, beyond = node(T.SECTION_HEADER, "2.1 Methods"), node(T.SECTION_HEADER, "Methods"), node(T.SECTION_HEADER, "Far")
    numbered.geom = [ParsingBoundingBox(1, 0.1, 0.1, 0.9, 0.2)]
    plain.geom = [ParsingBoundingBox(1, 0.1, 0.3, 0.9, 0.4)]
    beyond.geom = [ParsingBoundingBox(7, 0.1, 0.3, 0.9, 0.4)]  # a page the PDF does not have
    root = tree(numbered, plain, beyond, node(T.PARAGRAPH, "body"))
    assert hierarchy.measure_styles(root, pdf) == 0
    assert "body_font_size" not in root.metadata and "font_size" not in plain.metadata
    hierarchy.assign_heading_levels(root)
    assert [(n.metadata["level"], n.metadata["level_source"]) for n in (numbered, plain, beyond)] == [
        (2, "numbering"), (1, "default"), (1, "default"),
    ]
