"""Lint and type checks as tests, so CI catches a removed helper or a bad import before it ships."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

REPO = Path(__file__).resolve().parents[2]
# import name -> folder in the repo (the core package lives in core/ but imports as grounded)
PACKAGES = {"grounded": "core", "llama_index_grounded": "llama_index_grounded", "langchain_grounded": "langchain_grounded"}
#: mypy's incremental cache, kept between runs as mypy keeps ``.mypy_cache`` by default - outside the
#: repo, one per checkout. A cold run analyses every typed third-party package the code imports
#: (~4 CPU-minutes); a warm one re-checks only what changed (~15 s). mypy's incremental mode reports
#: the same errors as a full run.
MYPY_CACHE = Path(platformdirs.user_cache_dir("grounded")) / "test-mypy" / hashlib.sha256(str(REPO).encode()).hexdigest()[:16]


def _run(*cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *cmd], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", "--no-cache", ".", cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_finds_nothing(tmp_path):
    # mypy cannot follow setuptools' editable-install import hook: give it the import names as symlinks
    for name, folder in PACKAGES.items():
        (tmp_path / name).symlink_to(REPO / folder, target_is_directory=True)
    done = _run(
        "mypy",
        "--config-file",
        str(REPO / "pyproject.toml"),
        "--cache-dir",
        str(MYPY_CACHE),
        *(arg for name in PACKAGES for arg in ("-p", name)),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
