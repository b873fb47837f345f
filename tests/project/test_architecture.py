"""The layers contract (docs/architecture.md): imports only go down, over *all* imports of the package
(function-level and TYPE_CHECKING imports and literal ``importlib.import_module`` calls included),
so a new upward import fails here, not in a user's import cycle."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from grounded.runtime.code_version import CHUNK_CODE, OUTSIDE, PARSE_CODE
from tests.support.data import REPO

CORE = REPO / "core"

#: bottom -> top; a part imports parts of lower layers (and itself), never its own layer's others
LAYERS: list[set[str]] = [
    {"errors"},
    {"model"},
    {"runtime"},
    {"io"},
    {"parsers"},
    {"text"},
    {"chunking"},
    {"grounding"},
    {"llm"},
    {"attribution", "demo"},
    {"graph", "ingest"},
    {"search"},
    {"view"},
    {"cli", "api"},
    {"evaluation"},
]
#: the package's face to users: lazy exports and re-exports of public import paths. Nothing inside
#: the package imports them.
FACADE = {"__init__", "metadata", "serialization", "samples"}
LAYER_OF = {part: i for i, parts in enumerate(LAYERS) for part in parts}
MAX_ROOT_MODULES = 6
MAX_LINES = 800


def module_name(path: Path, root: Path) -> str:
    parts = ["grounded", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part_of(module: str) -> str:
    """Top-level part of ``grounded.x.y`` (``x``); the package itself is the facade ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported_modules(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, absolute module) of every import of ``grounded`` in ``source``, wherever it stands."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names] if not node.module or node.level else []
            for t in [target, *names]:
                yield node.lineno, t
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def violations(root: Path) -> list[str]:
    """Every import in the package under ``root`` that goes up, sideways or into the facade."""
    known = {part_of(module_name(p, root)) for p in root.rglob("*.py")}
    out = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        mine = part_of(module)
        for line, target in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            if target != "grounded" and not target.startswith("grounded."):
                continue
            theirs = part_of(target)
            if theirs == mine or theirs not in known:  # a name imported from a module, not a part
                continue
            where = f"{path.relative_to(root)}:{line} imports {target}"
            if theirs in FACADE:
                if mine not in FACADE:
                    out.append(f"{where} (the facade is for users, import the module that defines it)")
            elif mine in FACADE:
                continue
            elif theirs not in LAYER_OF or mine not in LAYER_OF:
                out.append(f"{where} (part {theirs if theirs not in LAYER_OF else mine!r} has no layer: add it to LAYERS)")
            elif LAYER_OF[theirs] >= LAYER_OF[mine]:
                out.append(f"{where} (layer {LAYER_OF[theirs]} from layer {LAYER_OF[mine]}: imports only go down)")
    return out


def test_imports_only_go_down() -> None:
    assert violations(CORE) == []


@pytest.mark.parametrize(
    ("file", "line"),
    [
        ("text/stream.py", "\n\ndef _planted():\n    from ..chunking import Chunker\n    return Chunker\n"),
        ("model/boxes.py", "\nfrom grounded.io import codec  # planted\n"),
        ("parsers/base.py", "\n\ndef _planted():\n    import importlib\n    return importlib.import_module('grounded.llm.spec')\n"),
        ("grounding/grounder.py", "\nfrom ..attribution import highlight  # planted\n"),
        ("io/codec.py", "\nfrom .. import serialization  # planted\n"),
    ],
    ids=["lazy-upward", "absolute-upward", "import_module", "upward-sideways", "facade"],
)
def test_a_planted_upward_import_fails(tmp_path: Path, file: str, line: str) -> None:
    copy = tmp_path / "core"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert violations(copy) == []
    with (copy / file).open("a") as f:
        f.write(line)
    found = violations(copy)
    assert found and all(v.startswith(file) for v in found), found


def test_no_cycle_between_top_level_parts() -> None:
    graph: dict[str, set[str]] = {}
    for path in CORE.rglob("*.py"):
        module = module_name(path, CORE)
        for _, target in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            if target.startswith("grounded.") and part_of(target) != part_of(module):
                graph.setdefault(part_of(module), set()).add(part_of(target))
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*trail, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in list(graph):
        if node not in state:
            visit(node, [])


def test_every_part_has_a_layer_and_is_named_in_the_architecture_map() -> None:
    parts = {p.stem if p.is_file() else p.name for p in CORE.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    doc = (REPO / "docs" / "architecture.md").read_text()
    for part in sorted(parts - FACADE):
        assert part in LAYER_OF, f"core/{part} has no layer in the contract"
        assert f"`{part}" in doc, f"core/{part} is not named in docs/architecture.md"


def test_package_root_is_small_and_no_module_is_long() -> None:
    root_modules = sorted(p.name for p in CORE.glob("*.py"))
    assert len(root_modules) <= MAX_ROOT_MODULES, root_modules
    long = {str(p.relative_to(REPO)): n for base in ("core", "llama_index_grounded", "langchain_grounded")
            for p in (REPO / base).rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_module_is_in_a_code_fingerprint_or_declared_outside() -> None:
    """A module moved into a new folder must not drop out of every cache key silently."""
    def covered_by(rel: str, parts: tuple[str, ...] | list[str]) -> bool:
        return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in parts)

    missing, both = [], []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).as_posix()
        fingerprinted = covered_by(rel, PARSE_CODE) or covered_by(rel, CHUNK_CODE)
        outside = covered_by(rel, list(OUTSIDE))
        if not fingerprinted and not outside:
            missing.append(rel)
        if fingerprinted and outside and not covered_by(rel, ["ingest/rows.py"]):
            both.append(rel)
    assert missing == [], "add these to a fingerprint (runtime/code_version.py) or to OUTSIDE with the reason"
    assert both == []


def test_test_modules_import_only_the_support_package() -> None:
    tests = REPO / "tests"
    bad = []
    for path in sorted(tests.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = node.module or ""
                names = [target.rsplit(".", 1)[-1], *(a.name for a in node.names)] if node.level else [target]
                if node.level and any(n.startswith(("test_", "conftest")) for n in names if n):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} imports a test module")
                elif target.startswith("tests.") and not target.startswith(("tests.support", "tests.fuzz.contract", "tests.fuzz.corpus")):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} imports {target}")
    assert bad == []
