"""``grounded ingest`` re-runs and its output folder under attack (issue 34): failed inputs retried,
links planted in OUT refused, deleted inputs reported and pruned, file names escaped on every
command's output."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from grounded.cli.main import main
from grounded.ingest import ingest, open_chunks, open_lancedb, source_exists
from tests.support import pdf_builders

PASSWORD = "s3cret-pw"


def make_pdf(path: Path, **kwargs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return pdf_builders.make_pdf(path, **kwargs)


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- 5. a re-run retries the inputs that failed ------------------------------------------------------
def test_a_second_run_with_the_password_processes_the_encrypted_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    folder, out = tmp_path / "in", tmp_path / "out"
    make_pdf(folder / "locked.pdf", pages=1, password=PASSWORD)
    monkeypatch.delenv("GROUNDED_PDF_PASSWORD", raising=False)
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0", "-q")
    assert code == 1 and "EncryptedPDFError" in err
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0", "-q", "--skip-errors")
    assert code == 1 and "EncryptedPDFError" in err  # --skip-errors: the failure kept, not tried again
    monkeypatch.setenv("GROUNDED_PDF_PASSWORD", PASSWORD)
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0", "-q", "--skip-errors")
    assert code == 1  # the same bytes, --skip-errors: still the old failure
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0", "-q")  # the default: retried
    assert (code, err) == (0, "")
    assert len(pq.read_table(out / "errors.parquet")) == 0 and len(pq.read_table(out / "documents.parquet")) == 1
    assert open_chunks(out).to_table().num_rows > 0


def test_the_api_retries_by_default(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "locked.pdf", pages=1, password=PASSWORD)
    out = tmp_path / "out"
    assert ingest(pdf, out, workers=0, progress=False).failed == 1
    assert ingest(pdf, out, workers=0, progress=False, password=PASSWORD, retry_errors=False).failed == 1
    report = ingest(pdf, out, workers=0, progress=False, password=PASSWORD)
    assert (report.done, report.failed) == (1, 0) and len(pq.read_table(out / "errors.parquet")) == 0


# -- 8. nothing in OUT is written or locked through a symbolic link ---------------------------------
@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(one small PDF, an output folder holding its index with a LanceDB table)."""
    root = tmp_path_factory.mktemp("indexed")
    pdf = make_pdf(root / "in" / "guide.pdf", pages=1)
    out = root / "out"
    report = ingest(pdf, out, workers=0, progress=False, sink="lancedb")
    assert report.done == 1
    return pdf, out


def _snapshot(target: Path) -> dict[str, tuple[bytes, int]]:
    files = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def _plant(out: Path, name: str, target: Path) -> Path:
    if name == "part":
        (link,) = (out / "chunks").glob("part-*.parquet")
    elif name == "record":
        (link,) = (out / "_manifest").glob("*.json")
    else:
        link = out / name
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    else:
        link.unlink(missing_ok=True)
    link.symlink_to(target, target_is_directory=target.is_dir())
    return link


@pytest.mark.parametrize("name", [".lock", "manifest.json", "documents.parquet", "errors.parquet", "part", "record",
                                  "lancedb", "lancedb/chunks.lance", "chunks"])
def test_a_link_planted_in_out_is_refused_and_its_target_unchanged(
    name: str, indexed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pdf, done = indexed
    out = tmp_path / "out"
    shutil.copytree(done, out, symlinks=True)
    if name in ("lancedb", "lancedb/chunks.lance", "chunks"):
        target = tmp_path / "precious"
        target.mkdir()
        (target / "keep.txt").write_text("precious folder content\n")
    else:
        target = tmp_path / "precious.txt"
        target.write_text("precious content\n")
    before = _snapshot(target)
    link = _plant(out, name, target)
    changed = make_pdf(pdf.parent / "other.pdf", pages=1, words="creatinine")  # work the run would do
    try:
        code, stdout, err = _cli(capsys, "ingest", pdf.parent, "-o", out, "--workers", "0", "-q")
    finally:
        changed.unlink()
    assert code == 1 and stdout == ""
    assert err.count("\n") == 1 and "symbolic link" in err and link.name in err, err
    assert err.startswith("grounded ingest: error: ")
    assert _snapshot(target) == before and link.is_symlink()


def test_a_fifo_lock_is_refused_without_blocking(tmp_path: Path) -> None:
    from grounded.errors import OutputError
    from grounded.ingest.lock import OutLock

    os.mkfifo(tmp_path / ".lock")
    with pytest.raises(OutputError, match="FIFO"):
        OutLock(tmp_path).acquire()


# -- 10. deleted inputs: reported, kept, pruned on request ------------------------------------------
def test_deleted_inputs_are_reported_kept_and_pruned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, out = tmp_path / "in", tmp_path / "out"
    keep = make_pdf(folder / "keep.pdf", pages=1)
    gone = make_pdf(folder / "gone.pdf", pages=1, words="creatinine")
    (folder / "broken.pdf").write_bytes(keep.read_bytes()[:300])
    code, _, _ = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0", "-q", "--sink", "lancedb")
    assert code == 1  # broken.pdf
    (folder / "broken.pdf").unlink()
    gone.unlink()
    assert not source_exists(gone) and source_exists(keep)
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0")
    assert code == 0, err
    assert "grounded ingest: 2 input(s) are gone since the last run; their rows are kept; --prune removes them\n" in err
    paths = set(open_chunks(out).to_table().column("source_path").to_pylist())
    assert paths == {str(keep), str(gone)}
    assert set(open_lancedb(out).to_arrow().column("source_path").to_pylist()) == paths
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0", "--prune")
    assert code == 0 and "gone since" not in err and "2 gone removed" in err, err
    assert set(open_chunks(out).to_table().column("source_path").to_pylist()) == {str(keep)}
    assert set(open_lancedb(out).to_arrow().column("source_path").to_pylist()) == {str(keep)}
    assert len(pq.read_table(out / "errors.parquet")) == 0 and len(list((out / "chunks").glob("*.parquet"))) == 1
    code, _, err = _cli(capsys, "ingest", folder, "-o", out, "--workers", "0")
    assert code == 0 and "gone" not in err


def test_an_input_of_another_run_that_still_exists_is_not_gone(tmp_path: Path) -> None:
    a = make_pdf(tmp_path / "a" / "one.pdf", pages=1)
    b = make_pdf(tmp_path / "b" / "two.pdf", pages=1, words="creatinine")
    out = tmp_path / "out"
    ingest(a, out, workers=0, progress=False)
    report = ingest(b, out, workers=0, progress=False, prune=True)
    assert (report.gone, report.pruned, report.done) == ([], 0, 1)
    assert len(pq.read_table(out / "documents.parquet")) == 2


# -- 17. names reach the terminal escaped, on every command -----------------------------------------
EVIL = "evil\x1b[31m\x1b]0;pwned\x07\nFAKE LINE"


def _clean(text: str) -> None:
    """No control character but line ends, no line forged by a name, the escapes shown."""
    assert "\x1b" not in text and "\x07" not in text, text
    assert not any(line.startswith("FAKE LINE") for line in text.splitlines()), text
    assert "\\x1b[31m\\x1b]0;pwned\\x07\\nFAKE LINE" in text, text


def test_every_command_prints_names_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = make_pdf(tmp_path / "in" / f"{EVIL}.pdf", pages=1)
    locked = make_pdf(tmp_path / "locked" / f"{EVIL}.pdf", pages=1, password=PASSWORD)
    chunks = tmp_path / "chunks.jsonl"
    texts = tmp_path / "texts.txt"
    texts.write_text("Paragraph 0.1: reduce the dose when clearance falls below 29 mL/min and monitor weekly.\n")
    runs = {
        "parse": ("parse", pdf, "-o", tmp_path / "parsed"),
        "chunk": ("chunk", pdf, "-o", chunks),
        "ground": ("ground", pdf, texts),
        "highlight": ("highlight", pdf, chunks, "-o", tmp_path / f"{EVIL}-hl.pdf"),
        "error": ("chunk", tmp_path / f"{EVIL}-missing.pdf"),
        "ingest failure": ("ingest", locked, "-o", tmp_path / "locked_out", "--workers", "0", "-q"),
        "ingest": ("ingest", pdf, "-o", tmp_path / "out", "--workers", "0", "--sink", "lancedb", "-q"),
        "search": ("search", tmp_path / "out", "clearance", "--mode", "text", "-k", "1"),
    }
    for what, args in runs.items():
        code, out, err = _cli(capsys, *args)
        assert code == (1 if what in ("error", "ingest failure") else 0), (what, err)
        if what == "ingest":
            assert (out, err) == ("", "")
        else:
            _clean(out + err)


# -- quiet runs: -q prints nothing on stderr on success -----------------------------------------------
def _quiet_run(tmp_path: Path, *extra: str, **environ: str) -> str:
    import subprocess
    import sys

    pdf = make_pdf(tmp_path / "in" / "guide.pdf", pages=1)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **environ}
    for key in ("RUST_LOG", "LANCE_LOG", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(key, None)
    done = subprocess.run([sys.executable, "-m", "grounded.cli", "ingest", str(pdf.parent), "-o", str(tmp_path / "out"),
                           "-q", *extra], env=env, capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    return done.stderr


def test_a_quiet_first_lancedb_ingest_prints_nothing(tmp_path: Path) -> None:
    assert _quiet_run(tmp_path, "--workers", "0", "--sink", "lancedb") == ""  # no Lance "No existing dataset" WARN


@pytest.mark.slow
def test_a_quiet_ray_ingest_prints_no_dashboard_or_token_lines(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    err = _quiet_run(tmp_path, "--engine", "ray", "--workers", "1", HOME=str(home))
    assert "dashboard" not in err.lower() and "Token authentication" not in err, err
    assert not (home / ".ray").exists()  # the run's token lives in its environment, not in ~/.ray
    # left: Ray Data's actor pool makes Ray's C++ core log one error line (ray-project/ray#53727)
    assert all("max_restarts > 0" in line for line in err.splitlines()), err
