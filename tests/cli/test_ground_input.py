"""``grounded ground`` input (issue 21.4): one output per JSONL line (an empty or oversized text is a
refused chunk with its reason), a lone surrogate or a deeply nested line is a typed one-line error
naming the line - never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grounded.cli.main import main
from grounded.grounding.grounder import MAX_TEXT_CHARS
from grounded.serialization import read_chunks_jsonl
from tests.support.pdf_builders import paragraph_pages_pdf

PARAS = [
    "Stimulation of the receptor changes lipid uptake in cultured macrophages of the mouse.",
    "A second paragraph reports the measured concentrations over three weeks of treatment.",
]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return paragraph_pages_pdf(tmp_path_factory.mktemp("gin") / "doc.pdf", [[(PARAS[0], 100), (PARAS[1], 320)]])


def _lines(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def test_an_empty_text_keeps_its_place(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks = _lines(tmp_path / "c.jsonl", [json.dumps({"text": PARAS[0]}), json.dumps({"text": ""}), json.dumps({"text": PARAS[1]})])
    out = tmp_path / "out.jsonl"
    assert main(["ground", str(pdf), str(chunks), "-o", str(out)]) == 0
    assert "3 chunks" in capsys.readouterr().out
    got = read_chunks_jsonl(out).chunks
    assert [c.content for c in got] == [PARAS[0], "", PARAS[1]]
    assert [c.metadata["grounding_status"] for c in got] == ["exact", "refused", "exact"]
    assert got[1].metadata["grounding_reason"]


def test_an_oversized_text_is_refused_in_place(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = ("lipid uptake " * (MAX_TEXT_CHARS // 13 + 10))
    chunks = _lines(tmp_path / "c.jsonl", [json.dumps({"text": big}), json.dumps({"text": PARAS[1]})])
    out = tmp_path / "out.jsonl"
    assert main(["ground", str(pdf), str(chunks), "-o", str(out)]) == 0
    first, second = read_chunks_jsonl(out).chunks
    assert first.metadata["grounding_status"] == "refused" and "grounding limit" in first.metadata["grounding_reason"]
    assert second.metadata["grounding_status"] == "exact"


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"text": "good \\ud800 bad"}', "lone surrogate"),
        ('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("[" * 100_000, "line 2"),
    ],
    ids=["surrogate", "deep-nesting", "deep-unclosed"],
)
def test_bad_lines_are_typed_errors_naming_the_line(
    pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, needle: str
) -> None:
    chunks = _lines(tmp_path / "c.jsonl", [json.dumps({"text": PARAS[0]}), line])
    assert main(["ground", str(pdf), str(chunks)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "line 2" in err and needle in err and str(chunks) in err
