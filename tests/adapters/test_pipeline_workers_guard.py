"""LlamaIndex's ``IngestionPipeline(...).run(num_workers=2)`` with grounded's node parser in a script
without ``if __name__ == "__main__":`` fails at once with a message naming the line (issue 42 item
8: its spawned workers respawned for 15 minutes, silently); guarded, it runs. Real pipelines in
real subprocesses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RUN = """docs = [Document(text="Patients felt better after exercise. " * 40, id_=f"d{i}") for i in range(4)]
nodes = IngestionPipeline(transformations=[GroundedNodeParser(chunk_size=64)]).run(documents=docs, num_workers=2)
print(len(nodes), "nodes")"""

HEAD = """from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index_grounded import GroundedNodeParser

"""


def _run(tmp_path: Path, guarded: bool) -> subprocess.CompletedProcess[str]:
    body = 'if __name__ == "__main__":\n' + textwrap.indent(RUN, "    ") if guarded else RUN
    script = tmp_path / ("guarded.py" if guarded else "unguarded.py")
    script.write_text(HEAD + body + "\n")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_an_unguarded_pipeline_with_workers_fails_at_once_naming_the_line(tmp_path: Path) -> None:
    done = _run(tmp_path, guarded=False)
    assert done.returncode != 0
    assert "UnguardedMainError" in done.stderr and "unguarded.py, line 6" in done.stderr, done.stderr[-2000:]
    assert "IngestionPipeline.run(num_workers=...) with GroundedNodeParser" in done.stderr
    assert "bootstrapping phase" not in done.stderr  # no dying worker got that far


def test_a_guarded_pipeline_with_workers_runs(tmp_path: Path) -> None:
    done = _run(tmp_path, guarded=True)
    assert done.returncode == 0 and "16 nodes" in done.stdout, done.stderr[-2000:]
