"""Messages escape control characters in names, and failed runs leave nothing behind (issue 21.12):
a newline or an ANSI escape in a file name is printed escaped on one line; a failed
``parse --images`` leaves no PNGs; a killed run's temporary folder is removed by the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grounded.cli.main import main, one_line
from grounded.errors import InputNotFoundError, OutputError, escape_controls
from grounded.io.atomic import make_temp_dir
from tests.support.pdf_builders import figure_pdf

NASTY = "evil\nname\x1b[31m\u202e.pdf"


def test_escape_controls() -> None:
    assert escape_controls(NASTY) == "evil\\nname\\x1b[31m\\u202e.pdf"
    assert escape_controls("plain é ü 中.pdf") == "plain é ü 中.pdf"
    assert escape_controls("a\tb\x00\x7f\x9b") == "a\\tb\\x00\\x7f\\x9b"
    assert one_line("line one\nline two \x1b[2J") == "line one line two \\x1b[2J"


def test_errors_name_the_file_escaped() -> None:
    for err in (InputNotFoundError(NASTY, "no such file"), OutputError(NASTY, "cannot write")):
        assert "\n" not in str(err) and "\x1b" not in str(err) and "\\x1b[31m" in str(err)
        assert err.path == NASTY  # the attribute keeps the real name


def test_cli_prints_one_escaped_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(tmp_path / NASTY)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\u202e" not in err
    assert "evil\\nname\\x1b[31m" in err


def test_failed_parse_with_images_leaves_no_pngs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = figure_pdf(tmp_path / "fig.pdf")
    ok_out = tmp_path / "ok"
    assert main(["parse", str(pdf), "-o", str(ok_out), "--images"]) == 0
    assert [p.name for p in (ok_out / "images").iterdir()] == ["fig-p0001-01.png"]  # the parse does write one
    out = tmp_path / "failing"
    (out / "fig.json").mkdir(parents=True)  # the tree cannot be saved: the parse fails after the images
    assert main(["parse", str(pdf), "-o", str(out), "--images"]) == 1
    assert "directory" in capsys.readouterr().err
    assert not list((out / "images").glob("*.png"))


def test_a_killed_runs_temp_folder_is_removed_by_the_next_run(tmp_path: Path) -> None:
    prefix = f"grounded-test-{os.getpid()}-leftover-"
    code = (
        "import os, signal, sys\n"
        "from grounded.io.atomic import make_temp_dir\n"
        f"d = make_temp_dir({prefix!r})\n"
        "print(d.name, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert proc.returncode == -signal.SIGKILL
    left = Path(proc.stdout.strip())
    assert left.is_dir() and left.parent == Path(tempfile.gettempdir())
    mine = make_temp_dir(prefix)
    try:
        assert not left.exists() and Path(mine.name).is_dir()
    finally:
        mine.cleanup()


def test_the_ocr_scratch_folder_uses_the_cleaned_naming() -> None:
    from grounded.parsers.backends.pymupdf import parser as pymupdf_parser

    assert pymupdf_parser.OCR_TEMP_PREFIX == "grounded-ocr-"
    assert pymupdf_parser.make_temp_dir is make_temp_dir
