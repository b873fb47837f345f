"""The parse cache: the reader -> node-parser hand-over by reference (grounded.parsers.cache)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from grounded.errors import SchemaError
from grounded.model import ParsingResult
from grounded.parsers import cache as pc
from grounded.parsers import get_parser
from grounded.parsers.cache import (
    PARSER_OPTIONS_KEY,
    TREE_REF_KEY,
    ParseCache,
    clear_memory,
    parse_ref,
    resolve_tree,
)
from grounded.serialization import dumps_parsing_result


def make_pdf(path: Path, words: str = "renal dosing") -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Dosing in renal impairment", fontsize=14)
    for i in range(6):
        page.insert_text((72, 110 + 24 * i), f"Line {i}: {words} is adjusted when clearance falls.", fontsize=10)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def pdf_and_root(tmp_path_factory) -> tuple[Path, ParsingResult]:
    pdf = make_pdf(tmp_path_factory.mktemp("pdf") / "made.pdf")
    return pdf, get_parser("pymupdf").parse(pdf)


@pytest.fixture(autouse=True)
def _fresh_memory():
    clear_memory()
    yield
    clear_memory()


def _meta(ref: str, pdf: Path) -> dict:
    return {TREE_REF_KEY: ref, "file_path": str(pdf), "parser": "pymupdf"}


def test_put_get_round_trip_and_reference_format(pdf_and_root, tmp_path):
    pdf, root = pdf_and_root
    cache = ParseCache(tmp_path)
    ref = cache.put(root)
    assert ref.startswith("grounded:v1:" + root.metadata["source"]["sha256"] + ":pymupdf:")
    assert len(ref) < 120 and parse_ref(ref).sha256 == root.metadata["source"]["sha256"]
    clear_memory()
    back = cache.get(ref)
    assert back is not None and dumps_parsing_result(back) == dumps_parsing_result(root)
    assert cache.get(ref) is back  # decoded once, then served from the process LRU
    # options and parser version are part of the reference
    assert cache.put(root, {"line_spans": False}) != ref
    with pytest.raises(SchemaError):
        cache.get("grounded_tree_json_blob")


def test_miss_gives_none_and_damaged_entries_are_dropped(pdf_and_root, tmp_path, caplog):
    _, root = pdf_and_root
    cache = ParseCache(tmp_path / "a")
    ref = cache.put(root)
    clear_memory()
    assert ParseCache(tmp_path / "b").get(ref) is None
    cache.path(ref).write_text('{"schema": "grounded.parsing_result", "version": 1, "root": {"type": 7')
    with caplog.at_level(logging.WARNING):
        assert cache.get(ref) is None
    assert "damaged" in caplog.text and not cache.path(ref).exists()


def test_lru_is_bounded_by_count(pdf_and_root, tmp_path):
    _, root = pdf_and_root
    cache = ParseCache(tmp_path)
    first = cache.put(root)
    held = cache.get(first)
    for i in range(pc.MEMORY_SIZE):
        other = ParsingResult.from_dict(root.to_dict())
        other.metadata = {**root.metadata, "source": {**root.metadata["source"], "sha256": f"{i:064x}"}}
        cache.put(other)
    assert len(pc._memory) == pc.MEMORY_SIZE
    again = cache.get(first)  # evicted from memory, read back from disk
    assert again is not held and again is not None and again.to_dict() == root.to_dict()


def test_resolve_tree_reparses_a_miss_when_the_pdf_is_unchanged(pdf_and_root, tmp_path, caplog):
    pdf, root = pdf_and_root
    ref = ParseCache(tmp_path / "reader").put(root)
    clear_memory()
    empty = ParseCache(tmp_path / "worker")
    assert resolve_tree({"file_name": "x"}, empty) is None  # no reference: not a grounded document
    assert resolve_tree(_meta(ref, pdf), empty, reparse=False) is None
    back = resolve_tree(_meta(ref, pdf), empty)
    assert back is not None and back.to_dict()["children"] == root.to_dict()["children"]
    assert empty.path(ref).is_file()  # the re-parse is cached
    # the PDF changed in place: the reference no longer describes it
    clear_memory()
    empty.remove(ref)
    copy = tmp_path / "changed.pdf"
    make_pdf(copy, words="hepatic dosing")
    with caplog.at_level(logging.WARNING):
        assert resolve_tree(_meta(ref, copy), empty) is None
    assert "changed since it was read" in caplog.text
    assert resolve_tree(_meta(ref, tmp_path / "gone.pdf"), empty) is None


def test_resolve_tree_reparses_with_the_recorded_parser_options(pdf_and_root, tmp_path):
    pdf, default = pdf_and_root
    options = {"infer_hierarchy": False}
    root = get_parser("pymupdf", **options).parse(pdf)
    ref = ParseCache(tmp_path / "reader").put(root, options)
    clear_memory()
    worker = ParseCache(tmp_path / "worker")
    back = resolve_tree({**_meta(ref, pdf), PARSER_OPTIONS_KEY: json.dumps(options)}, worker)
    assert back is not None
    shape = [(n.id, n.parent.id if n.parent else None) for n in back.walk()]
    assert shape == [(n.id, n.parent.id if n.parent else None) for n in root.walk()]
    assert shape != [(n.id, n.parent.id if n.parent else None) for n in default.walk()]
    assert worker.get(ref) is not None  # stored under the same reference


def test_concurrent_put_from_two_processes(pdf_and_root, tmp_path):
    _, root = pdf_and_root
    tree_file = tmp_path / "tree.json"
    tree_file.write_text(dumps_parsing_result(root))
    cache_dir = tmp_path / "shared"
    code = (
        "import sys\n"
        "from grounded.parsers.cache import ParseCache\n"
        "from grounded.serialization import load_parsing_result\n"
        "root = load_parsing_result(sys.argv[1])\n"
        "cache = ParseCache(sys.argv[2])\n"
        "for i in range(25):\n"
        "    root.metadata['source']['sha256'] = f'{i:064x}'\n"
        "    cache.put(root)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tree_file), str(cache_dir)]) for _ in range(2)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    files = sorted(cache_dir.rglob("*"))
    entries = [f for f in files if f.is_file()]
    assert len(entries) == 25 and not [f for f in entries if f.name.endswith(".tmp")]
    cache = ParseCache(cache_dir)
    for i in range(25):
        other = ParsingResult.from_dict(root.to_dict())
        other.metadata = {**root.metadata, "source": {**root.metadata["source"], "sha256": f"{i:064x}"}}
        ref = pc.tree_ref(other)
        clear_memory()
        back = cache.get(ref)
        assert back is not None and back.to_dict()["children"] == root.to_dict()["children"]


def test_default_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(tmp_path))
    assert ParseCache().directory == tmp_path / "parses"
    monkeypatch.delenv("GROUNDED_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    import platformdirs

    assert ParseCache().directory == Path(platformdirs.user_cache_dir("grounded", appauthor=False)) / "parses"
    if sys.platform.startswith("linux"):
        assert ParseCache().directory == tmp_path / "xdg" / "grounded" / "parses"


# -- encrypted PDFs: the decrypted text never reaches the cache directory ------------------------
SECRET = "Nephrotoxic regimen Zeta-417 for stage four clearance"


def _files_with(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_an_encrypted_pdf_tree_is_never_written_to_the_cache(tmp_path, caplog):
    from langchain_grounded import GroundedPDFLoader
    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader
    from tests.support.pdf_builders import save_pdf

    doc = pymupdf.open()
    page = doc.new_page()
    for i in range(6):
        page.insert_text((72, 110 + 24 * i), f"{SECRET}, line {i}, is adjusted weekly.", fontsize=10)
    locked = save_pdf(doc, tmp_path / "locked.pdf", user_pw="s3cret", owner_pw="owner")
    plain = make_pdf(tmp_path / "plain.pdf", words=SECRET)
    cache_dir = tmp_path / "cache"

    root = get_parser("pymupdf").parse(locked, password="s3cret")
    assert root.metadata["source"]["encrypted"] is True and SECRET in json.dumps(root.to_dict())
    ref = ParseCache(cache_dir).put(root)
    docs = GroundedPDFReader(cache_dir=str(cache_dir)).load_data(locked, password="s3cret")
    loaded = GroundedPDFLoader(locked, password="s3cret", cache=cache_dir).load()
    assert SECRET in docs[0].text and loaded and SECRET in loaded[0].page_content
    assert _files_with(cache_dir, SECRET) == [] and not [p for p in cache_dir.rglob("*") if p.is_file()]
    # in this process the tree is still at hand: the node parser gets exact boxes
    assert ParseCache(cache_dir).get(ref) is not None
    nodes = GroundedNodeParser(max_tokens=32, cache_dir=str(cache_dir)).get_nodes_from_documents(docs)
    assert nodes and all(n.metadata["boxes"] not in ("", "[]") for n in nodes)
    # a leaked entry (written by an older version) is removed, never served
    ParseCache(cache_dir).put(get_parser("pymupdf").parse(plain))
    assert len(_files_with(cache_dir, SECRET)) == 1  # the scan sees an unencrypted tree's text
    leaked = ParseCache(cache_dir).path(ref)
    leaked.parent.mkdir(parents=True, exist_ok=True)
    leaked.write_bytes(pc._entry_bytes(ref, root))  # well-formed: only the encrypted check refuses it
    clear_memory()
    with caplog.at_level(logging.WARNING, logger="grounded.parsers.cache"):
        assert ParseCache(cache_dir).get(ref) is None
    assert not leaked.exists() and "encrypted PDF" in caplog.text
