"""README and docs code (issue #34 item 7, issue #39 item 5): every snippet of README.md and docs/ is
tested.

* Every ```python block is preceded by a marker saying how it is tested -- ``<!-- test: run FIXTURE
  [slow] -->`` (executed here, in a folder the fixture prepares), ``<!-- test: elsewhere TEST_FILE -->``
  (a test file that reads this very block) or ``<!-- test: norun REASON -->`` (it needs a model
  service or a long evaluation run) -- uses only names it imports or defines, and each of its
  ``from grounded…`` / adapter imports resolves.
* Every ``grounded ...`` command line (in ```bash blocks and inline code) names a command that has
  ``--help`` and only flags its parser declares; every ``python benchmarks/X.py`` names a script that
  exists and takes the flags shown.
* The README stays short (<= 400 lines, its first Python example within the first 60) and every
  relative link in README and docs points at a file (and heading) that exists.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.data import REPO

_OURS = ("grounded", "llama_index_grounded", "langchain_grounded")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"(?:<!--\s*test:\s*(?P<mark>[^>]*?)\s*-->\n)?```python\n(?P<code>.*?)```", re.S)
_SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", re.S)
_INLINE = re.compile(r"(?<!`)`((?:[A-Z_]+=\S+ )*(?:grounded |python benchmarks/)[^`\n]*)`(?!`)")



@dataclass(frozen=True)
class Block:
    page: Path
    index: int
    line: int
    mark: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def kind(self) -> str:
        return self.mark.split()[0] if self.mark else ""


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _python_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, i, text.count("\n", 0, m.start("code")), m.group("mark") or "", m.group("code"))
        for i, m in enumerate(_BLOCK.finditer(text))
    ]


ALL_BLOCKS = [b for page in PAGES for b in _python_blocks(page)]


def _blocks(path: Path) -> list[str]:
    return [b.code for b in _python_blocks(path)]


# -- every block says how it is tested -----------------------------------------------------------------
def test_every_python_block_says_how_it_is_tested() -> None:
    assert len(ALL_BLOCKS) > 20
    unmarked = [b.name for b in ALL_BLOCKS if b.kind not in ("run", "elsewhere", "norun")]
    assert unmarked == [], "add <!-- test: run FIXTURE | elsewhere TEST_FILE | norun REASON --> before each"
    for b in ALL_BLOCKS:
        words = b.mark.split()
        if b.kind == "run":
            assert words[1] in FIXTURES and set(words[2:]) <= {"slow"}, b.name
        elif b.kind == "elsewhere":
            test_file = REPO / words[1]
            assert test_file.is_file(), b.name
            source = test_file.read_text(encoding="utf-8")
            assert b.page.name in source or _rel(b.page) in source, f"{words[1]} does not read {b.name}"
        else:
            assert len(words) > 2, f"{b.name}: say why it does not run"


# -- names and imports ---------------------------------------------------------------------------------
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


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.name)
def test_blocks_use_only_names_they_import_or_define(block: Block) -> None:
    assert _undefined(block.code) == set(), block.code[:200]


def test_the_quickstart_imports_document_text_from_its_module() -> None:
    quickstart = _blocks(REPO / "README.md")[0]
    assert "from grounded.text.stream import document_text" in quickstart
    assert "document_text(root)" in quickstart


def _imports(code: str) -> list[tuple[str, str]]:
    return [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _OURS
        for alias in node.names
    ]


def _resolves(module: str, name: str) -> bool:
    mod = importlib.import_module(module)
    if hasattr(mod, name):
        return True
    return hasattr(mod, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None


def test_every_grounded_import_in_readme_and_docs_resolves() -> None:
    seen, missing = 0, []
    for block in ALL_BLOCKS:
        for module, name in _imports(block.code):
            seen += 1
            if not _resolves(module, name):
                missing.append(f"{block.name}: from {module} import {name}")
    assert missing == []
    assert seen > 30


# -- running the blocks --------------------------------------------------------------------------------
def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "GROUNDED_CACHE_DIR": str(cache)}


@pytest.fixture(scope="module")
def snippet_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One parse cache for every snippet run of this module: the sample guideline is parsed once."""
    return tmp_path_factory.mktemp("snippet-cache")


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated sample guideline as ``guideline.pdf`` (and ``paper.pdf``, the name docs/grounding.md uses)."""
    from grounded.samples import write_sample_pdf

    folder = tmp_path_factory.mktemp("sample")
    write_sample_pdf(folder / "guideline.pdf")
    shutil.copy(folder / "guideline.pdf", folder / "paper.pdf")
    return folder


@pytest.fixture(scope="module")
def corpus_dir(sample_dir: Path, snippet_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``corpus_out``: the sample guideline ingested (``workers=0``) with a LanceDB table, for text-mode search."""
    folder = tmp_path_factory.mktemp("corpus")
    shutil.copy(sample_dir / "guideline.pdf", folder / "guideline.pdf")
    code = "from grounded.ingest import ingest\nprint(ingest(['guideline.pdf'], 'corpus_out', workers=0, sink='lancedb', progress=False).summary())"
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=_env(snippet_cache), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0 and "1 done" in done.stdout + done.stderr, done.stderr[-3000:]
    return folder


#: what a ``run`` block's folder holds: nothing, the sample guideline, or it plus its ingest output
FIXTURES = {"empty": None, "sample": "sample_dir", "corpus": "corpus_dir"}
RUN_BLOCKS = [
    pytest.param(b, id=b.name, marks=[pytest.mark.slow] if "slow" in b.mark.split() else [])
    for b in ALL_BLOCKS
    if b.kind == "run"
]


@pytest.mark.parametrize("block", RUN_BLOCKS)
def test_the_block_runs_as_written(block: Block, request: pytest.FixtureRequest, snippet_cache: Path,
                                   tmp_path: Path) -> None:
    fixture = FIXTURES[block.mark.split()[1]]
    if fixture is not None:
        shutil.copytree(request.getfixturevalue(fixture), tmp_path, dirs_exist_ok=True)
    script = tmp_path / "snippet.py"  # a file, so spawned processes can import it again
    script.write_text(block.code, encoding="utf-8")
    outputs = {name for name in re.findall(r"[\"']([\w.-]+\.(?:pdf|png))[\"']", block.code) if not (tmp_path / name).exists()}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(snippet_cache), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{block.name}\n{done.stderr[-3000:]}"
    assert {name for name in outputs if not (tmp_path / name).is_file()} == set(), "the files it writes"


def test_the_quickstart_runs_here_and_highlights() -> None:
    """The Quickstart stays a ``run`` block (executed above, where its highlighted.pdf must appear)."""
    first = _python_blocks(REPO / "README.md")[0]
    assert first.mark.split()[:2] == ["run", "sample"]
    assert 'highlight("guideline.pdf", [c], "highlighted.pdf")' in first.code


# -- command lines ---------------------------------------------------------------------------------------
def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def _command_lines() -> list[tuple[str, str]]:
    """(page, command line) for every ``grounded ...`` / ``python benchmarks/...`` line shown."""
    lines = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in _SHELL_BLOCK.findall(text):
            for line in block.splitlines():
                line = line.split("  #")[0].split(" # ")[0].strip()
                words = line.split()
                while words and re.fullmatch(r"[A-Z_]+=\S+", words[0]):
                    words = words[1:]
                if words[:1] == ["grounded"] or (words[:1] == ["python"] and words[1].startswith("benchmarks/")):
                    lines.append((_rel(page), " ".join(words)))
        for span in _INLINE.findall(text):
            words = [w for w in span.split() if not re.fullmatch(r"[A-Z_]+=\S+", w)]
            lines.append((_rel(page), " ".join(words)))
    return lines


COMMAND_LINES = _command_lines()


def _words(line: str) -> list[str]:
    try:
        words = shlex.split(line)
    except ValueError:  # an unbalanced quote in a prose fragment
        words = line.split()
    return [w.strip("[]()") for w in words]


def _is_flag(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--") and not re.fullmatch(r"-[\d.]+", word)


def test_every_command_has_help() -> None:
    from grounded.cli.main import build_parser

    commands = _subparsers(build_parser())
    assert {"parse", "chunk", "ground", "highlight", "ingest", "search", "view", "demo", "eval"} <= commands.keys()
    for name, sub in commands.items():
        assert "-h" in _flags(sub) and sub.format_help().strip(), name
        for task, nested in _subparsers(sub).items():
            assert nested.format_help().strip(), f"{name} {task}"


def test_every_command_line_shown_names_real_commands_and_flags() -> None:
    from grounded.cli.main import build_parser

    root = build_parser()
    wrong, checked = [], 0
    for page, line in COMMAND_LINES:
        words = _words(line)
        if words[0] == "python":
            script = REPO / words[1]
            if not script.is_file():
                wrong.append(f"{page}: {line} (no {words[1]})")
                continue
            source = script.read_text(encoding="utf-8")
            own = words[2:words.index("--")] if "--" in words else words[2:]  # after --: another command's
            wrong += [f"{page}: {line} ({w})" for w in own if _is_flag(w) and f'"{w.split("=")[0]}"' not in source]
            checked += 1
            continue
        parser, words = root, words[1:]
        while words and _is_flag(words[0]):  # grounded -v ingest ...
            if words[0] not in _flags(parser):
                wrong.append(f"{page}: {line} ({words[0]})")
            words = words[1:]
        if not words or words[0].startswith(("<", "...")) or "|" in words[0]:
            continue  # `grounded <command> --help`, `grounded parse|chunk|...`
        commands = _subparsers(parser)
        if words[0] not in commands:
            wrong.append(f"{page}: {line} (no command {words[0]!r})")
            continue
        parser, words = commands[words[0]], words[1:]
        nested = _subparsers(parser)
        if nested and words and words[0] in nested:
            parser, words = nested[words[0]], words[1:]
        flags = _flags(parser)
        wrong += [f"{page}: {line} ({w})" for w in words if _is_flag(w) and w.split("=")[0] not in flags]
        checked += 1
    assert wrong == []
    assert checked > 60


# -- the README's shape and the links ------------------------------------------------------------------------
def test_the_readme_is_short_and_shows_code_first() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    assert _python_blocks(REPO / "README.md")[0].line < 60


def test_the_readme_maps_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#]+)", readme))
    pages = {_rel(p) for p in (REPO / "docs").glob("*.md")} | {"docs/backends/README.md", "docs/results/README.md"}
    assert pages - linked == set()


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_relative_link_points_at_a_file_and_heading() -> None:
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https://...
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{_rel(page)}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{_rel(page)}: {target} (no heading)")
    assert broken == []
