"""pyproject lists the sub-packages explicitly (``core/`` installs as ``grounded``): a new package folder
that is not listed would import in the editable checkout yet be missing from a built wheel."""

from __future__ import annotations

import tomllib

from tests.support.data import REPO


def _declared() -> set[str]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return set(tomllib.load(fh)["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_declared() -> None:
    roots = {
        "grounded": REPO / "core",
        "llama_index_grounded": REPO / "llama_index_grounded",
        "langchain_grounded": REPO / "langchain_grounded",
    }
    found: set[str] = set()
    for name, root in roots.items():
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root).parts
            found.add(".".join((name, *rel)))
    assert found - _declared() == set(), "package folders missing from [tool.setuptools] packages"
    assert _declared() - found == set(), "declared packages without a folder"
