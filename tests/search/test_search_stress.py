"""Hostile states of an ingest output and hostile questions on every read path (issue 42 item 9):
a FIFO (or another non-regular file) at ``OUT/manifest.json`` is refused with the typed error of
``grounded ingest`` and never blocks a reader; a question that is not valid UTF-8 gets one typed line."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grounded.errors import OutputError
from grounded.ingest.manifest import MANIFEST, read_manifest
from grounded.search import SearchIndex
from tests.support.data import REPO
from tests.support.search_index import ENV, guideline_index


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "search-stress")


def _within(seconds: float, call: Callable[[], Any]) -> BaseException | None:
    """What ``call`` raised (None: it returned), failing the test when it has not ended in ``seconds``."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{call} still blocked after {seconds} s")
    return outcome[0]


@pytest.fixture
def fifo_out(out: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / MANIFEST).unlink()
    os.mkfifo(copy / MANIFEST)
    return copy


def _readers(folder: Path) -> dict[str, Callable[[], Any]]:
    from grounded.search import search
    from langchain_grounded import GroundedRetriever as LangChainRetriever
    from llama_index_grounded import GroundedRetriever as LlamaIndexRetriever

    return {
        "read_manifest": lambda: read_manifest(folder),
        "SearchIndex": lambda: SearchIndex(folder),
        "search": lambda: search(folder, "breast cancer", 3, mode="text"),
        "llama_index.GroundedRetriever": lambda: LlamaIndexRetriever(folder, mode="text"),
        "langchain.GroundedRetriever": lambda: LangChainRetriever(out=folder, mode="text"),
    }


def test_a_fifo_manifest_is_refused_by_every_reader_without_blocking(fifo_out: Path) -> None:
    for name, call in _readers(fifo_out).items():
        error = _within(30, call)
        assert isinstance(error, OutputError), (name, error)
        assert "FIFO" in str(error) and MANIFEST in str(error) and "not a regular file" in str(error), (name, error)


@pytest.mark.parametrize("command", [["search", "{out}", "breast cancer"], ["view", "{out}", "--port", "0"]])
def test_a_fifo_manifest_is_one_line_on_the_command_line(fifo_out: Path, command: list[str]) -> None:
    args = [a.format(out=fifo_out) for a in command]
    try:
        done = subprocess.run([sys.executable, "-m", "grounded.cli", *args], cwd=REPO, env=ENV, capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"grounded {command[0]} blocked on a FIFO manifest")
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and f"grounded {command[0]}: error: " in done.stderr, done.stderr
    assert "FIFO" in done.stderr and "not a regular file" in done.stderr, done.stderr


@pytest.mark.parametrize("kind", ["directory", "symlink", "device"])
def test_other_non_regular_manifests_are_refused(out: Path, tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "o"
    folder.mkdir()
    target = folder / MANIFEST
    if kind == "directory":
        target.mkdir()
    elif kind == "symlink":
        (tmp_path / "real.json").write_bytes((out / MANIFEST).read_bytes())
        target.symlink_to(tmp_path / "real.json")
    else:
        target.symlink_to("/dev/zero")
    error = _within(30, lambda: read_manifest(folder))
    assert isinstance(error, OutputError) and "not a regular file" in str(error), error


def test_ingest_refuses_a_fifo_manifest_with_the_same_error(fifo_out: Path) -> None:
    from grounded.ingest.store import refuse_non_regular

    with pytest.raises(OutputError, match="FIFO") as ingest_error:
        refuse_non_regular(fifo_out / MANIFEST)  # what grounded ingest checks before any work
    read_error = _within(30, lambda: read_manifest(fifo_out))
    assert type(read_error) is type(ingest_error.value)


@pytest.mark.parametrize("mode", ["text", "hybrid", "vector", None])
@pytest.mark.parametrize("question", ["\udcff patients", "patients \ud800", "\udcc3\udca9chec"])
def test_a_question_that_is_not_valid_text_is_one_typed_error(out: Path, mode: Any, question: str) -> None:
    # issue 42 item 9: text/hybrid said "cannot read the LanceDB table ... re-run ingest --replace" about a
    # healthy index, vector printed a traceback (TextInputSequence must be str)
    from grounded.search import InvalidQueryError, search

    with pytest.raises(InvalidQueryError, match="not valid text") as info:
        search(out, question, 3, mode=mode)
    assert "LanceDB" not in str(info.value) and "character" in str(info.value)
    assert search(out, "patients", 1, mode="text")  # the index is healthy


def test_a_question_that_is_not_text_is_refused() -> None:
    from grounded.search import InvalidQueryError, search

    with pytest.raises(InvalidQueryError, match=r"must be text \(str\), got bytes; decode it"):
        search("/no/such/out", b"patients", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidQueryError, match="got int"):
        search("/no/such/out", 42, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["text", "hybrid", "vector"])
def test_an_undecodable_argument_is_one_line_on_the_command_line(out: Path, mode: str) -> None:
    argv = [sys.executable.encode(), b"-m", b"grounded.cli", b"search", os.fsencode(out), b"\xff patients", b"--mode",
            mode.encode()]
    done = subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, timeout=300)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1 and done.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith("grounded search: error: the question is not valid text"), err
    assert "byte 0xff" in err and "LanceDB" not in err and "Traceback" not in err, err
