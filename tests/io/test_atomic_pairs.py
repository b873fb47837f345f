"""The .json/.md pair of a parse survives kill -9 at any point: no temp file outlives the next
save, and a pair is either consistent or detectably mixed (the JSON records the Markdown's hash)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grounded.errors import SchemaError
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers.base import ParseOutput
from grounded.serialization import (
    OutputError,
    atomic_write_text,
    clean_stale_temp_files,
    load_parse_pair,
    loads_parsing_result,
)

# The writer: builds a large tree once, then saves pair after pair (each one different) until killed.
WRITER = r"""
import sys
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.parsers.base import ParseOutput

out_dir = sys.argv[1]
root = ParsingResult("root", "ROOT", metadata={"pages": [{"page": 1, "width": 612.0, "height": 792.0}]})
for i in range(50):
    root.add_child(ParsingResult(f"e{i}", "PARAGRAPH", "lorem ipsum dolor sit amet " * 2000,
                                 [ParsingBoundingBox(1, 0.1, 0.1, 0.9, 0.2)]))
body = "text " * 6_000_000  # 30 MB of Markdown, 3 MB of JSON: much of the time goes to writing
n = 0
while True:
    n += 1
    root.metadata["generation"] = n
    ParseOutput(root, f"# generation {n}\n\n" + body).save(out_dir, "doc")
    if n == 1:
        print("ready", flush=True)
"""


def _temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _pair_state(folder: Path) -> str:
    """'consistent' or 'mixed' (detected); anything else fails the test."""
    json_text = (folder / "doc.json").read_text(encoding="utf-8")
    root = loads_parsing_result(json_text)  # never half-written
    assert root.metadata["generation"] >= 1
    try:
        load_parse_pair(folder / "doc.json")
    except SchemaError as exc:
        assert "does not belong to" in str(exc)
        return "mixed"
    md = (folder / "doc.md").read_text(encoding="utf-8")
    assert md.startswith(f"# generation {root.metadata['generation']}\n")
    return "consistent"


def _small_output(generation: int) -> ParseOutput:
    root = ParsingResult("root", T.ROOT, metadata={"generation": generation})
    root.add_child(ParsingResult("e1", T.PARAGRAPH, "x", [ParsingBoundingBox(1, 0.1, 0.1, 0.2, 0.2)]))
    return ParseOutput(root, f"# generation {generation}\n")


def test_kill_9_during_writes_leaves_nothing_after_the_next_save(tmp_path):
    rng = random.Random(1405)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    states: list[str] = []
    left_by_kill = 0
    trial = 0
    while trial < 10 or (left_by_kill < 3 and trial < 30):  # >= 10 trials, >= 3 of them inside a write
        trial += 1
        folder = tmp_path / f"trial{trial}"
        folder.mkdir()
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], stdout=subprocess.PIPE, env=env)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
            if trial % 2:  # any point of the writer's loop
                time.sleep(rng.uniform(0.0, 0.4))
            else:  # inside a write: as soon as a temp file of the next save exists (a random delay alone
                # landed in a write in only 2 of 30 trials on a busy machine)
                deadline = time.monotonic() + 20
                while not _temp_files(folder) and time.monotonic() < deadline:
                    time.sleep(0.0005)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        left_by_kill += bool(_temp_files(folder))
        states.append(_pair_state(folder))
        # the next save (a new process would do the same: this one has not written here yet)
        _small_output(10**6).save(folder, "doc")
        assert _temp_files(folder) == [], trial
        assert _pair_state(folder) == "consistent"
        assert sorted(p.name for p in folder.iterdir()) == ["doc.json", "doc.md"]
    assert left_by_kill >= 3, f"only {left_by_kill} of {trial} kills landed inside a write"
    assert set(states) <= {"consistent", "mixed"}


def test_a_mixed_pair_is_detected(tmp_path):
    """The state a crash between the two renames leaves: new JSON beside the old Markdown."""
    old, new = tmp_path / "old", tmp_path / "new"
    _small_output(1).save(old, "doc")
    _small_output(2).save(new, "doc")
    root, md = load_parse_pair(old / "doc.json")
    assert root.metadata["generation"] == 1 and md == "# generation 1\n"
    (old / "doc.json").write_bytes((new / "doc.json").read_bytes())
    with pytest.raises(SchemaError, match=r"doc\.md: does not belong to .*doc\.json"):
        load_parse_pair(old / "doc.json")
    data = json.loads((new / "doc.json").read_text())
    assert data["markdown_sha256"] == hashlib.sha256((new / "doc.md").read_bytes()).hexdigest()
    assert list(data)[-1] == "root"  # the payload stays the last key (the deep-tree writer relies on it)


def test_only_our_stale_temp_files_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    ours_dead = tmp_path / f".doc.md.{dead_pid}-abcd1234.grounded.tmp"
    ours_live = tmp_path / f".doc.md.{os.getppid()}-abcd1234.grounded.tmp"  # the parent runs (and is older)
    mine = tmp_path / f".doc.md.{os.getpid()}-abcd1234.grounded.tmp"  # this process: a write in flight
    foreign = [tmp_path / ".doc.md.abcd1234.tmp", tmp_path / "notes.grounded.tmp", tmp_path / f".x.{dead_pid}.tmp"]
    for path in (ours_dead, ours_live, mine, *foreign):
        path.write_text("x")
    assert clean_stale_temp_files(tmp_path) == [ours_dead]
    assert all(p.exists() for p in (ours_live, mine, *foreign))
    # a pid reused by a process younger than the file counts as gone
    old = time.time() - 3600
    os.utime(ours_live, (old, old))
    young = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        reused = tmp_path / f".doc.md.{young.pid}-abcd1234.grounded.tmp"
        reused.write_text("x")
        os.utime(reused, (old, old))
        if sys.platform.startswith("linux"):
            assert reused in clean_stale_temp_files(tmp_path)
    finally:
        young.kill()
        young.wait()


def test_temp_names_fit_and_long_names_are_typed_errors(tmp_path):
    name = "n" * 250 + ".md"  # 253 bytes: the target fits, a temp name with it would not
    assert atomic_write_text(tmp_path / name, "ok").read_text() == "ok"
    assert _temp_files(tmp_path) == []
    with pytest.raises(OutputError, match=r"file name too long \(260 bytes; the limit is 255\)") as info:
        _small_output(1).save(tmp_path, "m" * 255)
    assert info.value.path == str(tmp_path / ("m" * 255 + ".json")) and isinstance(info.value, OSError)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    with pytest.raises(OutputError, match="is a directory"):
        atomic_write_text(tmp_path, "x")


def test_save_refuses_to_replace_the_source(tmp_path):
    """A PDF named paper.md would be replaced by the Markdown of its own parse."""
    pdf = tmp_path / "paper.md"
    pdf.write_bytes(b"%PDF-1.4 not really")
    out = _small_output(1)
    out.root.metadata["source"] = {"path": str(pdf)}
    with pytest.raises(OutputError, match=r"paper\.md: refusing to overwrite the input file"):
        out.save(tmp_path)
    assert pdf.read_bytes() == b"%PDF-1.4 not really" and not (tmp_path / "paper.json").exists()
    out.save(tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / "paper.md").read_text() == "# generation 1\n"
