"""Issue #21.12: file names in warnings and log messages are printed with their control characters
escaped (:func:`grounded.errors.escape_controls`): a name holding an ANSI escape or a bidi override
cannot drive the terminal, reorder a line or forge a log line. Real parses of constructed PDFs saved
under such a name."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pymupdf
import pytest

from grounded.grounding.furniture import source_pdf
from grounded.model import ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.pdf_input import NoTextLayerWarning, PDFDamageWarning
from tests.support.pdf_builders import broken_font_pdf

EVIL = "evil\x1b[31mred\u202egnp.pdf"
RAW = ("\x1b", "\u202e")


def _messages(caught: list[warnings.WarningMessage], caplog: pytest.LogCaptureFixture) -> list[str]:
    return [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]


def _check(messages: list[str]) -> None:
    named = [m for m in messages if "evil" in m]
    assert named, messages
    for m in named:
        assert not any(c in m for c in RAW), repr(m)
        assert "evil\\x1b[31mred\\u202egnp.pdf" in m, repr(m)


def test_parse_warnings_escape_the_file_name(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    damaged = broken_font_pdf(tmp_path / "font.pdf").rename(tmp_path / EVIL)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A page of text before a blank page.", fontsize=11)
    doc.new_page()
    blank_dir = tmp_path / "blank"
    blank_dir.mkdir()
    doc.save(blank_dir / EVIL)
    caplog.set_level(logging.DEBUG, logger="grounded")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PyMuPDFParser(ocr="never").parse(damaged)
        PyMuPDFParser(ocr="never").parse(blank_dir / EVIL)
    assert {PDFDamageWarning, NoTextLayerWarning} <= {w.category for w in caught}
    _check(_messages(caught, caplog))


def test_grounding_log_escapes_the_file_name(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = ParsingResult("root", T.ROOT, metadata={"source": {"path": str(tmp_path / EVIL), "sha256": "0" * 64}})
    caplog.set_level(logging.INFO, logger="grounded")
    assert source_pdf(root) is None  # not there
    (tmp_path / EVIL).write_bytes(b"%PDF-1.7 other bytes")
    assert source_pdf(root) is None  # changed since parsed
    _check(_messages([], caplog))
    assert len([r for r in caplog.records if "evil" in r.getMessage()]) == 2


def test_cli_log_lines_are_one_line_with_controls_escaped() -> None:
    from grounded.cli.main import OneLineFormatter

    record = logging.LogRecord("grounded.x", logging.WARNING, __file__, 1, "cannot read %s: %s", (EVIL, "bad\nFORGED line"), None)
    line = OneLineFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert "\n" not in line and not any(c in line for c in RAW)
    assert line == "WARNING grounded.x: cannot read evil\\x1b[31mred\\u202egnp.pdf: bad FORGED line"
