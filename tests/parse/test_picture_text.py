"""Issue #34 item 19: when the layout fallback reads a born-digital page the model boxed sparsely,
text whose centre lies inside a picture box belongs to the picture (its ``content``, searchable,
``metadata["picture_text"]``), not to body paragraphs; a caption the picture box swallowed at its
edge stays body text."""

from __future__ import annotations

import warnings

import pytest

from grounded.chunking import document_text
from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from tests.support.pdf_builders import CHART_CAPTION, CHART_LABELS, CHART_LEGEND, chart_page_pdf


@pytest.fixture(scope="module")
def parser() -> PyMuPDFParser:
    return PyMuPDFParser(ocr="never")


def _inside(node, figure) -> bool:
    box, fig = node.geom[0], figure.geom[0]
    cx, cy = (box.left + box.right) / 2, (box.top + box.bottom) / 2
    return fig.left <= cx <= fig.right and fig.top <= cy <= fig.bottom


@pytest.mark.parametrize("sideways", [True, False], ids=["sideways", "upright"])
def test_chart_labels_are_the_pictures_text_not_paragraphs(parser, tmp_path, sideways):
    path = chart_page_pdf(tmp_path / "chart.pdf", sideways=sideways)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = parser.parse(path)
    (figure,) = [n for n in root.walk() if n.type == T.FIGURE]
    body = [n for n in root.walk() if n.type in (T.PARAGRAPH, T.CAPTION, T.LIST_ITEM) and n.geom]
    assert [n.content for n in body if _inside(n, figure) and n.content != CHART_CAPTION] == []
    assert [n.content for n in body] == [CHART_CAPTION]  # the caption at the picture's edge stays text
    assert figure.metadata.get("picture_text") is True
    for label in (*CHART_LABELS, *CHART_LEGEND, "100", "3.5"):
        assert label in figure.content
    assert figure.geom[0].spans  # its lines are located
    assert "placebo arm" in document_text(root).text  # searchable
