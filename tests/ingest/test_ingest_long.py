"""``grounded ingest`` on the shared long PDFs (~45 pages through the layout model): the rows of a
two-worker run are the reference of a killed-and-resumed run, the Ray engine, a document split
over the workers by pages and the ``--llm`` strategy. A file of its own (from test_ingest.py), so
the two xdist workers of ``scripts/test.sh`` share the ingest tests."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import ray.data  # noqa: F401  (the ray extra: the Ray engine test below)

from grounded.cli.main import main
from grounded.ingest import ingest
from tests.support.data import LONG_PDFS, REPO, shared
from tests.support.ingest_corpus import ENV, make_bad, parts


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared("long")
    root = tmp_path_factory.mktemp("long")
    listing = root / "inputs.txt"
    corrupt, encrypted = make_bad(root / "bad")
    listing.write_text("\n".join(str(p) for p in [*LONG_PDFS, corrupt, encrypted]) + "\n")
    return listing


@pytest.fixture(scope="module")
def long_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``$GROUNDED_CACHE_DIR`` of :func:`long_run`: its parse trees, for the tests whose subject
    is not the parse (a resumed run, the Ray engine, the model spec) - they load them instead of
    running the layout model over the 44 pages again."""
    return tmp_path_factory.mktemp("long-cache")


@pytest.fixture(scope="module")
def long_run(long_corpus: Path, long_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("long-out")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GROUNDED_CACHE_DIR", str(long_cache))
        return ingest(long_corpus, out, workers=2, progress=False), out


@pytest.mark.slow
def test_long_pdfs_and_bad_files(long_run) -> None:
    report, out = long_run
    assert (report.done, report.failed) == (len(LONG_PDFS), 2)
    assert report.stage_seconds.get("layout", 0) > 0  # parsed here, not served by a cache
    assert {r["error_type"] for r in pq.read_table(out / "errors.parquet").to_pylist()} >= {"EncryptedPDFError"}
    tables = parts(out)
    assert len(tables) == len(LONG_PDFS)
    ids = [r["chunk_id"] for rows in tables.values() for r in rows]
    assert len(ids) == len(set(ids)) == report.chunks


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates(long_corpus: Path, long_run, long_cache: Path, tmp_path: Path) -> None:
    _, reference = long_run
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "grounded.cli", "ingest", str(long_corpus), "-o", str(out), "--workers", "1"]
    env = {**ENV, "GROUNDED_CACHE_DIR": str(long_cache)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        while not list((out / "chunks").glob("part-*.parquet")):
            assert proc.poll() is None, "the run ended before its first part file"
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert 1 <= len(list((out / "chunks").glob("part-*.parquet"))) < len(LONG_PDFS)
    restarted = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert restarted.returncode == 1, restarted.stderr  # the bad files failed
    assert parts(out) == parts(reference)
    ids = [r["chunk_id"] for rows in parts(out).values() for r in rows]
    assert len(ids) == len(set(ids))
    assert len(pq.read_table(out / "documents.parquet")) == len(LONG_PDFS)
    assert len(pq.read_table(out / "errors.parquet")) == 2


# -- the Ray engine (slow: starts a local Ray runtime with 2 CPUs) -----------------------------------
@pytest.mark.slow
def test_ray_engine_long_pdfs(
    long_corpus: Path, long_run, long_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Ray engine's rows of the long PDFs equal the local engine's. Its workers load the trees
    of :func:`long_run` (the parse inside Ray workers is tested on the small corpus,
    test_ingest.py::test_ray_engine_writes_the_same_files)."""
    _, reference = long_run
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(long_cache))  # the Ray runtime starts with this environment
    assert main(["ingest", str(long_corpus), "-o", str(tmp_path), "--engine", "ray", "--workers", "2"]) == 1
    assert parts(tmp_path) == parts(reference)
    assert len(pq.read_table(tmp_path / "errors.parquet")) == 2


# -- fewer documents than workers: one document spread over the workers by pages ------------------------
@pytest.mark.slow
def test_split_long_pdf_matches_one_worker(long_run, tmp_path: Path) -> None:
    # a fresh parse cache (tests/conftest.py): the split parses the pages, it is not served a tree
    _, reference = long_run
    pdf = LONG_PDFS[0]
    report = ingest(pdf, tmp_path, workers=2, progress=False)
    assert report.ok and report.pages > 2 and report.stage_seconds.get("layout", 0) > 0
    (name,) = parts(tmp_path)
    assert parts(tmp_path)[name] == parts(reference)[name]


# -- a model spec crosses into the worker processes ------------------------------------------------
def test_ingest_cli_passes_the_model_to_its_workers(
    long_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``grounded ingest -s llm --llm MODULE:FACTORY()``: the model spec crosses into the worker
    processes (each builds the model) and every chunk row is written. (In a full run the parse tree
    comes from :func:`long_run`'s cache, which the slow tests above fill: the subject is the model spec.)"""
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # worker processes import the factory too
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(long_cache))
    pdf = shared("long", "federal-register-2020-17221.pdf")
    out = tmp_path / "out"
    code = main(
        ["ingest", str(pdf), "-o", str(out), "-s", "llm", "--llm", "tests.llm.test_models:every_fourth()", "--workers", "1", "-q"]
    )
    assert code == 0, capsys.readouterr().err
    table = pq.read_table(next((out / "chunks").glob("*.parquet")))
    assert table.num_rows > 10
    docs = pq.read_table(out / "documents.parquet").to_pylist()
    assert docs and docs[0]["chunks"] == table.num_rows
