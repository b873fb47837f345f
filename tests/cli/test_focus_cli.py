"""The focus on the command line: ``grounded highlight --query`` draws and prints the focus of an answer
that runs across a page break (its own annotation, subject ``grounded focus``, on both pages, inside
the chunk's), and ``grounded search`` prints each hit's focus (marked with », escaped) and carries its
offsets and boxes in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from grounded.cli.main import main
from tests.support.search_index import QUESTION, guideline_index

pytestmark = pytest.mark.shared_parse_cache  # searches the run's one index: the trees ingest left in the cache

FIRST = ("Dosing of the study drug was adjusted to renal function in every cohort of the trial. " * 14
         + "The maximum tolerated dose of the study drug in the expansion cohort was established at")
SECOND = ("40 mg per square metre given once weekly for six cycles in every patient. "
          + "Neutropenia was the most common adverse event in all cohorts of the trial. " * 6)


def _two_page_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_textbox(pymupdf.Rect(56, 560, 544, 790), FIRST, fontsize=10)
    doc.new_page().insert_textbox(pymupdf.Rect(56, 72, 544, 300), SECOND, fontsize=10)
    doc.save(path)
    doc.close()
    return path


def test_highlight_query_draws_a_two_page_focus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = _two_page_pdf(tmp_path / "dose.pdf")
    chunks = tmp_path / "dose.jsonl"
    assert main(["chunk", str(pdf), "-o", str(chunks), "-n", "512"]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in chunks.read_text().splitlines()]
    chunk = next(r for r in rows if "maximum tolerated dose" in r.get("content", ""))  # (line 1: the header)
    out = tmp_path / "dose.highlighted.pdf"
    question = "What was the maximum tolerated dose in the expansion cohort?"
    assert main(["highlight", str(pdf), str(chunks), "-c", chunk["id"], "-o", str(out), "--query", question]) == 0
    printed = capsys.readouterr().out
    focus_lines = [line for line in printed.splitlines() if line.startswith("\u00bb ")]
    assert focus_lines and "maximum tolerated dose" in printed and "40 mg per square metre" in printed
    assert "(p.1,2)" in focus_lines[0]
    doc = pymupdf.open(out)
    by_page: dict[int, dict[str, list[pymupdf.Rect]]] = {}
    for page in doc:
        for annot in page.annots():
            by_page.setdefault(page.number + 1, {}).setdefault(annot.info["subject"], []).append(annot.rect)
    assert set(by_page) == {1, 2} and all("grounded focus" in subjects for subjects in by_page.values())
    for subjects in by_page.values():  # each page's focus lies inside the chunk's highlight there
        chunk_area = subjects["grounded chunk"][0]
        for rect in subjects["grounded chunk"][1:]:
            chunk_area |= rect
        assert all((pymupdf.Rect(chunk_area) & r).get_area() > 0.95 * r.get_area() for r in subjects["grounded focus"])
    png = tmp_path / "dose.png"
    assert main(["highlight", str(pdf), str(chunks), "-c", chunk["id"], "-o", str(png), "--query", question]) == 0
    assert png.is_file() and (tmp_path / "dose-p2.png").is_file()


def test_search_prints_the_focus_and_json_carries_it(tmp_path_factory: pytest.TempPathFactory,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = guideline_index(tmp_path_factory, "focus-cli")
    assert main(["search", str(out), QUESTION, "-k", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    marked = [line for line in printed if line.lstrip().startswith("\u00bb ")]
    assert marked and "Capecitabine" in " ".join(marked) and "(p.4)" in marked[0]
    assert main(["search", str(out), QUESTION, "-k", "2", "--json"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    text = first["text"]
    assert first["focus"] and all(0 <= a < b <= len(text) for a, b in first["focus"])
    assert first["focus_text"] == [text[a:b] for a, b in first["focus"]]
    assert first["focus_boxes"] and all(b["page"] in first["pages"] and b["spans"] is not None for b in first["focus_boxes"])
    assert first["focus_method"] == "semantic"
    assert main(["search", str(out), QUESTION, "-k", "1", "--no-focus", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["focus"] == []
