"""The parse cache never serves another document's tree (issue 21.2): every load checks the entry's
recorded reference and source sha256 and a content hash; swapped (copied or linked), flipped,
non-regular and oversized entries are misses (removed, logged); an unusable cache directory makes
the adapters fall back to memory with one warning; the directory is bounded with LRU eviction."""

from __future__ import annotations

import logging
import os
import random
import shutil
from pathlib import Path

import pymupdf
import pytest

from grounded.model import ParsingResult
from grounded.parsers import cache as pc
from grounded.parsers import get_parser
from grounded.parsers.cache import ParseCache, cached_parse, clear_memory
from grounded.serialization import dumps_parsing_result


def _pdf(path: Path, topic: str, lines: int = 6) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), f"Guidance on {topic}", fontsize=14)
    for i in range(lines):
        page.insert_text((72, 110 + 24 * i), f"Line {i}: {topic} is adjusted when clearance falls.", fontsize=10)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[tuple[Path, ParsingResult], tuple[Path, ParsingResult]]:
    folder = tmp_path_factory.mktemp("two")
    parser = get_parser("pymupdf")
    a = _pdf(folder / "a.pdf", "renal dosing")
    b = _pdf(folder / "b.pdf", "hepatic monitoring", lines=9)
    return (a, parser.parse(a)), (b, parser.parse(b))


@pytest.fixture(autouse=True)
def _fresh_memory():
    clear_memory()
    pc._unusable_dirs.clear()
    pc._blocked_entries.clear()
    yield
    clear_memory()


def _same(x: ParsingResult | None, y: ParsingResult) -> bool:
    """The same document's tree (elements and source; run details such as timings may differ)."""
    return (x is not None and x.metadata["source"]["sha256"] == y.metadata["source"]["sha256"]
            and x.to_dict()["children"] == y.to_dict()["children"])


@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_a_swapped_entry_is_a_miss_never_the_other_tree(two, tmp_path, caplog, how):
    (pdf_a, root_a), (_, root_b) = two
    cache = ParseCache(tmp_path)
    ref_a, ref_b = cache.put(root_a), cache.put(root_b)
    path_a, path_b = cache.path(ref_a), cache.path(ref_b)
    path_a.unlink()
    if how == "copy":
        shutil.copyfile(path_b, path_a)
    else:
        path_a.symlink_to(path_b)
    clear_memory()
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        assert cache.get(ref_a) is None
    assert not os.path.lexists(path_a) and str(path_a) in caplog.text
    assert path_b.is_file()  # the link's target is untouched
    # cached_parse falls back to parsing A itself
    clear_memory()
    got = cached_parse(get_parser("pymupdf"), pdf_a, cache=cache)
    assert _same(got, root_a)


def test_an_entry_whose_tree_names_another_source_is_refused(two, tmp_path, caplog):
    (_, root_a), (_, root_b) = two
    cache = ParseCache(tmp_path)
    ref_a = cache.put(root_a)
    # a well-formed header for A around B's tree: the tree's own source sha256 gives it away
    cache.path(ref_a).write_bytes(pc._entry_bytes(ref_a, root_b))
    clear_memory()
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        assert cache.get(ref_a) is None
    assert "another document" in caplog.text and not cache.path(ref_a).exists()


def test_sixty_random_byte_flips_never_load_as_another_tree(two, tmp_path):
    (_, root_a), _ = two
    cache = ParseCache(tmp_path)
    ref = cache.put(root_a)
    path = cache.path(ref)
    original = path.read_bytes()
    rng = random.Random(2126)
    served = 0
    for _ in range(60):
        data = bytearray(original)
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        clear_memory()
        got = cache.get(ref)
        if got is not None:
            served += 1
            assert dumps_parsing_result(got) == dumps_parsing_result(root_a)
        else:
            assert not path.exists()
    assert served == 0  # every flip changes the header or the hashed body


def test_directory_fifo_and_device_link_entries_are_refused_without_reading(two, tmp_path, caplog):
    (_, root_a), _ = two
    cache = ParseCache(tmp_path)
    ref = cache.put(root_a)
    path = cache.path(ref)
    for make, kind in (
        (lambda p: os.mkfifo(p), "FIFO"),
        (lambda p: p.symlink_to("/dev/zero"), "symbolic link"),
        (lambda p: p.mkdir(), "directory"),
    ):
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        elif os.path.lexists(path):
            path.unlink()
        make(path)
        clear_memory()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
            assert cache.get(ref) is None  # returns at once: a FIFO is never opened, /dev/zero never read
        assert kind in caplog.text
        assert ref not in cache or path.is_dir()
    # an empty directory in the entry's place is removed, and put writes the entry again
    clear_memory()
    assert cache.put(root_a) == ref and path.is_file()
    clear_memory()
    assert _same(cache.load(ref), root_a)


def test_a_directory_that_is_not_empty_is_bypassed_with_one_true_warning(two, tmp_path, caplog, recwarn):
    # issue 42 item 9: a directory at the entry's path was "removed" (it never was), re-parsed on every
    # run, and put's write borrowed the output-file message ("parse cache ... is not usable")
    (pdf_a, root_a), _ = two
    cache = ParseCache(tmp_path)
    path = cache.path(pc.tree_ref(root_a))
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("someone's file")
    parser = get_parser("pymupdf")
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        for _ in range(3):  # three runs
            clear_memory()
            tree, hit = pc.parse_once(parser, pdf_a, cache=cache)
            assert not hit and _same(tree, root_a)
    lines = [r.getMessage() for r in caplog.records if r.name == "grounded.parsers.cache"]
    assert len(lines) == 1, lines  # once, not per read and per write
    assert "directory" in lines[0] and "not empty" in lines[0] and "cannot be removed" in lines[0], lines
    assert "removed it" not in lines[0] and "removing it" not in lines[0]
    assert not [w for w in recwarn if "not usable" in str(w.message)]  # no output-file message
    assert (path / "keep.txt").read_text() == "someone's file"


def test_a_damaged_entry_that_cannot_be_removed_is_bypassed_once(two, tmp_path, caplog, monkeypatch):
    # a damaged entry on a read-only mount: unlink fails with EROFS (constructed: this test runs as root)
    import errno as errno_

    (pdf_a, root_a), _ = two
    cache = ParseCache(tmp_path)
    ref = cache.put(root_a)
    path = cache.path(ref)
    damaged = path.read_bytes()[:-40] + b"X" * 40
    path.write_bytes(damaged)
    real_unlink = Path.unlink

    def read_only(self: Path, missing_ok: bool = False) -> None:
        if self == path:
            raise OSError(errno_.EROFS, "Read-only file system", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", read_only)
    monkeypatch.setattr(pc, "atomic_write_bytes", lambda *a: pytest.fail("wrote over an entry it could not remove"))
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        for _ in range(2):
            clear_memory()
            tree, hit = pc.parse_once(get_parser("pymupdf"), pdf_a, cache=cache)
            assert not hit and _same(tree, root_a)
    lines = [r.getMessage() for r in caplog.records if r.name == "grounded.parsers.cache"]
    assert len(lines) == 1 and "damaged" in lines[0] and "Read-only file system" in lines[0], lines
    assert "removed it" not in lines[0] and path.read_bytes() == damaged


def test_an_oversized_entry_is_refused(two, tmp_path, caplog):
    (_, root_a), _ = two
    cache = ParseCache(tmp_path)
    ref = cache.put(root_a)
    small = ParseCache(tmp_path, max_bytes=100)
    clear_memory()
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        assert small.get(ref) is None
    assert "larger than the cache bound" in caplog.text


def test_eviction_keeps_the_directory_under_its_bound(tmp_path, two):
    (_, root_a), _ = two
    one = len(pc._entry_bytes(pc.tree_ref(root_a), root_a))
    cache = ParseCache(tmp_path, max_bytes=int(one * 3.5))
    refs = []
    for i in range(6):
        other = ParsingResult.from_dict(root_a.to_dict())
        other.metadata = {**root_a.metadata, "source": {**root_a.metadata["source"], "sha256": f"{i:064x}"}}
        refs.append(cache.put(other))
        os.utime(cache.path(refs[-1]), (1000.0 + i, 1000.0 + i))  # distinct ages
        if i == 2:
            clear_memory()
            assert cache.get(refs[0]) is not None  # a hit makes the oldest entry recent
    files = [p for p in tmp_path.rglob("*.json")]
    assert sum(p.stat().st_size for p in files) <= cache.max_bytes and len(files) == 3
    present = {r for r in refs if cache.path(r).exists()}
    assert refs[5] in present and refs[0] in present and refs[1] not in present


def test_max_size_from_the_environment(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv(pc.MAX_MB_ENV, "1.5")
    assert ParseCache(tmp_path).max_bytes == int(1.5 * 1024 * 1024)
    monkeypatch.setenv(pc.MAX_MB_ENV, "lots")
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        assert ParseCache(tmp_path).max_bytes == pc.DEFAULT_MAX_MB * 1024 * 1024
    assert pc.MAX_MB_ENV in caplog.text
    monkeypatch.delenv(pc.MAX_MB_ENV)
    assert ParseCache(tmp_path).max_bytes == pc.DEFAULT_MAX_MB * 1024 * 1024


def _unusable_dirs(tmp_path: Path) -> list[Path]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    dirs = [a_file]
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        dirs.append(locked)
    return dirs


def test_the_adapters_fall_back_to_memory_with_one_warning(two, tmp_path, recwarn):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_grounded import GroundedPDFLoader
    from llama_index_grounded import GroundedPDFReader

    (pdf_a, _), (pdf_b, _) = two
    for folder in _unusable_dirs(tmp_path):
        pc._unusable_dirs.clear()
        clear_memory()
        recwarn.clear()
        docs = GroundedPDFReader(cache_dir=str(folder)).load_data([pdf_a, pdf_b])
        assert len(docs) == 2
        lc = GroundedPDFLoader([pdf_a, pdf_b], cache=folder, max_tokens=64).load()
        assert {d.metadata["source"] for d in lc} == {str(pdf_a), str(pdf_b)}
        assert all(d.metadata.get("boxes") for d in lc)  # boxes from the in-memory tree
        cache_warnings = [w for w in recwarn.list if "parse cache" in str(w.message)]
        assert len(cache_warnings) == 1 and str(folder) in str(cache_warnings[0].message)
