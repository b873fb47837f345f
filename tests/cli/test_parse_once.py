"""Parse once per PDF (issue 33.3): ``grounded chunk``, ``grounded ground`` and ``grounded ingest``
read and write the parse cache by default (``--no-parse-cache`` / ``ingest(parse_cache=False)`` turn
it off); the outputs are the ones of a fresh parse, a damaged entry is parsed again and rewritten,
and concurrent worker processes share the cache.

Parses are counted with a spy around the real :meth:`PyMuPDFParser.parse` (the real parser runs).
The conftest gives every test its own ``$GROUNDED_CACHE_DIR``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from grounded.cli.main import main
from grounded.ingest import ingest
from grounded.parsers import get_parser
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.cache import ParseCache, default_cache_dir, parse_once
from grounded.serialization import dumps_parsing_result
from tests.support.data import shared
from tests.support.pdf_builders import make_pdf

#: a real one-page paper (the small shared PDF)
PAGE = shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")
#: recorded timings of a parse or a chunking run: differ between two fresh runs too
TIMINGS = ("elapsed_seconds", "layout_seconds")


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def untimed_lines(path: Path) -> list[str]:
    """The lines of a chunks.jsonl with the timings left out (everything else byte for byte)."""
    return [json.dumps(_untimed(json.loads(line)), ensure_ascii=False) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources :meth:`PyMuPDFParser.parse` really parsed in this process (a spy; the parser runs)."""
    seen: list[str] = []
    real = PyMuPDFParser.parse

    def spy(self: PyMuPDFParser, pdf: Any, **kwargs: Any) -> Any:
        seen.append(str(pdf) if not isinstance(pdf, bytes) else "<bytes>")
        return real(self, pdf, **kwargs)

    monkeypatch.setattr(PyMuPDFParser, "parse", spy)
    return seen


def entries() -> list[Path]:
    return sorted(default_cache_dir().glob("*/*.json"))


def test_the_tests_never_use_the_users_cache() -> None:
    """tests/conftest.py: ``$GROUNDED_CACHE_DIR`` is a temporary folder of this test (not
    ``~/.cache/grounded``, not the folder of another test)."""
    import platformdirs

    here = default_cache_dir()
    assert Path(tempfile.gettempdir()) in here.parents
    assert Path(platformdirs.user_cache_dir("grounded", appauthor=False)) not in here.parents
    assert not here.exists()  # nothing parsed in this test yet: no other test's trees


def test_chunk_parses_once_and_writes_what_a_fresh_parse_gives(parses: list[str], tmp_path: Path, capsys) -> None:
    assert main(["chunk", str(PAGE), "-o", str(tmp_path / "first.jsonl")]) == 0
    assert parses == [str(PAGE)] and len(entries()) == 1
    # another chunk configuration: the tree is loaded, not parsed
    assert main(["chunk", str(PAGE), "-n", "64", "-o", str(tmp_path / "small.jsonl")]) == 0
    assert main(["chunk", str(PAGE), "-o", str(tmp_path / "again.jsonl")]) == 0
    assert parses == [str(PAGE)]
    # --no-parse-cache parses (and the cached output is the fresh one, timings aside)
    assert main(["chunk", str(PAGE), "--no-parse-cache", "-o", str(tmp_path / "fresh.jsonl")]) == 0
    assert parses == [str(PAGE)] * 2
    assert main(["chunk", str(PAGE), "--no-parse-cache", "-n", "64", "-o", str(tmp_path / "fresh-small.jsonl")]) == 0
    assert untimed_lines(tmp_path / "again.jsonl") == untimed_lines(tmp_path / "fresh.jsonl") == untimed_lines(tmp_path / "first.jsonl")
    assert untimed_lines(tmp_path / "small.jsonl") == untimed_lines(tmp_path / "fresh-small.jsonl")
    assert len(untimed_lines(tmp_path / "small.jsonl")) > len(untimed_lines(tmp_path / "first.jsonl"))
    # the chunk lines themselves carry no timing: equal byte for byte
    assert (tmp_path / "again.jsonl").read_text().splitlines()[1:] == (tmp_path / "fresh.jsonl").read_text().splitlines()[1:]
    capsys.readouterr()


def test_the_same_bytes_elsewhere_are_recorded_under_their_own_path(parses: list[str], tmp_path: Path) -> None:
    copy = tmp_path / "renamed copy.pdf"
    shutil.copyfile(PAGE, copy)
    assert main(["chunk", str(PAGE), "-o", str(tmp_path / "a.jsonl")]) == 0
    assert main(["chunk", str(copy), "-o", str(tmp_path / "cached.jsonl")]) == 0
    assert parses == [str(PAGE)]
    assert main(["chunk", str(copy), "--no-parse-cache", "-o", str(tmp_path / "fresh.jsonl")]) == 0
    assert untimed_lines(tmp_path / "cached.jsonl") == untimed_lines(tmp_path / "fresh.jsonl")
    head = json.loads((tmp_path / "cached.jsonl").read_text().splitlines()[0])
    source = head["result"]["metadata"]["document"]["source"]
    assert (source["path"], source["name"]) == (str(copy), "renamed copy.pdf")
    # bytes given with a name: as a fresh parse of those bytes records them
    parser = get_parser("pymupdf")
    cached, hit = parse_once(parser, copy.read_bytes(), cache=ParseCache(), name="given.pdf")
    fresh = parser.parse(copy.read_bytes(), name="given.pdf")
    assert hit and dumps_parsing_result(_strip_root(cached)) == dumps_parsing_result(_strip_root(fresh))
    assert cached.metadata["source"]["from_bytes"] is True and cached.metadata["source"]["name"] == "given.pdf"


def _strip_root(root: Any) -> Any:
    for key in TIMINGS:
        root.metadata.pop(key, None)
    return root


def test_other_parser_options_or_changed_bytes_are_parsed(parses: list[str], tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "doc.pdf", 2)
    assert main(["chunk", str(pdf)]) == 0
    assert main(["chunk", str(pdf), "--ocr", "never"]) == 0  # another parser configuration
    assert len(parses) == 2 and len(entries()) == 2
    assert main(["chunk", str(pdf), "--ocr", "never", "-n", "32"]) == 0
    assert len(parses) == 2
    make_pdf(pdf, 2, words="creatinine")  # new bytes, same name
    assert main(["chunk", str(pdf)]) == 0
    assert len(parses) == 3 and len(entries()) == 3


def test_a_damaged_entry_is_parsed_again_and_rewritten_never_served(
    parses: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pdf = make_pdf(tmp_path / "doc.pdf", 2)
    assert main(["chunk", str(pdf), "-o", str(tmp_path / "a.jsonl")]) == 0
    (entry,) = entries()
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])  # a torn write (or a full disk)
    with caplog.at_level("WARNING", logger="grounded.parsers.cache"):
        assert main(["chunk", str(pdf), "-o", str(tmp_path / "b.jsonl")]) == 0
    assert "is damaged" in caplog.text
    assert len(parses) == 2
    assert untimed_lines(tmp_path / "a.jsonl") == untimed_lines(tmp_path / "b.jsonl")
    (rewritten,) = entries()
    assert ParseCache().load(_ref_of(rewritten)) is not None  # a whole, checked entry again
    assert main(["chunk", str(pdf), "-o", str(tmp_path / "c.jsonl")]) == 0
    assert len(parses) == 2  # and served
    # another document's entry planted under this reference: refused, parsed again
    other = make_pdf(tmp_path / "other.pdf", 1, words="bilirubin")
    assert main(["chunk", str(other)]) == 0
    other_entry = next(e for e in entries() if e != rewritten)
    os.replace(other_entry, rewritten)
    assert main(["chunk", str(pdf), "-o", str(tmp_path / "d.jsonl")]) == 0
    assert len(parses) == 4 and untimed_lines(tmp_path / "d.jsonl") == untimed_lines(tmp_path / "a.jsonl")


def test_ground_reads_the_cache_too(parses: list[str], tmp_path: Path) -> None:
    assert main(["chunk", str(PAGE), "-o", str(tmp_path / "chunks.jsonl")]) == 0
    texts = tmp_path / "texts.jsonl"
    rows = [json.loads(line) for line in (tmp_path / "chunks.jsonl").read_text().splitlines()[1:4]]
    texts.write_text("".join(json.dumps({"text": r["content"]}) + "\n" for r in rows))
    assert main(["ground", str(PAGE), str(texts), "-o", str(tmp_path / "g1.jsonl")]) == 0
    assert parses == [str(PAGE)]
    assert main(["ground", str(PAGE), str(texts), "--no-parse-cache", "-o", str(tmp_path / "g2.jsonl")]) == 0
    assert parses == [str(PAGE)] * 2
    assert untimed_lines(tmp_path / "g1.jsonl") == untimed_lines(tmp_path / "g2.jsonl")


def test_not_cached_file_objects_figure_images_and_encrypted_pdfs(parses: list[str], tmp_path: Path) -> None:
    parser = get_parser("pymupdf")
    pdf = make_pdf(tmp_path / "doc.pdf", 1)
    with open(pdf, "rb") as fh:
        assert parse_once(parser, fh, cache=ParseCache())[1] is False  # type: ignore[arg-type]
    assert not entries()
    images = get_parser("pymupdf", image_dir=str(tmp_path / "figures"))
    parse_once(images, pdf, cache=ParseCache(), options={"image_dir": str(tmp_path / "figures")})
    assert not entries()  # a parse that writes figure files is never skipped
    locked = make_pdf(tmp_path / "locked.pdf", 1, password="pw")
    for _ in range(2):
        root, hit = parse_once(parser, locked, cache=ParseCache(), password="pw")
        assert not hit and root.metadata["source"]["encrypted"]
    assert not entries() and len(parses) == 4  # the decrypted text never reaches the disk


def _parts(out: Path) -> dict[str, list[dict]]:
    return {p.name: pq.read_table(p).to_pylist() for p in sorted((out / "chunks").glob("part-*.parquet"))}


def test_a_second_ingest_loads_the_trees_and_writes_the_same_rows(parses: list[str], tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    make_pdf(folder / "a.pdf", 2)
    make_pdf(folder / "b.pdf", 1, words="bilirubin")
    first = ingest(folder, tmp_path / "n256", workers=0, progress=False)
    assert first.ok and len(parses) == 2 and len(entries()) == 2
    assert "layout" in first.stage_seconds
    # another chunk configuration into another folder: no parse
    second = ingest(folder, tmp_path / "n64", workers=0, progress=False, max_tokens=64)
    assert second.ok and len(parses) == 2 and second.chunks > first.chunks
    assert "layout" not in second.stage_seconds  # no layout pass ran
    fresh = ingest(folder, tmp_path / "n64-fresh", workers=0, progress=False, max_tokens=64, parse_cache=False)
    assert fresh.ok and len(parses) == 4
    assert _parts(tmp_path / "n64") == _parts(tmp_path / "n64-fresh")  # rows identical, ids and boxes included


def test_concurrent_ingests_share_the_cache(tmp_path: Path) -> None:
    """Two ``grounded ingest`` processes (a worker process each) parse the same PDFs at once into one
    empty cache: both succeed with the same rows, one whole entry per PDF is left, and a later run
    in another process is served from it."""
    folder = tmp_path / "in"
    folder.mkdir()
    make_pdf(folder / "a.pdf", 2)
    make_pdf(folder / "b.pdf", 3, words="bilirubin")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    runs = [
        subprocess.Popen([sys.executable, "-m", "grounded.cli", "ingest", str(folder), "-o", str(tmp_path / name),
                          "--workers", "1", "-q"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name in ("one", "two")
    ]
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    assert _parts(tmp_path / "one") == _parts(tmp_path / "two") != {}
    found = entries()
    assert len(found) == 2 and all(ParseCache().load(_ref_of(e)) is not None for e in found)
    again = ingest(folder, tmp_path / "again", workers=1, progress=False, max_tokens=64)
    assert again.ok and again.done == 2 and "layout" not in again.stage_seconds
    assert entries() == found


def _ref_of(entry: Path) -> str:
    """The reference an entry file is stored under (its header's first line)."""
    with open(entry, "rb") as fh:
        return json.loads(fh.readline())["ref"]
