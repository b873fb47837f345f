"""Seed 001's step/list rule after grounding (grounded.llm.vision.lists): list runs found in constructed
trees, and a numbered procedure the model split over two chunks merged back when it fits the token
bound, else flagged ``list_split``. Real PyMuPDF parse of a PDF made here; the model is a callable
replaying a hand-written answer in the seed's format."""

from __future__ import annotations

import logging
from pathlib import Path

import pymupdf
import pytest

from grounded.chunking import Chunker
from grounded.llm.vision.lists import list_runs
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import get_parser
from grounded.text.stream import document_text

STEPS = ["Switch the unit off and unplug it.", "Remove the four screws of the front cover.",
         "Lift the cover and take out the old filter.", "Insert the new filter with the arrow pointing up.",
         "Put the cover back and tighten the screws.", "Plug the unit in and switch it on."]
INTRO = "Replace the air filter every six months. You need a screwdriver and a new filter."
OUTRO = "The unit beeps twice when the filter is seated correctly."
HEAD = "[HEAD]Filter manual > Maintenance > Replacing the filter[/HEAD]"
SPLIT_ANSWER = (
    f"[CONTINUES]False[/CONTINUES]\n{HEAD}{INTRO}\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(STEPS[:3], 1))
    + f"\n\n[CONTINUES]True[/CONTINUES]\n{HEAD}" + "\n".join(f"{i}. {s}" for i, s in enumerate(STEPS[3:], 4))
    + f"\n\n[CONTINUES]False[/CONTINUES]\n{HEAD}{OUTRO}\n"
)


def _tree(*nodes: tuple[T, str, int]) -> ParsingResult:
    root = ParsingResult(id="root", type=T.ROOT)
    lst: ParsingResult | None = None
    for i, (kind, text, page) in enumerate(nodes):
        node = ParsingResult(id=f"e{i}", type=kind, content=text, geom=[ParsingBoundingBox(page, 0.1, 0.1 + i / 50, 0.9, 0.12 + i / 50)])
        if kind == T.LIST_ITEM:
            if lst is None:
                lst = ParsingResult(id=f"l{i}", type=T.LIST)
                root.add_child(lst)
            lst.add_child(node)
        else:
            lst = None
            root.add_child(node)
    return root


def test_list_runs_in_constructed_trees() -> None:
    text_steps = _tree((T.PARAGRAPH, "Do this first.", 1),
                       (T.PARAGRAPH, "Step 1: open the lid.\nStep 2: pour the water.\nStep 3: close the lid.", 1),
                       (T.PARAGRAPH, "Then wait.", 1),
                       (T.PARAGRAPH, "1) A lone numbered line is no list.", 1))
    doc = document_text(text_steps)
    (run,) = list_runs(doc)  # numbered lines inside one paragraph; the lone "1)" is a run of one: no list
    assert run.items == 3 and doc.text[run.start:run.end] == "Step 1: open the lid.\nStep 2: pour the water.\nStep 3: close the lid."

    over_pages = _tree((T.LIST_ITEM, "Check the seal", 1), (T.LIST_ITEM, "Check the hose", 1),
                       (T.PARAGRAPH, "• Check the valve", 2), (T.PARAGRAPH, "An ordinary paragraph.", 2),
                       (T.PARAGRAPH, "- one\n- two", 2))
    doc = document_text(over_pages)
    first, second = list_runs(doc)
    assert first.items == 3 and doc.text[first.start:first.end].endswith("• Check the valve")  # continued on page 2
    assert second.items == 2 and doc.text[second.start:second.end] == "- one\n- two"
    assert list_runs(document_text(_tree((T.PARAGRAPH, "1999. A year.", 1), (T.PARAGRAPH, "Plain text.", 1)))) == []


@pytest.fixture(scope="module")
def steps_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lists") / "steps.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 80), "Replacing the filter", fontsize=16)
        page.insert_textbox(pymupdf.Rect(72, 110, 520, 150), INTRO, fontsize=11)
        for i, step in enumerate(STEPS, 1):
            page.insert_text((72, 160 + 18 * i), f"{i}. {step}", fontsize=11)
        page.insert_textbox(pymupdf.Rect(72, 300, 520, 340), OUTRO, fontsize=11)
        doc.save(path)
    return path


def _chunk(pdf: Path, max_tokens: int) -> list:
    root = get_parser("pymupdf").parse(pdf)
    return Chunker("vision", max_tokens, llm=lambda images, prompt: SPLIT_ANSWER).chunk(root).chunks


def test_a_split_list_is_merged_back_when_it_fits(steps_pdf: Path) -> None:
    chunks = _chunk(steps_pdf, 256)
    assert len(chunks) == 2 and [c.metadata["index"] for c in chunks] == [0, 1]
    merged, outro = chunks
    assert merged.metadata["list_merged"] == 2 and "list_split" not in merged.metadata
    assert merged.body.startswith(INTRO) and all(f"{i}. {s}" in merged.body for i, s in enumerate(STEPS, 1))
    assert merged.content.startswith("Filter manual > Maintenance > Replacing the filter\n\n")
    assert merged.metadata["token_count"] <= 256 and outro.body == OUTRO
    # the body is the document text of the chunk's range, with boxes on every step line
    root = get_parser("pymupdf").parse(steps_pdf)
    text = document_text(root).text
    assert text[merged.metadata["start_char"]:merged.metadata["end_char"]] == merged.body
    with pymupdf.open(steps_pdf) as doc:
        words = doc[0].get_text("words")
    boxed = {w[4] for w in words for b in merged.geom  # words whose centre lies in a box of the chunk
             if b.left * 595 <= (w[0] + w[2]) / 2 <= b.right * 595 and b.top * 842 <= (w[1] + w[3]) / 2 <= b.bottom * 842}
    assert {"unplug", "screws", "arrow", "tighten", "on."} <= boxed and "beeps" not in boxed


def test_a_split_list_that_cannot_fit_is_flagged_and_logged(steps_pdf: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="grounded.llm.vision.lists"):
        chunks = _chunk(steps_pdf, 64)
    holding = [c for c in chunks if any(s in c.body for s in STEPS)]
    assert len(holding) >= 2 and all(c.metadata["list_split"] is True for c in holding)
    assert all(c.metadata["token_count"] <= 64 for c in chunks)
    assert not any(c.metadata.get("list_split") for c in chunks if c not in holding)
    (record,) = [r for r in caplog.records if r.name == "grounded.llm.vision.lists"]
    assert "a list of 6 items" in record.getMessage() and "flagged list_split" in record.getMessage()
