"""The README's drop-in section runs as written: LlamaIndex's and LangChain's own tutorials with one
line changed (SimpleDirectoryReader -> VectorStoreIndex / IngestionPipeline with GroundedNodeParser;
PyMuPDFLoader -> GroundedTextSplitter -> InMemoryVectorStore and Chroma with a `$contains` page
filter), offline, on a shared PDF; every printed hit has boxes (issue 31.5)."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from grounded.metadata import GroundingWarning
from tests.support.data import REPO, shared

PDF_PARTS = ("pdfs", "cermine_medical", "test2.pdf")


def _section_examples() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Drop-in: the frameworks' own tutorials"):]
    section = section[: section.index("\n### ", 10)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.slow  # loads the MiniLM model, as the README does
def test_the_readme_drop_in_examples_run(shared_parses: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    examples = _section_examples()
    assert len(examples) == 2 and "SimpleDirectoryReader" in examples[0] and "PyMuPDFLoader" in examples[1]
    assert examples[0].count("# the one line") == 1 and examples[1].count("# the one line") == 1
    pdf = shared(*PDF_PARTS)
    shared_parses.tree(pdf)  # the README parses into the default cache: give it the run's parse
    shutil.copytree(shared_parses.cache.directory, tmp_path / "cache" / "parses", ignore=shutil.ignore_patterns("locks"))
    (tmp_path / "data").mkdir()
    shutil.copy(pdf, tmp_path / "data" / "paper.pdf")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)  # no chunk without boxes, no stale boxes
        warnings.simplefilter("ignore", DeprecationWarning)
        for code in examples:
            exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})  # noqa: S102 - the README's own code
    printed = capsys.readouterr().out.splitlines()
    boxed = [line for line in printed if "ParsingBoundingBox" in line]
    assert len(boxed) == 3 + 1 + 3, printed  # 3 LlamaIndex hits, the pipeline's first node, 3 LangChain hits
    assert all(line.startswith("paper.pdf ") for line in boxed[:3])
    pages = eval(printed[-1])  # noqa: S307 - the Chroma hits' pages, printed by the README
    assert pages and all(2 in p for p in pages)
