"""Word recall/precision of highlight boxes (grounded.evaluation.box_words) on rotated pages: the
PDF's words come in unrotated page space, grounded's boxes are fractions of the page as shown, so
the words are turned with the page before they are compared (landscape tables with /Rotate 90 in
the shared web_example2 and PeerJ PDFs scored 0 before)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from grounded.evaluation.box_words import box_word_scores
from grounded.metadata import boxes_from_metadata
from tests.support.pdf_builders import paragraph_pages_pdf

TEXT = ("Patients with chronic heart failure described the structured programme as supportive. "
        "Exercise sessions were valued most when staff explained the reasons for each step. ") * 2


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_boxes_of_a_rotated_page_show_their_words(tmp_path: Path, rotation: int) -> None:
    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader

    pdf = paragraph_pages_pdf(tmp_path / "flat.pdf", [[(TEXT, 72)]])
    with pymupdf.open(pdf) as doc:
        doc[0].set_rotation(rotation)
        doc.save(tmp_path / "turned.pdf")
    turned = tmp_path / "turned.pdf"
    nodes = GroundedNodeParser(max_tokens=256, cache_dir=str(tmp_path / "cache")).get_nodes_from_documents(
        GroundedPDFReader(cache_dir=str(tmp_path / "cache")).load_data(turned)
    )
    items = [(n.text, boxes_from_metadata(n.metadata, text=n.text)) for n in nodes]
    assert items and all(b for _, b in items)
    for score in box_word_scores(turned, items):
        assert score.recall is not None and score.precision is not None
        assert score.recall >= 0.99 and score.precision >= 0.99, (rotation, score)
