"""``grounded chunk -o`` / ``grounded ground -o`` (issue 21.1): ``-`` writes JSONL to stdout (summary
on stderr); a link, FIFO, directory or ``.csv`` output is refused with one line, exit 1, before any
work, and the target is left as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grounded.cli.main import main
from tests.support.pdf_builders import paragraph_pages_pdf

PARAS = [
    "Stimulation of the receptor changes lipid uptake in cultured macrophages of the mouse.",
    "A second paragraph reports the measured concentrations over three weeks of treatment.",
]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("outputs") / "doc.pdf"
    return paragraph_pages_pdf(path, [[(PARAS[0], 100), (PARAS[1], 320)]])


@pytest.fixture()
def chunks_file(tmp_path: Path) -> Path:
    path = tmp_path / "chunks.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in PARAS), encoding="utf-8")
    return path


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_chunk_to_stdout(pdf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(pdf), "-o", "-"]) == 0
    captured = capsys.readouterr()
    rows = _jsonl(captured.out)
    assert rows[0]["schema"] == "grounded.chunking_result" and len(rows) >= 2
    assert "doc.pdf:" in captured.err and "chunks" in captured.err


def test_ground_to_stdout(pdf: Path, chunks_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ground", str(pdf), str(chunks_file), "-o", "-"]) == 0
    captured = capsys.readouterr()
    rows = _jsonl(captured.out)
    assert [r["content"] for r in rows[1:]] == PARAS
    assert "2 grounded" in captured.err


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err and "error:" in err and needle in err, err


@pytest.mark.parametrize("command", ["chunk", "ground"])
def test_links_devices_directories_and_unknown_names_refused(
    command: str, pdf: Path, chunks_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = [str(pdf)] + ([str(chunks_file)] if command == "ground" else [])
    real = tmp_path / "real.jsonl"
    real.write_text("keep\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    null_link = tmp_path / "null.jsonl"
    null_link.symlink_to(os.devnull)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    folder = tmp_path / "dir.json"
    folder.mkdir()
    for target, needle in ((link, "symbolic link"), (null_link, "symbolic link"), (fifo, "FIFO"),
                           (folder, "directory"), (tmp_path / "out.csv", "unknown output format")):
        _refused(capsys, [command, *inputs, "-o", str(target)], needle)
    assert link.is_symlink() and real.read_text() == "keep\n"
    assert null_link.is_symlink() and not fifo.is_file() and folder.is_dir()
    assert not (tmp_path / "out.csv").exists()
