"""U+FFFD in chunk text (issue 42 item 8): the Clinical Science PDF's vertical side banner separates
"Clinical Science" and "www.clinsci.org" with a code its font maps to no character and draws with
no glyph (``.notdef``); read as a gap, not as U+FFFD. A real glyph without a Unicode value (the Σ
of the same PDF's footnotes, a symbol font) stays U+FFFD: its value is unknown."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from grounded.parsers import get_parser
from grounded.parsers.textlayer import PageChars, notdef_origins


def _texts(node) -> list[str]:
    return [node.content or "", *(t for c in node.children for t in _texts(c))]


def test_a_notdef_gap_reads_as_a_space_and_a_real_unmapped_glyph_stays(clinsci_pdf: Path) -> None:
    with pymupdf.open(clinsci_pdf) as pdf:
        banner, footnotes = pdf[0], pdf[2]
        assert len(notdef_origins(banner)) == 1 and not notdef_origins(footnotes)
        assert "\ufffd" not in "".join(PageChars.from_page(banner, 1).chars)
        assert "\ufffd" in "".join(PageChars.from_page(footnotes, 3).chars)  # the Σ: a glyph whose value is unknown
    texts = _texts(get_parser("pymupdf").parse(clinsci_pdf))
    assert "Clinical Science www.clinsci.org" in texts
    assert not [t for t in texts if "clinsci.org" in t and "\ufffd" in t]


def test_no_chunk_reads_the_banner_with_a_replacement_character(clinsci_pdf: Path) -> None:
    from grounded.api import chunk

    chunks = chunk(clinsci_pdf, max_tokens=256).chunks
    banner = [c for c in chunks if "www.clinsci.org" in c.content]
    assert banner and not [c for c in banner if "\ufffd" in c.content]
