"""``grounded ingest``'s output folder is an index that never lies (issues 21.3, 21.6, 23).

One writer per folder (a lock, two real processes), one configuration per folder, a manifest that
readers follow (kill -9 at every step of a re-index: never two versions of one path, the next run
repairs), records keyed by content and path, LanceDB in step with the parts (incremental, indexes),
inputs that cannot hang or be empty silently, no file content in errors, and the README's Python
example run as a script.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from grounded.cli.main import main
from grounded.errors import InputNotFoundError
from grounded.ingest import (
    ConfigurationMismatchError,
    NoInputsError,
    OutputLockedError,
    expand_inputs,
    ingest,
    open_chunks,
    open_lancedb,
)
from grounded.ingest.manifest import read_manifest
from grounded.ingest.rows import search_text
from grounded.samples import write_sample_pdf
from tests.support.data import REPO, shared

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
       "PYTHONPATH": os.pathsep.join([str(Path(__import__("grounded").__file__).parent.parent),
                                      os.environ.get("PYTHONPATH", "")])}
#: one-page real PDFs (fast to parse)
ONE_PAGE = ("2305.03393v1-pg9.pdf", "amt_handbook_sample.pdf", "table_mislabeled_as_picture.pdf")


def one_page(name: str) -> Path:
    return shared("pdfs", "docling_groundtruth", name)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def live_rows(out: Path) -> list[dict]:
    return open_chunks(out).to_table().to_pylist()


def versions_per_path(rows: list[dict]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for r in rows:
        found.setdefault(r["source_path"], set()).add(r["source_sha256"])
    return found


def assert_one_version_per_path(out: Path) -> dict[str, str]:
    """What a reader following the manifest sees: one sha256 per path, the manifest's; the same
    rows in LanceDB (at the manifest's version) when the folder has a table. Returns path -> sha."""
    manifest = read_manifest(out)
    assert manifest is not None
    rows = live_rows(out)
    seen = versions_per_path(rows)
    assert all(len(shas) == 1 for shas in seen.values()), seen
    served = {p: next(iter(s)) for p, s in seen.items()}
    assert served == {p: d["sha256"] for p, d in manifest.documents.items() if d["chunks"]}
    assert {r["config_fingerprint"] for r in rows} <= {manifest.fingerprint}
    if manifest.lancedb:
        lance = open_lancedb(out).to_arrow().to_pylist()
        assert sorted(r["chunk_id"] for r in lance) == sorted(r["chunk_id"] for r in rows)
        assert {r["source_path"]: r["source_sha256"] for r in lance} == served
    return served


def assert_clean(out: Path) -> None:
    """After a completed run: OUT/chunks holds exactly the live parts, the LanceDB table's latest
    version is the manifest's, and every row of OUT has the folder's one fingerprint."""
    manifest = read_manifest(out)
    assert manifest is not None
    assert sorted(p.name for p in (out / "chunks").iterdir()) == sorted(d["part"] for d in manifest.documents.values())
    plain = pq.read_table(out / "chunks").to_pylist() if manifest.documents else []
    assert {r["config_fingerprint"] for r in plain} <= {manifest.fingerprint}
    assert len(plain) == open_chunks(out).count_rows()
    for name in ("documents.parquet", "errors.parquet"):
        assert set(pq.read_table(out / name).column("config_fingerprint").to_pylist()) <= {manifest.fingerprint}
    if manifest.lancedb:
        import lancedb

        latest = lancedb.connect(str(out / "lancedb")).open_table("chunks")
        assert latest.version == manifest.lancedb["version"]
        assert {r["config_fingerprint"] for r in latest.to_arrow().to_pylist()} <= {manifest.fingerprint}


@pytest.fixture(scope="module")
def sample_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample_pdf(tmp_path_factory.mktemp("sample") / "sample_guideline.pdf")


# -- inputs (21.6) -------------------------------------------------------------------------------------
def test_a_glob_through_symlink_loops_ends(tmp_path: Path) -> None:
    """``loopdir/**/*.pdf`` with links back up the tree: each real folder is walked once (the
    stdlib's glob walks until the path is too long); a run in a child process so a hang fails."""
    loop = tmp_path / "loopdir"
    (loop / "sub" / "deeper").mkdir(parents=True)
    shutil.copy(one_page(ONE_PAGE[0]), loop / "sub" / "a.pdf")
    shutil.copy(one_page(ONE_PAGE[1]), loop / "sub" / "deeper" / "b.pdf")
    (loop / "self").symlink_to(".")
    (loop / "sub" / "up").symlink_to("..")
    (loop / "sub" / "deeper" / "root").symlink_to(loop)
    (loop / "sub" / "link.pdf").symlink_to(loop / "sub" / "deeper" / "b.pdf")
    code = textwrap.dedent(f"""
        from grounded.ingest import expand_inputs
        for pattern in ({str(loop / '**' / '*.pdf')!r}, {str(loop)!r}, {str(loop / 's*' / '**')!r}):
            print([str(p) for p in expand_inputs(pattern)])
    """)
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = [str(loop / "sub" / "a.pdf"), str(loop / "sub" / "deeper" / "b.pdf")]
    assert done.stdout.splitlines() == [str(expected)] * 3


def test_a_symlink_is_one_input_recorded_under_its_target(tmp_path: Path) -> None:
    """A link sorted before its target, or alone: the input is the resolved file."""
    target = tmp_path / "z_target.pdf"
    shutil.copy(one_page(ONE_PAGE[0]), target)
    (tmp_path / "a_link.pdf").symlink_to(target)
    assert expand_inputs(tmp_path) == [target]
    assert expand_inputs(tmp_path / "a_link.pdf") == [target]
    listing = tmp_path / "list.txt"
    listing.write_text("a_link.pdf\nz_target.pdf\n")
    assert expand_inputs(listing) == [target]


def test_no_inputs_is_a_typed_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("no pdf here\n")
    (tmp_path / "empty.txt").write_text("# nothing listed\n\n")
    for given in (tmp_path / "empty", tmp_path / "notes", tmp_path / "empty.txt"):
        with pytest.raises(NoInputsError, match="no PDF to ingest"):
            ingest(given, tmp_path / "out", workers=1, progress=False)
        assert main(["ingest", str(given), "-o", str(tmp_path / "out")]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no PDF to ingest" in err and str(given) in err, err
    with pytest.raises(InputNotFoundError, match="matches no file"):
        ingest(str(tmp_path / "empty" / "**" / "*.pdf"), tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists()  # nothing written for a job that cannot run


def test_a_non_pdf_is_described_by_its_type_never_its_content() -> None:
    from grounded.parsers.file_type import describe_type

    secret = b"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n"
    assert describe_type(secret) == "text/plain"
    assert describe_type(b"\x89PNG\r\n\x1a\n" + bytes(20)) == "PNG image"
    assert describe_type(b"PK\x03\x04rest").startswith("ZIP archive")
    assert describe_type("Grüße\n".encode()) == "text/plain (UTF-8)"
    assert describe_type(bytes(range(256))) == "binary data"
    assert describe_type(b"<!DOCTYPE html><html>") == "text/html"
    assert describe_type(b"") == "empty"


# -- one writer per folder (21.3) ------------------------------------------------------------------------
def test_a_second_run_is_refused_while_one_writes_and_a_killed_ones_lock_is_taken_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"
    long_pdf = shared("long", "cermine_web_example3_clinsci.pdf")  # 13 pages: the first run is still working
    first = subprocess.Popen(
        [sys.executable, "-m", "grounded.cli", "ingest", str(long_pdf), "-o", str(out), "--workers", "1", "-q"],
        cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert first.poll() is None and time.monotonic() < deadline, "the first run ended or never locked"
            try:
                holder = json.loads((out / ".lock").read_text() or "{}")
            except (OSError, ValueError):
                holder = {}
            if holder.get("pid") == first.pid:
                break
            time.sleep(0.05)
        second = subprocess.run(
            [sys.executable, "-m", "grounded.cli", "ingest", str(one_page(ONE_PAGE[0])), "-o", str(out), "--workers", "1"],
            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120,
        )
        assert first.poll() is None, "the first run must still be running"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert second.returncode == 1
    line = second.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, second.stderr
    assert f"pid {first.pid} on {socket.gethostname()}, started 20" in line and "another grounded ingest" in line
    claimed = read_manifest(out)  # the first run claimed the folder's configuration, published no document
    assert claimed is not None and not claimed.documents and not claimed.errors
    # the killed run's lock: taken over (the kernel released it; its record names the dead run)
    with caplog.at_level("WARNING", logger="grounded.ingest"):
        report = ingest(one_page(ONE_PAGE[0]), out, workers=1, progress=False)
    assert report.ok and report.done == 1
    assert f"pid {first.pid}" in caplog.text and "its process is gone" in caplog.text
    assert (out / ".lock").read_text() == ""  # released at the end
    assert_clean(out)  # the killed run's unpublished work removed


def test_a_lock_left_by_another_boot_is_taken_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from grounded.ingest.lock import OutLock

    (tmp_path / ".lock").write_text(json.dumps(
        {"pid": os.getpid(), "host": socket.gethostname(), "boot_id": "an-earlier-boot", "started": 1.0e9}))
    with caplog.at_level("WARNING", logger="grounded.ingest"), OutLock(tmp_path):
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
        with pytest.raises(OutputLockedError, match=f"pid {os.getpid()} on "):
            OutLock(tmp_path).acquire()  # the same folder, a second writer (another open file)
    assert "the machine rebooted since" in caplog.text and "2001-09-09" in caplog.text


# -- one configuration per folder, content + path keys (21.3, 23.1) ---------------------------------------
def test_one_configuration_per_folder(sample_pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sample_pdf, folder / "guideline.pdf")
    shutil.copy(one_page(ONE_PAGE[0]), folder / "other.pdf")
    out = tmp_path / "out"
    first = ingest(folder, out, workers=1, progress=False, sink="lancedb")
    assert first.ok and first.done == 2
    fp = read_manifest(out).fingerprint  # type: ignore[union-attr]
    with pytest.raises(ConfigurationMismatchError, match=r"-n/--max-tokens 256 -> 128\).*another -o folder.*--replace"):
        ingest(folder / "guideline.pdf", out, max_tokens=128, workers=1, progress=False)
    with pytest.raises(ConfigurationMismatchError, match=r"--embed none -> minilm"):
        ingest(folder, out, embed="minilm", workers=1, progress=False)
    assert main(["ingest", str(folder), "-o", str(out), "-n", "128", "-s", "fixed"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-s/--strategy recursive -> fixed, -n/--max-tokens 256 -> 128" in err, err
    assert read_manifest(out).fingerprint == fp  # type: ignore[union-attr]
    # --replace: this run's inputs under -n 128 become the index (the other document leaves)
    again = ingest(folder / "guideline.pdf", out, max_tokens=128, workers=1, progress=False, replace=True)
    assert again.ok and (again.done, again.retired) == (1, 2)
    served = assert_one_version_per_path(out)
    assert served == {str(folder / "guideline.pdf"): sha256(folder / "guideline.pdf")}
    assert read_manifest(out).fingerprint != fp  # type: ignore[union-attr]
    assert all(r["token_count"] <= 128 for r in live_rows(out))
    assert_clean(out)


def test_a_folder_written_before_configurations_were_recorded_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "chunks").mkdir(parents=True)
    (out / "chunks" / "part-0123456789ab-fedcba98.parquet").write_bytes(b"PAR1")
    with pytest.raises(ConfigurationMismatchError, match="earlier grounded that did not record its configuration"):
        ingest(one_page(ONE_PAGE[0]), out, workers=1, progress=False)
    assert read_manifest(out) is None and (out / "chunks" / "part-0123456789ab-fedcba98.parquet").exists()


def test_replaced_bytes_equal_to_a_deleted_files_are_indexed_under_the_current_path(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(one_page(ONE_PAGE[0]), folder / "a.pdf")
    shutil.copy(one_page(ONE_PAGE[1]), folder / "b.pdf")
    out = tmp_path / "out"
    assert ingest(folder, out, workers=1, progress=False).done == 2
    x = sha256(folder / "a.pdf")
    (folder / "a.pdf").unlink()
    shutil.copy(one_page(ONE_PAGE[0]), folder / "b.pdf")  # b now has the bytes a had
    again = ingest(folder, out, workers=1, progress=False)
    assert again.ok and again.done == 1 and "parse" not in again.stage_seconds  # the rows moved, no parse
    served = assert_one_version_per_path(out)
    assert served == {str(folder / "b.pdf"): x}
    documents = pq.read_table(out / "documents.parquet").to_pylist()
    assert [(d["path"], d["sha256"]) for d in documents] == [(str(folder / "b.pdf"), x)]
    assert_clean(out)
    # copies of the same bytes in one run: served once, under the first path
    shutil.copy(one_page(ONE_PAGE[0]), folder / "0-copy.pdf")
    third = ingest(folder, out, workers=1, progress=False)
    assert (third.done, third.skipped) == (1, 1)
    assert assert_one_version_per_path(out) == {str(folder / "0-copy.pdf"): x}
    assert_clean(out)


# -- the manifest under kill -9, LanceDB in step (21.3, 23.2) ------------------------------------------------
#: the driver of a run killed at one step (a real SIGKILL of the process and its workers)
KILLED_RUN = r'''
import os, signal, sys
from pathlib import Path
import grounded.ingest.lance_sink as lance_sink
from grounded.ingest import ingest
from grounded.ingest.store import OutFolder

step = sys.argv[3]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def after(owner, name, when=lambda *a, **k: True):
    original = getattr(owner, name)
    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        if when(*args, **kwargs):
            die()
        return result
    setattr(owner, name, wrapped)

if step == "part":
    after(OutFolder, "write_part")
elif step == "record":
    after(OutFolder, "write_record", lambda self, record: record["status"] == "done")
elif step == "lancedb":  # the merge is committed, the indexes and the manifest are not
    original = lance_sink._ensure_indexes
    lance_sink._ensure_indexes = lambda table, dim: die()
elif step == "manifest":
    after(OutFolder, "publish")
elif step == "removal":  # the first superseded part removed, the rest not
    def collect(self, manifest):
        live = {d["part"] for d in manifest.documents.values()}
        old = sorted(p for p in self.chunks.glob("part-*.parquet") if p.name not in live)
        old[0].unlink()
        die()
    OutFolder.collect_garbage = collect

if __name__ == "__main__":
    ingest(sys.argv[1], sys.argv[2], workers=1, progress=False, sink="lancedb")
    sys.exit(3)  # not killed
'''


@pytest.fixture(scope="module")
def indexed(sample_pdf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder (guideline v1 + another document) and its index with a LanceDB table."""
    base = tmp_path_factory.mktemp("indexed")
    (base / "in").mkdir()
    shutil.copy(sample_pdf, base / "in" / "guideline.pdf")
    shutil.copy(one_page(ONE_PAGE[1]), base / "in" / "other.pdf")
    report = ingest(base / "in", base / "out", workers=1, progress=False, sink="lancedb")
    assert report.ok and report.done == 2
    return base


@pytest.mark.slow
@pytest.mark.parametrize("step", ["part", "record", "lancedb", "manifest", "removal"])
def test_kill_9_at_every_step_of_a_reindex(indexed: Path, tmp_path: Path, step: str) -> None:
    """Guideline v2 replaces v1; the run is killed at ``step``. A reader following the manifest
    sees v1 or v2 of the guideline, never both (Parquet and LanceDB), and the next run repairs."""
    folder, out = indexed / "in", tmp_path / "out"
    shutil.copytree(indexed / "out", out)  # the index of the shared inputs (paths are absolute)
    guideline = str(folder / "guideline.pdf")
    v1 = (folder / "guideline.pdf").read_bytes()
    before = assert_one_version_per_path(out)
    try:
        shutil.copy(one_page(ONE_PAGE[2]), folder / "guideline.pdf")  # version 2
        v2 = sha256(folder / "guideline.pdf")
        driver = tmp_path / "killed_run.py"
        driver.write_text(KILLED_RUN)
        killed = subprocess.run([sys.executable, str(driver), str(folder), str(out), step],
                                cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        served = assert_one_version_per_path(out)
        assert served[guideline] == (v2 if step in ("manifest", "removal") else before[guideline]) and len(served) == 2
        import lancedb

        latest = lancedb.connect(str(out / "lancedb")).open_table("chunks").to_arrow().to_pylist()
        assert all(len(s) == 1 for s in versions_per_path(latest).values())  # even the newest table version
        repaired = ingest(folder, out, workers=1, progress=False)  # the sink is kept (sticky)
        assert repaired.ok
        assert assert_one_version_per_path(out) == {**before, guideline: v2}
    finally:
        (folder / "guideline.pdf").write_bytes(v1)
    assert_clean(out)


@pytest.mark.slow
def test_lancedb_is_updated_incrementally_with_indexes(
    sample_pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No commit when nothing changed; a changed document's rows replaced in place; the full-text
    index after every ingest; the vector index once the table is large enough; embeddings as
    FixedSizeList<float32>[384] in Parquet and LanceDB. The in-process engine (``workers=0``, the rows
    of a worker run: tests/ingest/test_ingest_inprocess.py) loads MiniLM once for the three runs
    instead of once in each run's worker process."""
    import pyarrow as pa

    from grounded.chunking.strategies.semantic import minilm_embedder
    from grounded.ingest import lance_sink

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(sample_pdf, folder / "guideline.pdf")
    shutil.copy(one_page(ONE_PAGE[0]), folder / "other.pdf")
    out = tmp_path / "out"
    assert ingest(folder, out, embed="minilm", workers=0, progress=False, sink="lancedb").ok
    table = open_lancedb(out)
    assert [i.index_type for i in table.list_indices()] == ["FTS"]  # below the vector index threshold
    assert table.schema.field("vector").type == pa.list_(pa.float32(), 384)
    assert open_chunks(out).schema.field("embedding").type == pa.list_(pa.float32(), 384)
    question = "Which regimen is preferred for triple-negative breast cancer with residual disease after neoadjuvant therapy?"
    fts = table.search(question, query_type="fts").limit(3).to_list()
    assert fts and fts[0]["source_path"] == str(folder / "guideline.pdf") and fts[0]["boxes"]
    version = read_manifest(out).lancedb["version"]  # type: ignore[union-attr]
    assert ingest(folder, out, embed="minilm", workers=0, progress=False, sink="lancedb").skipped == 2
    assert read_manifest(out).lancedb["version"] == version  # type: ignore[union-attr]  # no commit
    # a new version of one document, and a table now large enough for a vector index
    monkeypatch.setattr(lance_sink, "VECTOR_INDEX_MIN_ROWS", 5)
    shutil.copy(one_page(ONE_PAGE[1]), folder / "other.pdf")
    assert ingest(folder, out, embed="minilm", workers=0, progress=False).ok  # sticky sink
    assert_one_version_per_path(out)
    assert_clean(out)
    table = open_lancedb(out)
    kinds = {i.index_type: i.columns for i in table.list_indices()}
    assert kinds["FTS"] == ["search_text"] and kinds["IvfHnswSq"] == ["vector"], kinds  # heading path + body
    stats = table.index_stats(next(i.name for i in table.list_indices() if i.index_type == "FTS"))
    assert stats.num_indexed_rows == table.count_rows() and stats.num_unindexed_rows == 0
    rows = live_rows(out)
    target = next(r for r in rows if r["source_path"].endswith("other.pdf"))
    (hit,) = table.search(minilm_embedder()([search_text(target)])[0]).limit(1).to_list()  # what ingest embeds
    assert hit["chunk_id"] == target["chunk_id"] and hit["boxes"] == target["boxes"]
    words = " ".join(re.findall(r"[A-Za-z]{5,}", target["text"])[:12])
    assert target["chunk_id"] in [h["chunk_id"] for h in table.search(words, query_type="fts").limit(3).to_list()]


# -- worker crashes are never blamed on a valid PDF; the README example as a script (23.4) ----------------
def _readme_python_ingest_example() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## A whole library: `grounded ingest`"):]
    section = section[: section.index("\n## ", 10)]
    (code,) = [m for m in re.findall(r"```python\n(.*?)```", section, re.S) if "ingest(" in m]
    return code


@pytest.mark.slow
def test_the_readme_python_ingest_example_runs_as_a_script(tmp_path: Path) -> None:
    code = _readme_python_ingest_example()
    assert 'if __name__ == "__main__":' in code
    (tmp_path / "pdfs").mkdir()
    shutil.copy(one_page(ONE_PAGE[0]), tmp_path / "pdfs" / "paper.pdf")
    (tmp_path / "example.py").write_text(code)
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "1 done, 0 skipped, 0 failed" in done.stdout + done.stderr
    assert pq.read_table(tmp_path / "corpus_out" / "errors.parquet").num_rows == 0
    assert live_rows(tmp_path / "corpus_out")


def test_an_unguarded_script_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    code = _readme_python_ingest_example()
    unguarded = textwrap.dedent(code.replace('if __name__ == "__main__":', "if True:"))
    (tmp_path / "pdfs").mkdir()
    shutil.copy(one_page(ONE_PAGE[0]), tmp_path / "pdfs" / "paper.pdf")
    (tmp_path / "example.py").write_text(unguarded)
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "UnguardedMainError" in done.stderr and 'if __name__ == "__main__":' in done.stderr
    assert "example.py, line" in done.stderr
    assert not (tmp_path / "corpus_out").exists()  # refused before the folder was touched


def test_workers_that_die_while_starting_are_not_blamed_on_the_pdf(tmp_path: Path) -> None:
    """Every spawned worker dies while importing the script: a job error, no error row for the PDF."""
    pdf = one_page(ONE_PAGE[0])
    (tmp_path / "dies.py").write_text(textwrap.dedent(f"""
        import os, signal
        if __name__ == "__mp_main__":  # a worker importing this script
            os.kill(os.getpid(), signal.SIGKILL)
        if __name__ == "__main__":
            from grounded.ingest import ingest
            ingest({str(pdf)!r}, "out", workers=1, progress=False)
    """))
    done = subprocess.run([sys.executable, "dies.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "IngestError: the worker processes die while starting" in done.stderr, done.stderr
    out = tmp_path / "out"
    assert not (out / "errors.parquet").exists() or pq.read_table(out / "errors.parquet").num_rows == 0
    assert not list((out / "_manifest").glob("*.json"))


def test_a_crashed_document_retried_with_success_leaves_no_error_row(tmp_path: Path) -> None:
    """The state a worker crash leaves (a WorkerCrashError row for a valid PDF): the next run
    retries it, and its error row is gone once it succeeds."""
    pdf = tmp_path / "paper.pdf"
    shutil.copy(one_page(ONE_PAGE[0]), pdf)
    out = tmp_path / "out"
    ingest(pdf, out, workers=1, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    crash = {"status": "error", "path": str(pdf), "sha256": sha256(pdf), "config_fingerprint": manifest["config"]["fingerprint"],
             "error_type": "WorkerCrashError", "message": f"{pdf}: the worker process died while handling this file"}
    manifest["documents"], manifest["errors"] = [], [crash]
    (out / "manifest.json").write_text(json.dumps(manifest))
    for part in (out / "chunks").iterdir():
        part.unlink()
    report = ingest(pdf, out, workers=1, progress=False)
    assert report.ok and report.done == 1 and report.retired == 0
    assert pq.read_table(out / "errors.parquet").num_rows == 0
    assert pq.read_table(out / "documents.parquet").num_rows == 1
    assert_clean(out)


def test_not_a_pdf_in_errors_parquet_names_the_type(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    secret = "root:x:0:0:root:/root:/bin/bash"
    (folder / "passwd.pdf").write_text(secret + "\n")
    report = ingest(folder, tmp_path / "out", workers=1, progress=False)
    assert report.failed == 1
    (row,) = pq.read_table(tmp_path / "out" / "errors.parquet").to_pylist()
    assert row["error_type"] == "NotAPDFError" and "not a PDF: text/plain" in row["message"]
    assert "root" not in row["message"].replace(str(folder), "")
