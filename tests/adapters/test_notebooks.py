"""The RAG walkthrough notebooks run top to bottom (nbclient, python3 kernel of this interpreter), and
the outputs committed with them (what GitHub shows) are those of today's code
(``scripts/run_notebooks.py`` stores them)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import ipykernel  # noqa: F401  (the python3 kernel the notebooks run in; part of the test extra)
import nbclient
import nbformat
import pytest

from tests.support.data import REPO

NOTEBOOKS = REPO / "notebooks"


def run_notebook(name: str, cwd: Path = NOTEBOOKS) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def outputs(nb: nbformat.NotebookNode) -> tuple[str, list[bytes]]:
    texts, images = [], []
    for cell in nb.cells:
        for out in cell.get("outputs", ()):
            if out.output_type == "stream":
                texts.append(out.text)
            elif out.output_type in ("display_data", "execute_result"):
                data = out.get("data", {})
                if "image/png" in data:
                    images.append(base64.b64decode(data["image/png"]))
                if "text/plain" in data:
                    texts.append(data["text/plain"])
            assert out.output_type != "error", out
    return "\n".join(texts), images


@pytest.fixture
def no_llm_key(monkeypatch):
    """The answer-generation cell must skip cleanly without a key (and never call the network here)."""
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)


SHARED_PDF = NOTEBOOKS.parent.parent / "shared" / "data" / "long" / "cermine_web_example3_clinsci.pdf"


def _comparable(text: str) -> str:
    """Printed text without the digits of scores (the last digit of a float may differ by BLAS build)."""
    return re.sub(r"\d+\.\d+", "#", text)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama_index_rag.ipynb", "langchain_rag.ipynb"])
def test_notebook_retrieves_shows_the_source_and_its_committed_outputs_are_todays(name, no_llm_key):
    """One run per notebook: ranked hits, the focus, the drawn sources; and every code cell is
    committed with its output, none an error, printing what today's code prints (scores aside) with
    as many images -- else re-run ``scripts/run_notebooks.py``."""
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(cell.get("outputs") for cell in committed.cells if cell.cell_type == "code"), (
        f"{name}: a code cell without output: run scripts/run_notebooks.py and commit the result")
    stored_text, stored_images = outputs(committed)
    text, images = outputs(run_notebook(name))
    assert "[1]" in text and "pages [" in text  # ranked hits with their pages
    assert "GEMINI_API_KEY is not set: answer generation skipped." in text
    assert "focus: " in text  # the sentences of the top hit that answer the question
    assert "retrieved.pdf" in text
    assert images and all(png.startswith(b"\x89PNG") for png in images)
    if SHARED_PDF.exists():  # the committed outputs are those of the shared PDF
        assert "927" in text  # the clinsci answer ("927-fold more selective") is among the shown hits
        assert _comparable(stored_text) == _comparable(text), f"{name}: stale outputs: run scripts/run_notebooks.py"
        assert len(stored_images) == len(images)


@pytest.mark.slow
def test_notebook_falls_back_to_the_sample_pdf_without_shared_data(tmp_path, no_llm_key):
    cwd = tmp_path / "checkout" / "notebooks"  # no ../../shared/data beside it
    cwd.mkdir(parents=True)
    text, images = outputs(run_notebook("langchain_rag.ipynb", cwd))
    assert "sample_guideline.pdf" in text and "[1]" in text
    assert images and all(png.startswith(b"\x89PNG") for png in images)
