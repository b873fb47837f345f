"""The framework adapters are glue over one door into the core (issue 30): ``llama_index_grounded``
and ``langchain_grounded`` import the adapter core (the package :mod:`grounded.integrations` and its
modules) and grounded's public API only, function-level imports included, so a change inside the
core reaches a framework integration through one package."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.data import REPO

#: the adapter core: the package and its modules
CORE = "grounded.integrations"
#: what an adapter may import of grounded besides the adapter core: the public API
ALLOWED = {
    "grounded.errors",
    "grounded.model",
    "grounded.metadata",
    "grounded.chunking",
    "grounded.parsers",
    "grounded.search",
    "grounded.graph",
}
#: the most names the adapter core's package exports (issue 39: a door, not a hub)
MAX_CORE_NAMES = 30
ADAPTERS = ("llama_index_grounded", "langchain_grounded")


def _grounded_imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "grounded":
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "grounded")
    return out


def test_adapters_import_only_the_adapter_core_and_the_public_api() -> None:
    found: dict[str, set[str]] = {}
    bad = []
    for package in ADAPTERS:
        for path in sorted((REPO / package).glob("*.py")):
            for line, module in _grounded_imports(path):
                found.setdefault(module, set()).add(path.name)
                if module not in ALLOWED and module != CORE and not module.startswith(f"{CORE}."):
                    bad.append(f"{package}/{path.name}:{line} imports {module}")
    assert not bad, "adapters reach inside the core:\n" + "\n".join(bad)
    assert len({m for m in found if not m.startswith(CORE)}) <= len(ALLOWED), sorted(found)


def test_the_adapter_core_exports_few_names() -> None:
    import grounded.integrations as core

    assert len(core.__all__) <= MAX_CORE_NAMES, sorted(core.__all__)
    assert all(hasattr(core, name) for name in core.__all__)


def test_the_checker_sees_function_level_imports(tmp_path: Path) -> None:
    planted = tmp_path / "glue.py"
    planted.write_text("def f():\n    from grounded.text.assembly import ChunkAssembler\n    return ChunkAssembler\n")
    assert _grounded_imports(planted) == [(2, "grounded.text.assembly")]


#: issue 30's budget: an adapter is framework glue (the rules it applies live in the adapter core)
MAX_ADAPTER_LINES = 900


def test_adapters_stay_glue_sized() -> None:
    sizes = {
        package: sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (REPO / package).glob("*.py"))
        for package in ADAPTERS
    }
    assert all(n <= MAX_ADAPTER_LINES for n in sizes.values()), f"adapter lines {sizes} > {MAX_ADAPTER_LINES}: move rules into core/integrations"
