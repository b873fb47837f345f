"""``grounded search`` never answers with a traceback (issue 34 items 4, 9, 14, 15; issue 32 item 5):
quoted phrases and full-text operators are plain words, a huge ``-k`` is bounded by the rows, a
question without indexable words says so and points to vector mode, a damaged manifest or table
file is one typed line, and a reader during and after a killed ``--replace`` searches the
published index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grounded.cli.main import main
from grounded.errors import GroundedError
from grounded.search import NoEmbeddingsError, NoSearchableWordsError, SearchIndex, search
from tests.support.data import REPO
from tests.support.search_index import ANSWER_PAGE, ENV, QUESTION, guideline_index, table_rows

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "robust")


def _one_line_error(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> str:
    assert main(["search", *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    return err


def test_quotes_and_operators_are_plain_words(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = [h.chunk_id for h in search(out, "patients treatment", 5, mode="text")]  # the full-text list reads them
    assert [h.chunk_id for h in search(out, '"patients treatment"', 5, mode="text")] == plain  # was a phrase-query traceback
    assert [h.chunk_id for h in search(out, 'patients* OR "treatment" NOT title:', 5, mode="text")] == plain
    assert search(out, '"patients treatment"', 5)  # the default (hybrid) too
    assert main(["search", str(out), '"patients treatment"', "-k", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "searched as plain words" in captured.err, captured.err
    assert captured.out.startswith("1. ")
    assert main(["search", str(out), '"patients treatment"', "-k", "2", "--json"]) == 0
    assert capsys.readouterr().err == ""  # --json: nothing on stderr on success
    for question in ("*", "OR", "NOT", ":", '"the" AND "of"'):  # was a silent 0 hits
        with pytest.raises(NoSearchableWordsError, match="no word the full-text index can match"):
            search(out, question, mode="text")
        _one_line_error(capsys, [str(out), question, "--mode", "text"], "--mode vector")
        assert search(out, question, 2)  # the default (hybrid) answers it from the vector list


def test_a_huge_k_is_bounded_by_the_rows(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = table_rows(out).num_rows
    for mode in ("text", "hybrid", "vector"):
        hits = search(out, QUESTION, 2**63, mode=mode)
        assert mode == "vector" or hits[0].pages == (ANSWER_PAGE,), mode
        assert len(hits) == rows if mode != "text" else 1 < len(hits) <= rows  # text: the rows with a word
    assert main(["search", str(out), QUESTION, "-k", "9223372036854775808", "--json", "--mode", "vector"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == rows


def test_questions_text_mode_cannot_serve(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for question in ("乳腺癌的治疗", "ยาเคมีบำบัด"):
        with pytest.raises(NoSearchableWordsError, match="written without spaces"):
            search(out, question, mode="text")
        _one_line_error(capsys, [str(out), question, "--mode", "text"], "--mode vector")
        hits = search(out, question, 3, mode="hybrid")  # hybrid answers from its vector list
        assert len(hits) == 3 and all(h.text_rank is None and h.vector_rank for h in hits)
    _one_line_error(capsys, [str(out), " \t "], "the question is empty")


def _damage(out: Path, case: str) -> None:
    manifest = out / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    if case == "truncated":
        part = sorted((out / "lancedb" / "chunks.lance" / "data").glob("*.lance"))[0]
        os.truncate(part, 100)
        return
    data["lancedb"] = {"missing": {**data["lancedb"], "version": 999}, "x": {**data["lancedb"], "version": "x"},
                       "list": [1]}[case]
    manifest.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(("case", "message"), [
    ("missing", "publishes LanceDB table version 999, which cannot be checked out"),
    ("x", '"lancedb.version" must be an integer >= 1'),
    ("list", '"lancedb" must be an object'),
    ("truncated", "cannot read the LanceDB table"),
])
def test_a_damaged_manifest_or_table_is_one_typed_line(
    out: Path, tmp_path: Path, case: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    damaged = tmp_path / "out"
    shutil.copytree(out, damaged)
    _damage(damaged, case)
    for mode in ("text", "vector"):
        with pytest.raises(GroundedError, match=message):
            search(damaged, QUESTION, mode=mode)
        err = _one_line_error(capsys, [str(damaged), QUESTION, "--mode", mode], message)
        assert "full-text index" not in err  # never misreported as a missing index


# -- a killed or running --replace (issue 34 item 14) -----------------------------------------------------
#: a ``--replace`` run under another configuration (no embeddings, 128 tokens), SIGKILLed at one commit step
KILLED_REPLACE = r'''
import os, signal, sys
import grounded.ingest.lance_sink as lance_sink
from grounded.ingest import ingest
from grounded.ingest.store import OutFolder


step = sys.argv[3]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if step == "overwrite":  # the new table version is committed, its full-text index and the manifest are not
    lance_sink._ensure_indexes = lambda table, dim: die()
elif step == "index":  # the new version and its index are committed, the manifest is not
    ensure = lance_sink._ensure_indexes
    def ensure_then_die(table, dim):
        ensure(table, dim)
        die()
    lance_sink._ensure_indexes = ensure_then_die
elif step == "manifest":  # the new manifest is published, the old parts are not removed
    publish = OutFolder.publish
    def publish_then_die(self, *args, **kwargs):
        publish(self, *args, **kwargs)
        die()
    OutFolder.publish = publish_then_die

if __name__ == "__main__":
    ingest([sys.argv[1]], sys.argv[2], workers=1, progress=False, sink="lancedb", replace=True, max_tokens=128)
    sys.exit(3)  # not killed
'''


@pytest.mark.slow
@pytest.mark.parametrize("step", ["overwrite", "index", "manifest"])
def test_a_reader_during_and_after_a_killed_replace_searches_the_published_index(
    out: Path, tmp_path: Path, step: str
) -> None:
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    old = {r["config_fingerprint"] for r in table_rows(copy).to_pylist()}
    guideline = next(p for p in table_rows(copy).column("source_path").to_pylist() if p.endswith("guideline.pdf"))
    reader = SearchIndex(copy)  # a long-lived reader (the viewer's), opened before the run
    driver = tmp_path / "killed_replace.py"
    driver.write_text(KILLED_REPLACE, encoding="utf-8")
    run = subprocess.Popen([sys.executable, str(driver), guideline, str(copy), step], cwd=tmp_path, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    searched = 0
    try:
        while run.poll() is None:  # meanwhile: the published (old) index, in every mode
            published = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))["config"]["fingerprint"]
            if published in old:
                for mode in ("text", "hybrid"):
                    try:
                        hits = search(reader, QUESTION, 3, mode=mode)
                    except NoEmbeddingsError:  # the new configuration (no embeddings) was published between
                        now = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))["config"]["fingerprint"]
                        assert now not in old  # this loop's manifest read and the search's own
                        break
                    assert hits[0].pages == (ANSWER_PAGE,) and {h.config for h in hits} <= old | {published}
                searched += 1
            time.sleep(0.2)
    finally:
        _, stderr = run.communicate(timeout=600)
    assert run.returncode == -signal.SIGKILL, stderr
    assert searched >= 1
    new = step == "manifest"
    for index in (reader, SearchIndex(copy)):  # the long-lived reader and a new one
        hits = search(index, QUESTION, 3, mode="text")
        assert hits and ({h.config for h in hits} <= old) is not new
        if new:  # the new configuration has no embeddings: its schema is followed too
            with pytest.raises(NoEmbeddingsError):
                search(index, QUESTION, 3, mode="hybrid")
        else:
            assert search(index, QUESTION, 3, mode="hybrid")[0].pages == (ANSWER_PAGE,)
    cli = subprocess.run([sys.executable, "-m", "grounded.cli", "search", str(copy), QUESTION, "--json", "-k", "2"],
                         cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0 and cli.stderr == "", cli.stderr
    assert ({json.loads(line)["config"] for line in cli.stdout.splitlines()} <= old) is not new
