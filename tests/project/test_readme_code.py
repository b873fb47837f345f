"""README and docs code (issue #34 item 7): the Quickstart used ``document_text(root)`` without
saying where it comes from (``grounded.text.stream``). Every README Python block uses only names it
imports or defines, every ``from grounded… import`` in README and docs resolves, and the Quickstart
runs as written on the sample guideline."""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.data import REPO

_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_OURS = ("grounded", "llama_index_grounded", "langchain_grounded")


def _blocks(path: Path) -> list[str]:
    return _BLOCK.findall(path.read_text(encoding="utf-8"))


def _undefined(code: str) -> set[str]:
    tree = ast.parse(code)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return used - defined


def test_readme_blocks_use_only_names_they_import_or_define() -> None:
    blocks = _blocks(REPO / "README.md")
    assert blocks
    for code in blocks:
        assert _undefined(code) == set(), code[:200]


def test_the_quickstart_imports_document_text_from_its_module() -> None:
    quickstart = _blocks(REPO / "README.md")[0]
    assert "from grounded.text.stream import document_text" in quickstart
    assert "document_text(root)" in quickstart


def _imports(code: str) -> list[tuple[str, str]]:
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a fragment: its import lines alone
        lines = "\n".join(line for line in code.splitlines() if line.startswith(("from ", "import ")))
        tree = ast.parse(lines)
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _OURS
        for alias in node.names
    ]


def test_every_grounded_import_in_readme_and_docs_resolves() -> None:
    seen = 0
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for code in _blocks(path):
            for module, name in _imports(code):
                seen += 1
                mod = importlib.import_module(module)
                assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}") is not None, (
                    f"{path.name}: from {module} import {name}"
                )
    assert seen > 10


@pytest.mark.slow
def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    from grounded.samples import write_sample_pdf

    write_sample_pdf(tmp_path / "guideline.pdf")
    code = _blocks(REPO / "README.md")[0]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "highlighted.pdf").exists()
