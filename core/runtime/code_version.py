"""Fingerprints of grounded's own code, for cache keys: a parse tree or a chunk row made by other code
is not reused (its text, ids or boxes may differ).

Each fingerprint declares the parts of the package it covers (folders hashed recursively, or single
files; paths relative to the package). Every module of the package is either covered by a
fingerprint or listed in :data:`OUTSIDE` with the reason its changes cannot change a stored tree or
chunk; a test checks that no module is in neither, so a module moved into a new folder is never
silently left out of a cache key.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["PARSE_CODE", "CHUNK_CODE", "OUTSIDE", "PACKAGE", "code_files", "parser_code_version", "chunking_code_version"]

PACKAGE = Path(__file__).resolve().parents[1]

#: the code that makes a parse tree: the types and every parser backend, rule and post-processing step
PARSE_CODE: tuple[str, ...] = ("model", "parsers")
#: the code that makes a chunk (text, ids, boxes, row metadata) from a tree
CHUNK_CODE: tuple[str, ...] = (
    "model", "text", "chunking", "grounding", "integrations", "llm", "io/box_codec.py", "io/chunk_codec.py", "io/tree_payload.py",
    "io/pdf_info.py", "ingest/rows.py",
)
#: parts covered by neither fingerprint, and why their changes cannot change a stored tree or chunk
OUTSIDE: dict[str, str] = {
    "focus/__init__.py": "the focus of a hit is computed at query time, never stored in a tree or chunk",
    "focus/api.py": "the focus of a hit is computed at query time, never stored in a tree or chunk",
    "focus/boxes.py": "the focus of a hit is computed at query time, never stored in a tree or chunk",
    "focus/lexical.py": "the focus of a hit is computed at query time, never stored in a tree or chunk",
    "focus/select.py": "the focus of a hit is computed at query time, never stored in a tree or chunk",
    "focus/units.py": "the focus of a hit is computed at query time, never stored in a tree or chunk",
    "__init__.py": "lazy exports only",
    "api.py": "thin wrappers over get_parser / Chunker",
    "errors.py": "error types and messages",
    "metadata.py": "re-export of the io codecs (box, chunk, tree payload, PDF info) and integrations.boxes.chunk_of",
    "serialization.py": "re-export of io/codec.py and io/atomic.py",
    "samples.py": "re-export of demo/samples.py",
    "runtime": "process infrastructure: retries, processes, memory, telemetry switches, these fingerprints",
    "io/__init__.py": "package docstring only",
    "io/atomic.py": "how files are written, not what they hold",
    "io/chunks_file.py": "reads chunk files written by other modules (codec, ingest rows); writes nothing",
    "io/codec.py": "the JSON codec is versioned by its schema name + version (a format change bumps it)",
    "io/markdown.py": "Markdown is rendered from the tree on demand, never cached",
    "io/jsonl.py": "reads JSON Lines files (ground chunk texts, eval questions, chunks.jsonl); stores nothing",
    "attribution": "renders stored boxes; makes none",
    "graph": "node graph, built from chunks on demand (not cached)",
    "ingest": "job orchestration; its rows' encoding (ingest/rows.py) is in CHUNK_CODE",
    "search": "reads an index, writes none",
    "view": "serves an index read-only",
    "cli": "command-line front end",
    "demo": "the sample document and the demo command",
    "evaluation": "the evaluation lab; its caches are keyed by parser_code_version and their own inputs",
}


def code_files(parts: Iterable[str]) -> list[Path]:
    """The ``.py`` files of ``parts`` (folders recursively), sorted."""
    files: set[Path] = set()
    for part in parts:
        path = PACKAGE / part
        files.update(path.rglob("*.py") if path.is_dir() else [path])
    return sorted(files)


def _code_hash(parts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for f in code_files(parts):
        digest.update(f.relative_to(PACKAGE).as_posix().encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


@functools.cache
def parser_code_version() -> str:
    """Hash of the code in :data:`PARSE_CODE`."""
    return _code_hash(PARSE_CODE)


@functools.cache
def chunking_code_version() -> str:
    """Hash of the code in :data:`CHUNK_CODE`."""
    return _code_hash(CHUNK_CODE)
