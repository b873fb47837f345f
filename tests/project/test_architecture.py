"""The layers contract (docs/architecture.md): imports only go down, over *all* imports of the package
(function-level and TYPE_CHECKING imports and literal ``importlib.import_module`` calls included),
so a new upward import fails here, not in a user's import cycle. Inside a part the same imports make
a module graph with no cycle, and no module imports another part's private (``_x``) names."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

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
    {"integrations"},
    {"focus"},
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
#: the packages whose modules make the graph: import name -> folder
PACKAGES = {
    "grounded": CORE,
    "llama_index_grounded": REPO / "llama_index_grounded",
    "langchain_grounded": REPO / "langchain_grounded",
}


def module_name(path: Path, root: Path, package: str = "grounded") -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part_of(module: str) -> str:
    """Top-level part of ``grounded.x.y`` (``x``); the package itself is the facade ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def imported_modules(source: str, module: str, is_package: bool) -> tuple[tuple[int, str], ...]:
    """(line, absolute module) of every import of ``grounded`` in ``source``, wherever it stands
    (cached: the planted-import tests read the unchanged modules again)."""
    return tuple(_imported_modules(source, module, is_package))


def _imported_modules(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
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


class Module(NamedTuple):
    """One module of the graph: its file, its source and whether it is a package's ``__init__``."""

    path: Path
    source: str
    is_package: bool


def package_modules(packages: Mapping[str, Path]) -> dict[str, Module]:
    """Every module of ``packages`` (dotted name -> :class:`Module`)."""
    return {module_name(p, root, package): Module(p, p.read_text(), p.name == "__init__.py")
            for package, root in packages.items() for p in sorted(root.rglob("*.py"))}


@functools.cache
def repo_modules() -> dict[str, Module]:
    """The modules of :data:`PACKAGES` (read once per test session)."""
    return package_modules(PACKAGES)


@functools.cache
def repo_graph() -> dict[str, set[str]]:
    return module_graph(repo_modules())


def planted(module: str, line: str) -> dict[str, Module]:
    """The repository's modules with ``line`` appended to ``module``'s source."""
    modules = dict(repo_modules())
    modules[module] = modules[module]._replace(source=modules[module].source + line)
    return modules


def violations(modules: Mapping[str, Module]) -> list[str]:
    """Every import in the package's ``modules`` that goes up, sideways or into the facade."""
    ours = {m: mod for m, mod in modules.items() if m.split(".")[0] == "grounded"}
    known = {part_of(m) for m in ours}
    out = []
    for module, mod in sorted(ours.items()):
        mine = part_of(module)
        for line, target in imported_modules(mod.source, module, mod.is_package):
            if target != "grounded" and not target.startswith("grounded."):
                continue
            theirs = part_of(target)
            if theirs == mine or theirs not in known:  # a name imported from a module, not a part
                continue
            where = f"{mod.path.relative_to(CORE).as_posix()}:{line} imports {target}"
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
    assert violations(repo_modules()) == []


@pytest.mark.parametrize(
    ("file", "line"),
    [
        ("text/stream.py", "\n\ndef _planted():\n    from ..chunking import Chunker\n    return Chunker\n"),
        ("model/boxes.py", "\nfrom grounded.io import codec  # planted\n"),
        ("parsers/base.py", "\n\ndef _planted():\n    import importlib\n"
                            "    return importlib.import_module('grounded.llm.spec')\n"),
        ("grounding/grounder.py", "\nfrom ..attribution import highlight  # planted\n"),
        ("io/codec.py", "\nfrom .. import serialization  # planted\n"),
    ],
    ids=["lazy-upward", "absolute-upward", "import_module", "upward-sideways", "facade"],
)
def test_a_planted_upward_import_fails(file: str, line: str) -> None:
    found = violations(planted(module_name(CORE / file, CORE), line))
    assert found and all(v.startswith(file) for v in found), found


def test_no_cycle_between_top_level_parts() -> None:
    graph: dict[str, set[str]] = {}
    for module, mod in repo_modules().items():
        if module.split(".")[0] != "grounded":
            continue
        for _, target in imported_modules(mod.source, module, mod.is_package):
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


# -- the module graph: no cycle between modules, no private name across parts ---------------------
#: cycles left on purpose, each with its reason: a found cycle passes when all its modules are in
#: one entry; an entry no cycle touches any more fails (remove it)
ALLOWED_CYCLES: dict[frozenset[str], str] = {}
#: ``importer -> module.name`` imports of another part's private name left on purpose, with the reason
ALLOWED_PRIVATE_IMPORTS: dict[str, str] = {
    "grounded.llm.model -> grounded.runtime.cloud._describe": "core/runtime is being edited in parallel: make it public there",
    "grounded.cli.llm_options -> grounded.llm.spec._options_text":
        "core/cli is being edited in parallel: import spec.options_text",
}


def module_imports(module: str, modules: Mapping[str, Module]) -> Iterator[tuple[int, str, str | None]]:
    """(line, imported module of ``modules``, the name imported from it or None) of every import in
    ``module`` that reaches one of ``modules``, wherever it stands (as :func:`imported_modules`).
    ``from p import x`` imports module ``p.x`` when it is one, else the name ``x`` of ``p``; an import
    of ``a.b.c`` is an edge to ``a.b.c`` only (Python runs the parent packages first, but a package's
    ``__init__`` importing its own modules is no cycle of theirs)."""
    package = module.split(".") if modules[module].is_package else module.split(".")[:-1]

    def known(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    for node in ast.walk(ast.parse(modules[module].source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    yield node.lineno, f"{target}.{alias.name}", None
                elif (found := known(target)) is not None:
                    yield node.lineno, found, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (found := known(alias.name)) is not None:
                    yield node.lineno, found, None
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and (found := known(node.args[0].value)) is not None):
            yield node.lineno, found, None


def module_graph(modules: Mapping[str, Module], only: Iterable[str] | None = None) -> dict[str, set[str]]:
    """Module -> the modules it imports (itself left out), for every module or ``only`` these."""
    return {m: {t for _, t, _ in module_imports(m, modules) if t != m} for m in (modules if only is None else only)}


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def unexplained_cycles(graph: Mapping[str, Iterable[str]], allowed: Mapping[frozenset[str], str]) -> list[str]:
    """Each cycle of ``graph`` not inside an ``allowed`` entry, with one path around it; and each
    allowed entry no cycle touches any more."""
    cycles = import_cycles(graph)
    out = []
    for component in cycles:
        if not any(set(component) <= entry for entry in allowed):
            out.append(f"import cycle between {', '.join(component)}: {' -> '.join(_cycle_path(graph, component))}")
    for entry in allowed:
        if not any(entry & set(component) for component in cycles):
            out.append(f"allowed cycle {sorted(entry)} is gone: remove it from ALLOWED_CYCLES")
    return out


def _cycle_path(graph: Mapping[str, Iterable[str]], component: list[str]) -> list[str]:
    """One closed path through ``component``'s first module (breadth first, inside the component)."""
    members, first = set(component), component[0]
    previous: dict[str, str] = {}
    queue = [first]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, ())):
            if nxt == first:
                path = [node]
                while path[-1] != first:
                    path.append(previous[path[-1]])
                return [*reversed(path), first]
            if nxt in members and nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return component


def part_of_module(module: str) -> str:
    """The part a module belongs to: ``grounded.x`` of the package, or an adapter package."""
    return f"grounded.{part_of(module)}" if module.split(".")[0] == "grounded" else module.split(".")[0]


def private_imports(modules: Mapping[str, Module], only: Iterable[str] | None = None) -> list[str]:
    """``importer -> module.name`` of every import of a private name (``_x``, not ``__x__``) or of a
    module with a private path segment from another part (by every module or ``only`` these)."""
    out = []
    for module in modules if only is None else only:
        for _, target, name in module_imports(module, modules):
            theirs = part_of_module(target)
            if theirs == part_of_module(module):
                continue
            inner = target[len(theirs):].split(".")
            private = [s for s in [*inner, name or ""] if s.startswith("_") and not s.startswith("__")]
            if private:
                out.append(f"{module} -> {target}" + (f".{name}" if name else ""))
    return sorted(set(out))


def test_no_import_cycle_between_modules() -> None:
    assert {m.split(".")[0] for m in repo_graph()} == set(PACKAGES)  # the adapters' modules are in the graph
    assert unexplained_cycles(repo_graph(), ALLOWED_CYCLES) == []


def test_the_cycle_finder_finds_cycles_of_a_synthetic_graph() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"f", "a"}}
    assert import_cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert unexplained_cycles(graph, {frozenset({"d", "e", "x"}): "kept"}) == [
        "import cycle between a, b, c: a -> b -> c -> a"]
    assert unexplained_cycles({"a": {"b"}}, {frozenset({"a", "b"}): "kept"}) == [
        "allowed cycle ['a', 'b'] is gone: remove it from ALLOWED_CYCLES"]


@pytest.mark.parametrize(
    ("module", "line", "cycle"),
    [
        ("grounded.chunking.base", "\n\ndef _planted():\n    from .chunker import Chunker\n    return Chunker\n",
         ["grounded.chunking.base", "grounded.chunking.chunker"]),
        ("grounded.evaluation.spans", "\nfrom .retrieval_metrics import covered  # planted\n",
         ["grounded.evaluation.retrieval_metrics", "grounded.evaluation.spans"]),
        ("grounded.text.ids", "\n\ndef _planted():\n    import importlib\n"
                              "    return importlib.import_module('grounded.text.assembly')\n",
         ["grounded.text.assembly", "grounded.text.ids"]),
    ],
    ids=["lazy", "top-level", "import_module"],
)
def test_a_planted_module_cycle_fails(module: str, line: str, cycle: list[str]) -> None:
    modules = planted(module, line)
    graph = {**repo_graph(), **module_graph(modules, only=[module])}
    assert [c for c in import_cycles(graph) if c not in import_cycles(repo_graph())] == [cycle]
    assert unexplained_cycles(graph, ALLOWED_CYCLES)


def test_no_private_name_is_imported_across_parts() -> None:
    found = private_imports(repo_modules())
    assert [f for f in found if f not in ALLOWED_PRIVATE_IMPORTS] == []
    assert [a for a in ALLOWED_PRIVATE_IMPORTS if a not in found] == [], "an allowed import is gone: remove it"


def test_a_planted_private_import_fails() -> None:
    line = "\n\ndef _planted():\n    from ..text.ids import _planted_name\n    from ..model import _checks\n"
    assert private_imports(planted("grounded.grounding", line), only=["grounded.grounding"]) == [
        "grounded.grounding -> grounded.model._checks", "grounded.grounding -> grounded.text.ids._planted_name"]


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


#: what test modules may import of tests/ (never another test module)
SUPPORT_MODULES = ("tests.support", "tests.fuzz.contract", "tests.fuzz.corpus")


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
                elif target.startswith("tests.") and not target.startswith(SUPPORT_MODULES):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} imports {target}")
    assert bad == []
