"""Issue #21 item 9: OCR does not leak: RSS stays flat over repeated OCR'd parses in one process.

A child process parses a one-page scan (page 2 of a shared article rendered at 200 dpi, no text
layer, so every parse runs Tesseract and writes the temporary OCR'd copy) PARSES times with one parser object and prints its RSS after
each parse; after WARM_UP parses the growth must be at most MAX_MB_PER_PAGE per parse. (Measured
numbers: docs/results/memory_growth_ocr.md.) The leak this caught was PyMuPDF's binding of
``fz_scale_pixmap`` keeping every column region's image (~4 MB each; a page cut into columns
leaked ~9 MB per parse, a one-column scan nothing): see ``grounded.parsers.ocr.engine.scaled_pixmap``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.data import REPO, shared
from tests.support.scanned import scanned_pdf

#: 3 parses measured after the warm-up (8 before #30.7: docs/results/memory_growth_ocr.md shows the
#: RSS flat from the 3rd parse, +0.1 MB per parse, against ~10 MB per parse when it leaked)
PARSES = 6
WARM_UP = 3
MAX_MB_PER_PAGE = 0.5

_CHILD = r"""
import gc, json, sys, warnings
import psutil
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

warnings.simplefilter("ignore")
parser = PyMuPDFParser(ocr="auto")
proc = psutil.Process()
rss = []
for _ in range(int(sys.argv[2])):
    root = parser.parse(sys.argv[1])
    assert root.metadata["pages"][0]["text_source"] == "ocr"
    del root
    gc.collect()
    rss.append(proc.memory_info().rss / 2**20)
print(json.dumps(rss))
"""


@pytest.mark.slow
def test_rss_is_flat_over_repeated_ocr_parses(tmp_path: Path) -> None:
    pdf = tmp_path / "scan.pdf"
    pdf.write_bytes(scanned_pdf(shared("long", "cermine_web_example3_clinsci.pdf"), [2]))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(pdf), str(PARSES)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1200, check=True,
    )
    rss = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(rss) == PARSES
    per_page = (rss[-1] - rss[WARM_UP - 1]) / (PARSES - WARM_UP)
    assert per_page <= MAX_MB_PER_PAGE, f"RSS grew {per_page:.2f} MB per OCR'd parse after warm-up: {rss}"
