"""pyproject lists the sub-packages explicitly (``core/`` installs as ``grounded``): a new package folder
that is not listed would import in the editable checkout yet be missing from a built wheel.

The data folders (``grounded.data``: the default tokenizer; ``grounded.view.static``: the viewer's
page) are listed as packages too: setuptools treats every folder with an importable name as a
package, and an unlisted one with package-data gave a "Package would be ignored" warning wall at
every ``pip install .`` (issue #34). :func:`test_wheel_builds_without_warnings_and_ships_the_data`
builds the wheel from a copy of the sources and checks both."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import tomllib

from tests.support.data import REPO

ROOTS = {
    "grounded": REPO / "core",
    "llama_index_grounded": REPO / "llama_index_grounded",
    "langchain_grounded": REPO / "langchain_grounded",
}
#: folders that hold data files, not Python (declared as packages, no __init__.py)
DATA_PACKAGES = {"grounded.data": REPO / "core" / "data", "grounded.view.static": REPO / "core" / "view" / "static"}


def _setuptools() -> dict:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["setuptools"]


def _declared() -> set[str]:
    return set(_setuptools()["packages"])


def test_every_package_folder_is_declared() -> None:
    found: set[str] = set()
    for name, root in ROOTS.items():
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root).parts
            found.add(".".join((name, *rel)))
    assert found - _declared() == set(), "package folders missing from [tool.setuptools] packages"
    assert _declared() - found == set(DATA_PACKAGES), "declared packages without a folder"


def test_data_packages_hold_data_only_and_have_package_data() -> None:
    package_data = _setuptools()["package-data"]
    for name, folder in DATA_PACKAGES.items():
        assert folder.is_dir(), name
        assert not list(folder.rglob("*.py")), f"{name} is declared as a data folder but holds Python"
        assert package_data.get(name), f"{name} has no [tool.setuptools.package-data] entry"


def _data_files() -> set[str]:
    """Every file of the data folders, as its path inside the wheel."""
    out = set()
    for folder in DATA_PACKAGES.values():
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                out.add("grounded/" + path.relative_to(REPO / "core").as_posix())
    return out


def test_wheel_builds_without_warnings_and_ships_the_data(tmp_path: Path) -> None:
    """``pip wheel`` of a copy of the sources (the build writes build/ and *.egg-info beside them):
    no "Package would be ignored" warning, and every data and viewer file is in the wheel."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for root in ROOTS.values():
        shutil.copytree(root, src / root.name, ignore=ignore)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "--no-cache-dir",
         "-w", str(tmp_path / "dist"), "-v"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "would be ignored" not in log and "absent from the `packages` configuration" not in log, log[-3000:]
    assert "BuildBackendWarning" not in log and "SetuptoolsDeprecationWarning" not in log, log[-3000:]
    (wheel,) = (tmp_path / "dist").glob("grounded-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = _data_files() | {"grounded/py.typed", "grounded/data/all-MiniLM-L6-v2/tokenizer.json",
                                "grounded/view/static/index.html"}
    assert expected - names == set(), "files missing from the wheel"


#: extra -> the packages its README tutorial needs beyond the adapter (issue 42 item 3): without
#: llama-index-readers-file SimpleDirectoryReader reads a PDF as raw bytes; PyMuPDFLoader is langchain-community's
TUTORIAL_PACKAGES = {"llama-index": ("llama-index-readers-file",), "langchain": ("langchain-community",)}


def test_framework_extras_bring_the_tutorials_readers(tmp_path: Path) -> None:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with open(REPO / "pyproject.toml", "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    for extra, packages in TUTORIAL_PACKAGES.items():
        names = {canonicalize_name(Requirement(r).name) for r in extras[extra]}
        for package in packages:
            assert package in names, (extra, package)
            # installable from this machine's package index (no network): pip finds a distribution
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", package, "-d",
                                   str(tmp_path / package)], capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and any((tmp_path / package).iterdir()), done.stderr[-2000:]
