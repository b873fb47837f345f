"""The framework adapters are glue over one door into the core (issue 30): ``llama_index_grounded``
and ``langchain_grounded`` import the adapter core (:mod:`grounded.grounding.adapter`) and grounded's
public API only, function-level imports included, so a change inside the core reaches a framework
integration through one module."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.data import REPO

#: what an adapter may import of grounded
ALLOWED = {
    "grounded.grounding.adapter",
    "grounded.errors",
    "grounded.model",
    "grounded.search",
    "grounded.graph",
}
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
                if module not in ALLOWED:
                    bad.append(f"{package}/{path.name}:{line} imports {module}")
    assert not bad, "adapters reach inside the core:\n" + "\n".join(bad)
    assert len(found) <= 8, sorted(found)


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
    assert all(n <= MAX_ADAPTER_LINES for n in sizes.values()), f"adapter lines {sizes} > {MAX_ADAPTER_LINES}: move rules into core/grounding"
