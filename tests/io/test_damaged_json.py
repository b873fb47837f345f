"""Damaged stored JSON (parse trees, chunk files) always ends in a SchemaError naming the file.

The corpus is generated at test time from a real parse of a shared PDF and its real chunks:
truncations, seeded byte flips (often invalid UTF-8), key deletions and type swaps at random
places. ``grounded chunk`` / ``grounded highlight`` run on every mutant in-process (and on a
representative subset as real subprocesses): each either succeeds or exits 1 with one line on
stderr naming the file, never a traceback.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking.chunker import Chunker
from grounded.cli.main import main
from grounded.errors import SchemaError
from grounded.model import Chunk, ChunkingResult, ParsingBoundingBox, ParsingResult
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.serialization import (
    load_chunking_result,
    load_parsing_result,
    loads_chunking_result,
    loads_parsing_result,
    save_chunking_result,
    save_parsing_result,
    write_chunks_jsonl,
)
from tests.support.data import shared

SEED = 14


@pytest.fixture(scope="module")
def pdf() -> Path:
    return shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


@pytest.fixture(scope="module")
def originals(pdf, tmp_path_factory) -> dict[str, Path]:
    """A real parse tree and the real chunks of it, as .json and .jsonl."""
    folder = tmp_path_factory.mktemp("originals")
    root = PyMuPDFParser().parse(pdf)
    result = Chunker("recursive", 96).chunk(root)
    assert len(result.chunks) >= 5
    return {
        "tree": save_parsing_result(root, folder / "tree.json"),
        "jsonl": write_chunks_jsonl(result, folder / "chunks.jsonl"),
        "chunks_json": save_chunking_result(result, folder / "chunks.json"),
    }


# -- the corpus ------------------------------------------------------------------------------------
_SWAPS: list[Any] = [None, True, 0, -1, 2.5, "x", "", [], {}, [1, "a"], {"a": 1}, 10**30, float("nan"), float("inf")]


def _addresses(doc: Any) -> list[tuple[Any, ...]]:
    """Every (key or index) path into a JSON value."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in items:
            out.append((*path, key))
            stack.append((child, (*path, key)))
    return sorted(out, key=lambda p: tuple(map(str, p)))


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def mutants(original: bytes, seed: int, per_kind: int) -> list[tuple[str, bytes]]:
    """``4 * per_kind`` damaged variants of a .json or .jsonl document: (name, bytes)."""
    rng = random.Random(seed)
    jsonl = original.count(b"\n") > 1
    docs: Any = [json.loads(ln) for ln in original.splitlines()] if jsonl else json.loads(original)

    def dump(value: Any) -> bytes:
        if jsonl:
            return b"\n".join(json.dumps(v).encode() for v in value) + b"\n"
        return json.dumps(value).encode()

    out = []
    for i in range(per_kind):  # truncations, including the empty file and one byte short
        cut = 0 if i == 0 else len(original) - 1 if i == 1 else rng.randrange(1, len(original) - 1)
        out.append((f"truncated-{cut}", original[:cut]))
    for i in range(per_kind):  # 1-3 flipped bits anywhere (invalid UTF-8, broken syntax, changed values)
        data = bytearray(original)
        for _ in range(1 + i % 3):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        out.append((f"flipped-{i}", bytes(data)))
    addresses = _addresses(docs)
    keyed = [a for a in addresses if isinstance(a[-1], str)]
    shallow = [a for a in keyed if len(a) <= (3 if jsonl else 2)]  # envelope keys, top-level fields
    for i in range(per_kind):  # a key removed (the first few from the envelope / top level)
        doc = copy.deepcopy(docs)
        path = rng.choice(shallow if i < per_kind // 4 else keyed)
        del _at(doc, path[:-1])[path[-1]]
        out.append((f"deleted-{'.'.join(map(str, path))}", dump(doc)))
    for i in range(per_kind):  # a value replaced by one of another type
        doc = copy.deepcopy(docs)
        path = rng.choice(shallow if i < per_kind // 4 else addresses)
        value = rng.choice(_SWAPS)
        _at(doc, path[:-1])[path[-1]] = value
        out.append((f"swapped-{'.'.join(map(str, path))}={value!r}", dump(doc)))
    return out


def _run_cli(args: list[str]) -> tuple[int, str]:
    """``grounded ARGS`` in-process: (exit code, stderr); any exception escaping main() fails the test."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    return code, err.getvalue()


def _assert_clean_failure(code: int, err: str, path: Path, name: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip() and ": warning: " not in ln]
    assert code == 1, (name, code, err)
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in err, (name, err)


# -- the contract, over the whole corpus -----------------------------------------------------------
def test_chunk_on_damaged_parse_trees_never_tracebacks(originals, tmp_path):
    corpus = mutants(originals["tree"].read_bytes(), SEED, per_kind=28)  # 112 damaged trees
    target = tmp_path / "tree.json"
    failed = 0
    for name, data in corpus:
        target.write_bytes(data)
        code, err = _run_cli(["chunk", str(target), "-n", "96"])
        if code != 0:
            _assert_clean_failure(code, err, target, name)
            failed += 1
    assert failed >= len(corpus) // 2  # most damage is detected (some flips only change a letter)


@pytest.mark.parametrize("kind", ["jsonl", "chunks_json"])
def test_highlight_on_damaged_chunk_files_never_tracebacks(kind, originals, pdf, tmp_path):
    corpus = mutants(originals[kind].read_bytes(), SEED + 1, per_kind=13)  # 52 damaged chunk files
    target = tmp_path / originals[kind].name
    out = tmp_path / "out.pdf"
    failed = 0
    for name, data in corpus:
        target.write_bytes(data)
        code, err = _run_cli(["highlight", str(pdf), str(target), "-o", str(out)])
        if code != 0:
            _assert_clean_failure(code, err, target, name)
            failed += 1
    assert failed >= len(corpus) // 2


def test_loaders_raise_only_schema_errors_naming_the_file(originals, tmp_path):
    """Direct load calls over a larger corpus (fast: no chunking, no PDF)."""
    for key, load in (("tree", load_parsing_result), ("jsonl", load_chunking_result), ("chunks_json", load_chunking_result)):
        target = tmp_path / originals[key].name
        for seed in range(2):
            for name, data in mutants(originals[key].read_bytes(), 100 + seed, per_kind=20):
                target.write_bytes(data)
                try:
                    load(target)
                except SchemaError as exc:
                    message = str(exc)
                    assert message.startswith(f"{target}: ") and "\n" not in message, (name, message)


@pytest.mark.parametrize("kind", ["truncated", "flipped", "deleted", "swapped"])
def test_cli_subprocess_prints_one_line_per_kind(kind, originals, pdf, tmp_path):
    """The real console script on one damaged tree and one damaged chunk file of each kind."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cases = [("tree", "chunk"), ("jsonl", "highlight")]
    for key, command in cases:
        corpus = [m for m in mutants(originals[key].read_bytes(), SEED + 2, per_kind=8) if m[0].startswith(kind)]
        for name, data in corpus:
            target = tmp_path / originals[key].name
            target.write_bytes(data)
            try:
                (loads_parsing_result if key == "tree" else _loads_jsonl)(data, str(target))
            except SchemaError:
                found = name
                break  # the first mutant of this kind that is really damaged
        else:
            pytest.fail(f"no damaged {kind} mutant of {key}")
        args = ["chunk", str(target)] if command == "chunk" else ["highlight", str(pdf), str(target), "-o", str(tmp_path / "o.pdf")]
        proc = subprocess.run([sys.executable, "-m", "grounded.cli", *args], capture_output=True, text=True, env=env, timeout=120)
        _assert_clean_failure(proc.returncode, proc.stderr, target, found)
        assert proc.stderr.startswith(f"grounded {command}: error: {target}: ")


def _loads_jsonl(data: bytes, source: str) -> ChunkingResult:
    path = Path(source)
    path.write_bytes(data)
    return load_chunking_result(path)


# -- hypothesis: any JSON value anywhere --------------------------------------------------------------
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_anywhere_loads_or_raises_schema_error(originals, data):
    for key, loads in (("tree", loads_parsing_result), ("chunks_json", loads_chunking_result)):
        doc = json.loads(originals[key].read_text())
        addresses = _addresses(doc)
        path = addresses[data.draw(st.integers(0, len(addresses) - 1))]
        _at(doc, path[:-1])[path[-1]] = data.draw(_json_values)
        try:
            loads(json.dumps(doc), source="mutant.json")
        except SchemaError as exc:
            assert str(exc).startswith("mutant.json: ")


# -- specific causes -----------------------------------------------------------------------------------
def test_invalid_utf8_names_file_and_offset(originals, tmp_path):
    data = bytearray(originals["tree"].read_bytes())
    data[100] = 0xFF
    bad = tmp_path / "bad.json"
    bad.write_bytes(bytes(data))
    with pytest.raises(SchemaError, match=r"bad\.json: not UTF-8 text \(byte 0xff at offset 100\)"):
        load_parsing_result(bad)
    bad_lines = tmp_path / "bad.jsonl"
    bad_lines.write_bytes(b"\xfe" + originals["jsonl"].read_bytes())
    with pytest.raises(SchemaError, match=r"bad\.jsonl: line 1: not UTF-8 text \(byte 0xfe at column 1\)"):
        load_chunking_result(bad_lines)


def test_messages_point_at_the_element_and_the_line(originals, tmp_path):
    doc = json.loads(originals["tree"].read_text())
    first = doc["root"]["children"][0]
    del first["type"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SchemaError, match=rf"t\.json: element '{first['id']}': missing 'type'"):
        load_parsing_result(path)
    lines = originals["jsonl"].read_text().splitlines()
    chunk = json.loads(lines[2])
    chunk["geom"][0]["left"] = "0.1"
    lines[2] = json.dumps(chunk)
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(SchemaError, match=rf"c\.jsonl: line 3: chunk '{chunk['id']}': geom\[0\]: 'left' must be a number"):
        load_chunking_result(path)


@pytest.mark.parametrize(
    "envelope",
    [
        {"schema": "grounded.parsing_result", "version": [1]},  # unhashable version
        {"schema": "grounded.parsing_result", "version": 1},  # no root
        {"schema": "grounded.parsing_result", "version": True, "root": {}},
        {"schema": ["x"], "version": 1, "root": {}},
        {"schema": "grounded.parsing_result", "version": 1, "root": []},
        {"schema": "grounded.parsing_result", "version": 1, "root": {"id": "r", "type": "ROOT", "children": {}}},
        {"schema": "grounded.parsing_result", "version": 1, "root": {"id": "r", "type": "ROOT", "metadata": {"pages": [{"page": 1}]}}},
        {"schema": "grounded.parsing_result", "version": 1, "root": {"id": "r", "type": "ROOT", "metadata": {"level": "x"}}},
    ],
)
def test_malformed_envelopes_and_roots(envelope):
    with pytest.raises(SchemaError, match=r"^doc\.json: "):
        loads_parsing_result(json.dumps(envelope), source="doc.json")


def test_character_ranges_must_lie_inside_the_content():
    box = {"page": 1, "left": 0.1, "top": 0.1, "right": 0.2, "bottom": 0.2,
           "spans": [{"page": 1, "left": 0.1, "top": 0.1, "right": 0.2, "bottom": 0.2, "char_start": 0, "char_end": 9}]}
    node = {"id": "e1", "type": "PARAGRAPH", "content": "short", "geom": [box]}
    with pytest.raises(SchemaError, match=r"element 'e1': geom\[0\]\.spans\[0\] covers characters up to 9"):
        ParsingResult.from_dict(node)
    node["content"] = "long enough"
    assert ParsingResult.from_dict(node).geom[0].spans[0].char_end == 9
    box["spans"][0]["char_x"] = "not base64!"
    with pytest.raises(SchemaError, match=r"'char_x' is not valid base64"):
        ParsingResult.from_dict(node)


def test_deep_nesting_in_boxes_and_metadata_is_a_schema_error():
    box = '"page": 1, "left": 0.1, "top": 0.1, "right": 0.2, "bottom": 0.2'
    spans = "{" + box + ', "spans": [' * 5000 + "{" + box + "}" + "]}" * 5000  # spans of spans, 5000 deep
    text = ('{"schema": "grounded.parsing_result", "version": 1, "root": {"id": "r", "type": "ROOT", '
            '"children": [{"id": "e", "type": "PARAGRAPH", "geom": [' + spans + "]}]}}")
    with pytest.raises(SchemaError, match=r"^deep\.json: "):
        loads_parsing_result(text, source="deep.json")
    meta: Any = 1
    for _ in range(100):
        meta = [meta]
    with pytest.raises(SchemaError, match="nested deeper than 64 levels"):
        Chunk.from_dict({"id": "c", "content": "x", "metadata": {"m": meta}})


def test_chunk_metadata_types_are_checked():
    good = {"id": "c", "content": "Methods\nDose", "metadata": {"pages": [1], "heading_path": ["Methods"], "body_start": 8}}
    assert Chunk.from_dict(good).body == "Dose"
    for key, value in (("pages", ["1"]), ("heading_path", "Methods"), ("body_start", "8"), ("body_start", 99),
                       ("token_count", -1), ("element_ids", [1])):
        bad = copy.deepcopy(good)
        bad["metadata"][key] = value
        with pytest.raises(SchemaError, match=rf"chunk 'c': metadata\.{key}"):
            Chunk.from_dict(bad)
    with pytest.raises(SchemaError, match=r"chunks\[0\]: expected an object"):
        ChunkingResult.from_dict({"chunks": [1]})
    with pytest.raises(SchemaError, match=r"box: invalid box \(page=0"):
        ParsingBoundingBox.from_dict({"page": 0, "left": 0, "top": 0, "right": 1, "bottom": 1})


def test_valid_files_still_round_trip(originals):
    tree = load_parsing_result(originals["tree"])
    assert tree == ParsingResult.from_dict(tree.to_dict())
    assert load_chunking_result(originals["jsonl"]).chunks == load_chunking_result(originals["chunks_json"]).chunks
