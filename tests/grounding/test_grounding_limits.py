"""The grounder refuses what it cannot place before any work (issue 21.4): a text over the
documented character limit and a lone surrogate are refused with a reason, memory stays linear
(the refusal allocates nothing in proportion to the text) and the rest of a batch is unaffected."""

from __future__ import annotations

import tracemalloc

import pytest

from grounded.errors import ChunkingError
from grounded.grounding.grounder import MAX_TEXT_CHARS, Grounder
from grounded.grounding.wrappers import ground_chunks
from grounded.parsers import get_parser
from tests.support.pdf_builders import paragraph_pages_pdf

PARA = "Stimulation of the receptor changes lipid uptake in cultured macrophages of the mouse."
OTHER = "A second paragraph reports the measured concentrations over three weeks of treatment."


@pytest.fixture(scope="module")
def grounder(tmp_path_factory: pytest.TempPathFactory) -> Grounder:
    pdf = paragraph_pages_pdf(tmp_path_factory.mktemp("lim") / "doc.pdf", [[(PARA, 100), (OTHER, 320)]])
    return Grounder(get_parser("pymupdf").parse(pdf), furniture=False)


def test_oversized_text_refused_with_bounded_memory(grounder: Grounder) -> None:
    big = "lipid uptake in macrophages " * (6_000_000 // 28)  # ~6 MB, the case (2.9 GB before)
    tracemalloc.start()
    try:
        g = grounder.ground(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert g.status == "refused" and f"{MAX_TEXT_CHARS}" in g.reason
    assert peak < 1_000_000  # no copy of the text, no index of it


def test_lone_surrogate_refused_and_batch_keeps_order(grounder: Grounder) -> None:
    chunks = ground_chunks([PARA, "bad \ud800 text here", ""], grounder=grounder)
    assert [c.metadata["grounding_status"] for c in chunks] == ["exact", "refused", "refused"]
    assert "lone surrogate" in chunks[1].metadata["grounding_reason"]


def test_max_chars_option(grounder: Grounder) -> None:
    small = Grounder(grounder.root, stream=grounder.stream, furniture=False, max_chars=20)
    assert small.ground(PARA).status == "refused"
    with pytest.raises(ChunkingError):
        Grounder(grounder.root, stream=grounder.stream, max_chars=0)
