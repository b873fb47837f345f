"""Writers never replace links or devices (issue 21.1): every atomic write renames a temp file over
its target, so a target that exists and is not a regular file is refused with a typed
:class:`OutputError` naming it, and the link, FIFO or directory stays as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grounded.errors import OutputError
from grounded.io.atomic import atomic_write_text, check_output_suffix, is_stdout


def test_symlink_target_is_refused_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("original\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(OutputError, match="symbolic link") as err:
        atomic_write_text(link, "new\n")
    assert err.value.path == str(link)
    assert link.is_symlink() and real.read_text() == "original\n"


def test_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "null.jsonl"
    link.symlink_to(os.devnull)
    with pytest.raises(OutputError, match="symbolic link"):
        atomic_write_text(link, "x")
    assert link.is_symlink() and os.readlink(link) == os.devnull


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_target_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="FIFO"):
        atomic_write_text(fifo, "x")
    assert fifo.exists() and not fifo.is_file()


def test_directory_target_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "out.jsonl"
    folder.mkdir()
    with pytest.raises(OutputError, match="directory"):
        atomic_write_text(folder, "x")
    assert folder.is_dir()


def test_dangling_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "dangling.json"
    link.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(OutputError, match="symbolic link"):
        atomic_write_text(link, "x")
    assert not (tmp_path / "nowhere.json").exists()


def test_regular_file_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    target.write_text("old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"


def test_suffix_and_stdout_names() -> None:
    check_output_suffix(Path("x.JSONL"), (".jsonl", ".json"))
    for bad in ("x.csv", "x", "x.jsonl.txt"):
        with pytest.raises(OutputError, match="unknown output format"):
            check_output_suffix(Path(bad), (".jsonl", ".json"))
    assert is_stdout("-") and is_stdout(Path("/dev/stdout")) and not is_stdout("out.jsonl") and not is_stdout(None)
