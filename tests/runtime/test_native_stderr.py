"""Native stderr chatter (issue #34): Tesseract, inside MuPDF, wrote "Image too small to scale!!" /
"Line cannot be recognized!!" straight to file descriptor 2 during OCR. OCR calls now run with fd 2
captured (:func:`grounded.runtime.quiet.filtered_native_stderr`): known chatter goes to the DEBUG log,
every other line (a real error) still reaches stderr. Each case runs in a subprocess, where stderr
is the real fd 2."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.data import TEST_DATA

#: a 283 x 77 strip of the scanned sample guideline's page header, as grounded's OCR cut it out
#: (``grounded chunk SCAN.pdf --ocr always``): Tesseract says "Line cannot be recognized!!" on it
STRIP = TEST_DATA / "ocr" / "tesseract_line_cannot_be_recognized.png"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=300,
    )


def _needs_ocr() -> None:
    from grounded.parsers.ocr.engine import ocr_available

    if not ocr_available():
        pytest.skip("no Tesseract language data (pip install 'grounded[ocr]')")


def test_ocr_of_the_strip_prints_nothing_and_reads_the_text() -> None:
    _needs_ocr()
    done = _run(
        f"""
        import pymupdf
        from grounded.parsers.ocr.engine import tessdata_dir, tesseract_pdf
        pix = pymupdf.Pixmap({str(STRIP)!r})
        pix.set_dpi(200, 200)
        with pymupdf.open("pdf", tesseract_pdf(pix, tessdata_dir())) as doc:
            print(doc[0].get_text().strip())
        """
    )
    assert done.returncode == 0, done.stderr
    assert "SAMPLE" in done.stdout
    assert done.stderr == ""


def test_the_strip_does_make_tesseract_talk_without_the_filter() -> None:
    """The case is real: MuPDF's own call prints the message (so the test above proves the filter)."""
    _needs_ocr()
    done = _run(
        f"""
        import pymupdf
        from grounded.parsers.ocr.engine import OCR_LANGUAGE, tessdata_dir
        pix = pymupdf.Pixmap({str(STRIP)!r})
        pix.set_dpi(200, 200)
        pix.pdfocr_tobytes(compress=True, language=OCR_LANGUAGE, tessdata=tessdata_dir())
        """
    )
    assert done.returncode == 0, done.stderr
    assert "Line cannot be recognized!!" in done.stderr


def test_a_real_tesseract_error_still_reaches_stderr(tmp_path: os.PathLike[str]) -> None:
    _needs_ocr()
    done = _run(
        f"""
        import pymupdf
        from grounded.parsers.ocr.engine import tesseract_pdf
        pix = pymupdf.Pixmap({str(STRIP)!r})
        try:
            tesseract_pdf(pix, {str(tmp_path)!r})
        except Exception as exc:
            print("raised", type(exc).__name__)
        """
    )
    assert "raised" in done.stdout
    assert "Failed loading language 'eng'" in done.stderr


def test_filter_keeps_other_lines_in_order_and_restores_fd2() -> None:
    done = _run(
        """
        import logging, os, re, sys, threading
        from grounded.runtime.quiet import filtered_native_stderr
        logging.basicConfig(stream=sys.stdout, level=logging.DEBUG, format="LOG %(message)s")
        noise = (re.compile(rb"^Line cannot be recognized!!"),)
        before = os.fstat(2).st_ino

        def native(tag):
            with filtered_native_stderr(noise):
                os.write(2, b"Line cannot be recognized!!\\n")
                os.write(2, f"real error {tag}\\n".encode())

        with filtered_native_stderr(noise):
            native("nested")
            print("python line", file=sys.stderr)
        threads = [threading.Thread(target=native, args=(f"t{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("fd2 restored", os.fstat(2).st_ino == before)
        os.write(2, b"after\\n")
        """
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "Line cannot be recognized!!" not in done.stderr
    assert lines[:2] == ["real error nested", "python line"]
    assert sorted(lines[2:-1]) == [f"real error t{i}" for i in range(4)]
    assert lines[-1] == "after"
    assert "fd2 restored True" in done.stdout
    assert "LOG native stderr: Line cannot be recognized!!" in done.stdout
