"""grounded.io.jsonl: the JSON Lines reader of input files, on files built for each fault."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grounded.errors import InputNotFoundError, SchemaError
from grounded.io.jsonl import iter_jsonl

DEEP = "[" * 200_000 + "]" * 200_000  # nested past the parser's recursion limit


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_good_file_gives_each_object_with_its_line_number(tmp_path: Path) -> None:
    good = _write(
        tmp_path / "good.jsonl",
        "\ufeff".encode()  # a byte-order mark is dropped
        + b'{"text": "one"}\r\n'
        + b"\n   \t\n"  # blank lines are skipped but counted
        + b'{"text": "two \\u2028 \xe2\x80\xa8 kept"}\r'  # a lone \r ends a line; U+2028 inside a string does not
        + b'{"n": [1, {"deep": null}]}',  # no final newline
    )
    assert list(iter_jsonl(good)) == [
        (1, {"text": "one"}),
        (4, {"text": "two \u2028 \u2028 kept"}),
        (5, {"n": [1, {"deep": None}]}),
    ]
    assert list(iter_jsonl(_write(tmp_path / "empty.jsonl", b""))) == []


@pytest.mark.parametrize(
    ("second_line", "cause"),
    [
        (b'{"text": ', r"not valid JSON \(Expecting value at column 10\)"),
        (b'{"text": "x"} {"text": "y"}', r"not valid JSON \(Extra data at column 15\)"),
        (DEEP.encode(), r"JSON nested too deeply to read"),
        (b"[" * 200_000, r"(JSON nested too deeply|not valid JSON)"),  # unclosed: either, never a traceback
        (b'{"text": "caf\xe9"}', r"not UTF-8 text \(byte 0xe9 at column 14\)"),
        (b'{"n": ' + b"9" * 5000 + b"}", r"not readable JSON \(Exceeds the limit"),
        (b'["text"]', r"expected a JSON object, got an array"),
        (b'"text"', r"expected a JSON object, got a string"),
        (b"3.5", r"expected a JSON object, got a number"),
        (b"null", r"expected a JSON object, got null"),
    ],
    ids=["invalid", "two-values", "deep", "deep-unclosed", "not-utf8", "huge-int", "array", "string", "number", "null"],
)
def test_each_bad_line_is_a_schema_error_naming_file_and_line(tmp_path: Path, second_line: bytes, cause: str) -> None:
    bad = _write(tmp_path / "bad.jsonl", b'{"text": "fine"}\n' + second_line + b'\n{"text": "after"}\n')
    lines = iter_jsonl(bad)
    assert next(lines) == (1, {"text": "fine"})  # the lines before the fault are read
    with pytest.raises(SchemaError, match="^" + re.escape(str(bad)) + ": line 2: " + cause) as info:
        next(lines)
    assert "\n" not in str(info.value)


def test_a_control_character_in_the_file_name_is_escaped(tmp_path: Path) -> None:
    bad = _write(tmp_path / "a\x1b[31mb.jsonl", b"[]\n")
    with pytest.raises(SchemaError, match=r"a\\x1b\[31mb\.jsonl: line 1: expected a JSON object"):
        list(iter_jsonl(bad))


def test_a_missing_file_is_input_not_found(tmp_path: Path) -> None:
    with pytest.raises(InputNotFoundError, match="missing.jsonl: no such file"):
        list(iter_jsonl(tmp_path / "missing.jsonl"))


def test_what_json_dumps_writes_reads_back(tmp_path: Path) -> None:
    rows = [{"text": "Grüße \u2028 \ud7ff", "i": i, "nested": {"a": [i, None, True]}} for i in range(50)]
    path = _write(tmp_path / "rows.jsonl", "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode())
    assert [obj for _, obj in iter_jsonl(path)] == rows


def test_chunks_jsonl_with_unicode_line_separators_in_a_text_reads_back(tmp_path: Path) -> None:
    """grounded's own chunks.jsonl (read through iter_jsonl): text extracted from a PDF may hold
    U+2028, U+2029, NEL or the C0 separators, which ``str.splitlines`` splits at but JSON keeps raw."""
    from grounded.io.codec import read_chunks_jsonl, write_chunks_jsonl
    from grounded.model import Chunk, ChunkingResult

    text = "one\u2028two\u2029three\x85four\x1cfive\x1dsix\x1eseven\x0beight\x0cnine"
    result = ChunkingResult(chunks=[Chunk(id="c-1", content=text, metadata={"token_count": 9, "strategy": "fixed"}),
                                    Chunk(id="c-2", content="plain", metadata={"token_count": 1, "strategy": "fixed"})])
    path = write_chunks_jsonl(result, tmp_path / "chunks.jsonl")
    assert len(path.read_bytes().splitlines()) == 3  # the envelope line and one line per chunk
    assert [c.content for c in read_chunks_jsonl(path).chunks] == [text, "plain"]
