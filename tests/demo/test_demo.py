"""The README's main job (`grounded demo`) end to end, offline, without ../shared."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf

from grounded.cli.main import main


def test_demo_parses_chunks_and_highlights_the_sample(tmp_path: Path, capsys) -> None:
    assert main(["demo", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("sample_guideline.pdf", "sample_guideline.json", "sample_guideline.md", "chunks.jsonl", "sample_guideline.highlighted.pdf"):
        assert (tmp_path / name).stat().st_size > 0, name
    lines = (tmp_path / "chunks.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["schema"] == "grounded.chunking_result"
    chunks = [json.loads(line) for line in lines[1:]]
    assert len(chunks) > 10
    # the answer to the default question sits in the table that continues over the page break
    assert "Capecitabine, or olaparib if BRCA variant" in out
    answer_pngs = sorted(tmp_path.glob("answer-*.png"))
    answer_id = out.split("answer   chunk ", 1)[1].split()[0]
    (answer,) = [c for c in chunks if c["id"] == answer_id]
    # one image per page of the answer's body (its section heading, on the page before, gets none)
    assert len(answer_pngs) == len(answer["metadata"]["pages"]) >= 1
    with pymupdf.open(tmp_path / "sample_guideline.highlighted.pdf") as doc:
        annotated_pages = {page.number + 1 for page in doc if list(page.annots())}
        page_count = doc.page_count
    assert annotated_pages == set(range(1, page_count + 1))  # every page carries highlights
