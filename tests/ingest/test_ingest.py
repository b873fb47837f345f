"""``grounded ingest``: folder/glob/list -> Parquet rows; resume, failure isolation, determinism.
The long shared PDFs are in test_ingest_long.py, the embeddings and the LanceDB sink in
test_ingest_embed.py (files of their own, so both xdist workers share the ingest tests). Tests of
the output folder's bookkeeping (a removed part, a new version of a file, changed chunking code, a
torn record) run the in-process engine (``workers=0``: the rows of a worker run,
tests/ingest/test_ingest_inprocess.py), with no worker process to start; the worker-pool tests
here and in test_ingest_index.py run processes."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# test extras are imported directly (never skipped): a missing install fails loudly
import pyarrow.parquet as pq
import pytest
import ray.data  # noqa: F401  (the ray extra: the Ray engine tests below)

from grounded.cli.main import main
from grounded.errors import InputNotFoundError
from grounded.ingest import expand_inputs, ingest
from tests.support.data import REPO
from tests.support.ingest_corpus import ENV, make_bad, make_pdf, parts, sha256


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    make_pdf(root / "a.pdf", 3, 1)
    make_pdf(root / "b.PDF", 2, 2)
    make_pdf(root / "sub" / "c.pdf", 2, 3)
    (root / "notes.txt").write_text("not a pdf\n")
    make_bad(root / "bad")
    return root


@pytest.fixture(scope="module")
def run2(corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("out2")
    return ingest(corpus, out, workers=2, progress=False), out


def test_expand_inputs(corpus: Path, tmp_path: Path) -> None:
    found = expand_inputs(corpus)
    assert [p.name for p in found] == ["a.pdf", "b.PDF", "encrypted.pdf", "truncated.pdf", "c.pdf"]
    assert found == sorted(found) and all(p.is_absolute() for p in found)
    assert [p.name for p in expand_inputs(str(corpus / "**" / "c.pdf"))] == ["c.pdf"]
    listing = tmp_path / "list.txt"
    listing.write_text(f"# corpus\n{corpus / 'a.pdf'}\n\nrelative/missing.pdf\n{corpus / 'a.pdf'}\n")
    assert expand_inputs(listing) == [corpus / "a.pdf", tmp_path / "relative" / "missing.pdf"]
    assert expand_inputs([corpus / "a.pdf", str(corpus / "a.pdf")]) == [corpus / "a.pdf"]
    with pytest.raises(InputNotFoundError):
        expand_inputs(tmp_path / "nothing-here")
    with pytest.raises(InputNotFoundError):
        expand_inputs(str(tmp_path / "*.pdf"))


def test_rows_documents_and_errors(corpus: Path, run2) -> None:
    report, out = run2
    assert (report.files, report.done, report.skipped, report.failed) == (5, 3, 0, 2)
    assert not report.ok
    errors = {Path(r["path"]).name: r for r in pq.read_table(out / "errors.parquet").to_pylist()}
    assert errors["truncated.pdf"]["error_type"] in ("CorruptPDFError", "EmptyDocumentError")
    assert errors["encrypted.pdf"]["error_type"] == "EncryptedPDFError"
    assert all(r["sha256"] and "pdf" in r["message"] for r in errors.values())
    documents = pq.read_table(out / "documents.parquet").to_pylist()
    assert sorted(Path(d["path"]).name for d in documents) == ["a.pdf", "b.PDF", "c.pdf"]
    tables = parts(out)
    assert sorted(d["part"] for d in documents) == sorted(tables)
    for d in documents:
        rows = tables[d["part"]]
        assert d["sha256"] == sha256(Path(d["path"])) and d["pages"] >= 2 and d["chunks"] == len(rows) > 0
        assert all(r["source_sha256"] == d["sha256"] and r["source_path"] == d["path"] for r in rows)
        assert all(r["chunk_id"].startswith(d["sha256"][:12]) for r in rows)
        assert all(r["embedding"] is None and r["strategy"] == "recursive" for r in rows)
        assert all(r["pages"] and r["boxes"] and r["token_count"] <= 256 for r in rows)
        for r in rows:
            assert {b["page"] for b in r["boxes"]} == set(r["pages"])
            for b in r["boxes"]:
                assert 0 <= b["left"] <= b["right"] <= 1 and 0 <= b["top"] <= b["bottom"] <= 1
                assert b["spans"] and b["mode"]
            assert r["text"].endswith(r["body"]) and r["end_char"] - r["start_char"] == len(r["body"])
        assert [r["start_char"] for r in rows] == sorted(r["start_char"] for r in rows)
    ids = [r["chunk_id"] for rows in tables.values() for r in rows]
    assert len(ids) == len(set(ids))
    assert not list((out / "chunks").glob(".*"))  # no temp file left behind


def test_second_run_does_no_work(corpus: Path, run2) -> None:
    _, out = run2
    before = {p: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()}
    again = ingest(corpus, out, workers=2, progress=False, retry_errors=False)
    assert (again.done, again.skipped, again.failed) == (0, 5, 2)
    assert {p: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()} == before
    assert "parse" not in again.stage_seconds
    retried = ingest(corpus, out, workers=2, progress=False)  # the default: the failed inputs are tried again
    assert (retried.done, retried.skipped, retried.failed, retried.retired) == (0, 3, 2, 0)
    assert {p: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()} == before


def test_a_removed_part_is_made_again(corpus: Path, tmp_path: Path) -> None:
    pdf = corpus / "b.PDF"
    first = ingest(pdf, tmp_path, workers=0, progress=False)
    (part,) = (tmp_path / "chunks").glob("part-*.parquet")
    rows = pq.read_table(part).to_pylist()
    part.unlink()
    again = ingest(pdf, tmp_path, workers=0, progress=False)
    assert (first.done, again.done, again.skipped) == (1, 1, 0)
    assert pq.read_table(part).to_pylist() == rows
    assert len(pq.read_table(tmp_path / "documents.parquet")) == 1


def test_worker_count_does_not_change_rows(corpus: Path, run2, tmp_path: Path) -> None:
    _, out2 = run2
    one = ingest(corpus, tmp_path, workers=1, progress=False)
    assert (one.done, one.failed) == (3, 2)
    assert parts(tmp_path) == parts(out2)
    assert pq.read_table(tmp_path / "errors.parquet").to_pylist() == pq.read_table(out2 / "errors.parquet").to_pylist()


def test_body_is_the_document_text_span(run2) -> None:
    from grounded.parsers import get_parser
    from grounded.text.stream import document_text

    _, out = run2
    document = next(d for d in pq.read_table(out / "documents.parquet").to_pylist() if d["path"].endswith("a.pdf"))
    text = document_text(get_parser("pymupdf", layout_threads=1).parse(Path(document["path"]))).text
    rows = pq.read_table(out / "chunks" / document["part"]).to_pylist()
    for r in rows:
        assert text[r["start_char"] : r["end_char"]] == r["body"]


def test_cli_exit_codes_and_summary(corpus: Path, run2, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run2
    listing = tmp_path / "good.txt"
    listing.write_text("\n".join(str(corpus / n) for n in ("a.pdf", "b.PDF", "sub/c.pdf")) + "\n")
    assert main(["ingest", str(listing), "-o", str(out), "--workers", "1"]) == 0  # all done before: skipped
    assert "0 done, 3 skipped, 0 failed" in capsys.readouterr().err
    assert main(["ingest", str(corpus / "bad"), "-o", str(out), "--workers", "1", "--skip-errors"]) == 1
    err = capsys.readouterr().err
    assert "0 done, 2 skipped, 2 failed" in err and "EncryptedPDFError" in err
    missing = tmp_path / "missing.txt"
    missing.write_text("nowhere.pdf\n")
    assert main(["ingest", str(missing), "-o", str(tmp_path / "o"), "--workers", "1"]) == 1
    assert "InputNotFoundError" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "no-such-dir"), "-o", str(tmp_path / "o")]) == 1


def test_job_errors_are_refused_before_work(tmp_path: Path, corpus: Path) -> None:
    from grounded.errors import GroundedError

    with pytest.raises(GroundedError):
        ingest(corpus, tmp_path, workers=-1, progress=False)
    with pytest.raises(GroundedError):
        ingest(corpus, tmp_path, embed="openai", progress=False)  # type: ignore[arg-type]
    with pytest.raises(GroundedError):
        ingest(corpus, tmp_path, max_tokens=256, overlap=True, progress=False)
    assert not (tmp_path / "chunks").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the worker processes through /proc")
def test_a_killed_worker_loses_nothing(
    corpus: Path, run2, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker process that dies (OOM killer, crash in native code) breaks the pool: the documents
    then in flight are retried one at a time in a new pool, and the rows are complete."""
    import threading

    _, reference = run2
    killed: list[int] = []

    def workers() -> list[int]:
        me = os.getpid()
        children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
        return [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            found = workers()
            if found:
                time.sleep(1.0)  # let it start on a document
                os.kill(found[0], signal.SIGKILL)
                killed.append(found[0])
            time.sleep(0.02)

    listing = tmp_path / "good.txt"
    listing.write_text("\n".join(str(corpus / n) for n in ("a.pdf", "b.PDF", "sub/c.pdf")) + "\n")
    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    with caplog.at_level("WARNING", logger="grounded.ingest"):
        report = ingest(listing, tmp_path / "out", workers=2, progress=False)
    killer.join()
    assert killed, "no worker process was seen"
    assert "a worker process died" in caplog.text
    assert (report.done, report.failed) == (3, 0), report.errors
    assert parts(tmp_path / "out") == parts(reference)


# -- the Ray engine (slow: starts a local Ray runtime with 2 CPUs) -----------------------------------
@pytest.mark.slow
def test_ray_engine_writes_the_same_files(corpus: Path, run2, tmp_path: Path) -> None:
    _, reference = run2
    report = ingest(corpus, tmp_path, workers=2, engine="ray", progress=False)
    assert (report.done, report.failed) == (3, 2)
    assert parts(tmp_path) == parts(reference)
    assert pq.read_table(tmp_path / "errors.parquet").to_pylist() == pq.read_table(reference / "errors.parquet").to_pylist()
    again = ingest(corpus, tmp_path, workers=2, engine="ray", progress=False, retry_errors=False)
    assert (again.done, again.skipped) == (0, 5)


# -- fewer documents than workers: one document spread over the workers by pages ------------------------
def test_one_document_is_split_over_the_workers(corpus: Path, run2, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _, reference = run2
    pdf = corpus / "a.pdf"
    with caplog.at_level("INFO", logger="grounded.ingest"):
        report = ingest(pdf, tmp_path, workers=2, progress=False)
    assert "split over 2 workers by pages" in caplog.text
    assert (report.done, report.failed, report.pages) == (1, 0, 3)
    (name,) = parts(tmp_path)
    assert parts(tmp_path)[name] == parts(reference)[name]  # same rows (ids included) as a whole-document task


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the worker processes through /proc")
def test_a_killed_worker_during_a_split_loses_nothing(
    corpus: Path, run2, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    _, reference = run2
    killed: list[int] = []

    def kill_one() -> None:
        me = os.getpid()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
            found = [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
            if len(found) == 2:
                time.sleep(1.0)
                os.kill(found[0], signal.SIGKILL)
                killed.append(found[0])
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    with caplog.at_level("WARNING", logger="grounded.ingest"):
        report = ingest(corpus / "a.pdf", tmp_path, workers=2, progress=False)
    killer.join()
    assert killed and "a worker process died" in caplog.text
    assert (report.done, report.failed) == (1, 0), report.errors
    (name,) = parts(tmp_path)
    assert parts(tmp_path)[name] == parts(reference)[name]


def test_workers_are_recycled_without_losing_rows(
    corpus: Path, run2, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from grounded.ingest import local_engine

    _, reference = run2
    monkeypatch.setattr(local_engine, "RECYCLE_DOCUMENTS", 2)
    with caplog.at_level("INFO", logger="grounded.ingest"):
        report = ingest(corpus, tmp_path, workers=1, progress=False)
    assert caplog.text.count("worker processes recycled after 2 documents") == 2  # 5 inputs: 2 + 2 + 1
    assert (report.done, report.failed) == (3, 2)
    assert parts(tmp_path) == parts(reference)


# -- the progress bar ---------------------------------------------------------------------------------
def _stderr_on_a_terminal(args: list[str]) -> tuple[int, str]:
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal's size
    proc = subprocess.Popen(
        [sys.executable, "-m", "grounded.cli", "ingest", *args], cwd=REPO, env=ENV,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow  # three CLI processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal for stderr")
def test_progress_bar_on_a_terminal_only(corpus: Path, tmp_path: Path) -> None:
    code, err = _stderr_on_a_terminal([str(corpus / "b.PDF"), "-o", str(tmp_path / "a"), "--workers", "1"])
    assert code == 0, err
    assert "ingest: 100%" in err and "2/2 [" in err and "page" in err and "files 1/1, failed 0" in err
    code, err = _stderr_on_a_terminal([str(corpus / "b.PDF"), "-o", str(tmp_path / "b"), "--workers", "1", "--quiet"])
    assert code == 0 and "%" not in err and "done" not in err, err
    piped = subprocess.run(
        [sys.executable, "-m", "grounded.cli", "ingest", str(corpus / "b.PDF"), "-o", str(tmp_path / "c"), "--workers", "1"],
        cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300,
    )
    assert piped.returncode == 0 and "%" not in piped.stderr and "1 done, 0 skipped, 0 failed" in piped.stderr


def test_changed_chunking_code_is_not_resumed(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows made by other chunking code are never mixed into a folder (their ids/boxes may differ):
    the run is refused naming what changed, and ``replace=True`` re-indexes the folder."""
    import grounded.ingest.config as config
    from grounded.ingest import ConfigurationMismatchError

    pdf = corpus / "b.PDF"
    first = ingest(pdf, tmp_path, workers=0, progress=False)
    first_fp = pq.read_table(tmp_path / "documents.parquet").column("config_fingerprint").to_pylist()[0]
    monkeypatch.setattr(config, "chunking_code_version", lambda: "another-version")
    with pytest.raises(ConfigurationMismatchError, match="grounded's chunking code .* -> another-") as refused:
        ingest(pdf, tmp_path, workers=0, progress=False)
    assert "--replace" in str(refused.value)
    again = ingest(pdf, tmp_path, workers=0, progress=False, replace=True)
    assert (first.done, again.done, again.skipped, again.retired) == (1, 1, 0, 1)
    documents = pq.read_table(tmp_path / "documents.parquet").to_pylist()
    assert len(documents) == 1 and documents[0]["config_fingerprint"] != first_fp
    assert [p.name for p in (tmp_path / "chunks").iterdir()] == [documents[0]["part"]]


def test_a_new_version_of_a_file_replaces_its_rows(tmp_path: Path) -> None:
    """Re-indexing: the rows of the old bytes of an input are removed, other documents are kept."""
    folder = tmp_path / "in"
    make_pdf(folder / "guideline.pdf", 2, 1)
    make_pdf(folder / "other.pdf", 2, 2)
    out = tmp_path / "out"
    first = ingest(folder, out, workers=0, progress=False)
    make_pdf(folder / "guideline.pdf", 3, 4)  # version 2 of the guideline
    again = ingest(folder / "guideline.pdf", out, workers=0, progress=False)
    assert (first.done, again.done, again.retired) == (2, 1, 1)
    documents = {Path(d["path"]).name: d for d in pq.read_table(out / "documents.parquet").to_pylist()}
    assert sorted(documents) == ["guideline.pdf", "other.pdf"]
    assert documents["guideline.pdf"]["sha256"] == hashlib.sha256((folder / "guideline.pdf").read_bytes()).hexdigest()
    parts = sorted(p.name for p in (out / "chunks").iterdir())
    assert parts == sorted(d["part"] for d in documents.values())
    rows = pq.read_table(out / "chunks").to_pylist()
    assert {r["source_sha256"] for r in rows} == {d["sha256"] for d in documents.values()}


# -- the manifest: one read at the end of a run, torn records named --------------------------------
#: files opened (Python ``open`` audit events) while a test collects them, else None
_OPENED: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, os.PathLike)):
        _OPENED.append(os.fspath(args[0]))


sys.addaudithook(_audit)


def test_a_run_that_skips_everything_reads_only_the_manifest(corpus: Path, run2) -> None:
    """A run that skips everything reads manifest.json once and opens no per-document record
    (the live manifest says what is served; records are only read to resume a killed run)."""
    global _OPENED
    _, out = run2
    _OPENED = []
    try:
        again = ingest(corpus, out, workers=1, progress=False, retry_errors=False)
        opened = [p for p in _OPENED if str(Path(p).parent) in (str(out / "_manifest"), str(out))]
    finally:
        _OPENED = None
    assert (again.skipped, again.done) == (5, 0) and len(list((out / "_manifest").glob("*.json"))) == 5
    assert [Path(p).name for p in opened if Path(p).name != ".lock"] == ["manifest.json"]
    assert len(pq.read_table(out / "documents.parquet")) == 3 and len(pq.read_table(out / "errors.parquet")) == 2


def test_a_torn_record_is_reported_with_its_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A record is read to resume the work of a killed run (done, not yet published): a torn one is
    named in a warning and the document is done again."""
    from grounded.ingest.manifest import MANIFEST

    folder = tmp_path / "in"
    make_pdf(folder / "a.pdf", 1, 1)
    make_pdf(folder / "b.pdf", 1, 2)
    out = tmp_path / "out"
    assert ingest(folder, out, workers=0, progress=False).done == 2
    # the state a run killed after b's record and before publishing leaves: b not in the manifest
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["documents"] = [d for d in manifest["documents"] if not d["path"].endswith("b.pdf")]
    (out / MANIFEST).write_text(json.dumps(manifest))
    record = out / "_manifest" / next(
        p.name for p in (out / "_manifest").iterdir() if p.name.startswith(sha256(folder / "b.pdf"))
    )
    intact = record.read_bytes()
    record.write_bytes(intact[: len(intact) // 2])  # torn (written by something that is not ingest)
    with caplog.at_level("WARNING", logger="grounded.ingest"):
        again = ingest(folder, out, workers=0, progress=False)
    named = [r.getMessage() for r in caplog.records if str(record) in r.getMessage()]
    assert len(named) == 1 and "damaged manifest record" in named[0], caplog.text
    assert (again.done, again.skipped) == (1, 1)
    assert json.loads(record.read_text())["status"] == "done"
    assert len(pq.read_table(out / "documents.parquet")) == 2


