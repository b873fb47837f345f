"""Run the walkthrough notebooks top to bottom and store them WITH their outputs (what GitHub shows).

    .venv/bin/python scripts/run_notebooks.py            # every notebook in notebooks/
    .venv/bin/python scripts/run_notebooks.py notebooks/langchain_rag.ipynb

Each runs in the notebooks folder (so the shared data beside the repository is found), offline,
without an LLM key (the answer cell then says it skipped). Execution timestamps are dropped so a
re-run changes a file only where an output changed. ``tests/adapters/test_notebooks.py`` runs them
again and fails when the stored outputs are stale.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbclient
import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def run(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    print(f"{path}: {sum(len(c.get('outputs', [])) for c in nb.cells)} outputs", file=sys.stderr)


def main(argv: list[str]) -> int:
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        os.environ.pop(var, None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in argv or sorted(str(p) for p in NOTEBOOKS.glob("*.ipynb")):
        run(Path(name).resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
