"""The package's public surface: ``from grounded import *`` and the one-call ``parse``/``chunk``."""

from __future__ import annotations

import subprocess
import sys

import grounded
from grounded.chunking import document_text
from grounded.serialization import save_parsing_result
from tests.support.data import shared


def test_star_import_resolves_every_exported_name():
    # in a fresh interpreter: the lazy exports must all exist, and importing them loads no framework/SDK/torch
    code = (
        "import sys\n"
        "from grounded import *\n"
        "import grounded\n"
        "missing = [n for n in grounded.__all__ if n not in globals()]\n"
        "assert not missing, missing\n"
        "heavy = [m for m in ('torch', 'llama_index', 'langchain_core', 'google.genai', 'docling_core') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_parse_and_chunk_in_one_call(tmp_path):
    pdf = sorted(shared("pdfs", "icdar2013_tables", "competition-dataset-us").glob("*.pdf"))[0]
    root = grounded.parse(pdf)
    text = document_text(root).text
    from_pdf = grounded.chunk(pdf, "fixed", 64)
    from_tree = grounded.chunk(root, "fixed", 64)
    stored = save_parsing_result(root, tmp_path / "parsed.json")
    from_json = grounded.chunk(stored, "fixed", 64)
    assert [c.id for c in from_pdf.chunks] == [c.id for c in from_tree.chunks] == [c.id for c in from_json.chunks]
    for c in from_tree.chunks:
        assert text[c.metadata["start_char"] : c.metadata["end_char"]] == c.body
