"""Chunk ids: one source of truth for every adapter (and the core chunker).

A chunk id is derived from three things only, never from a per-call counter:

* the **source** (:func:`source_key`): the PDF's sha256 plus the parser that read it (two parsers
  give two document texts, so equal char spans would be different text), or, for a tree without a
  source PDF (plain text), a hash of the text - adapters that chunk plain text pass a key that also
  names the document (its id), so two documents with identical text get different ids;
* the **chunking configuration** (:attr:`grounded.chunking.Chunker.fingerprint`): strategy, all its
  parameters, the tokenizer's identity and the box mode;
* the chunk's own **char span** ``[start, end)`` in the document text.

Ids read as ``<source 12 hex>-<source+config 10 hex>-<start>-<end>``, e.g.
``258c0905aecb-3f1c9a02d4-1024-2311``: the prefix is the first 12 hex digits of the PDF's sha256
(or of the text hash), so ids of one PDF sort together, and the same PDF at 512 and 128 tokens,
batch or interleaved splitting, or another parser give distinct ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ..model.element_info import RootInfo

__all__ = ["chunk_id", "source_key", "text_key", "stable_hash", "class_identity", "repeat_id", "refused_id", "text_only_id"]


def stable_hash(value: Any, length: int = 64) -> str:
    """Hex sha256 of a JSON-able value (keys sorted, compact): stable across processes and runs
    (unlike ``hash()``); non-JSON values are written with ``repr``."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def class_identity(cls: type) -> str:
    """The name a class goes by in configuration fingerprints (and so in chunk ids): its
    ``IDENTITY`` attribute when it declares one, else ``module.qualname``. grounded's own classes that
    moved between modules declare the path they had when ids were first issued, so moving code never
    changes the ids of the chunks it makes."""
    identity = cls.__dict__.get("IDENTITY")
    return identity if isinstance(identity, str) else f"{cls.__module__}.{cls.__qualname__}"


def text_key(text: str, *, name: str = "") -> str:
    """The source key of plain text: sha256 of ``name`` (e.g. the document id) and the text."""
    digest = hashlib.sha256()
    if name:
        digest.update(name.encode("utf-8"))
        digest.update(b"\0")
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def source_key(root_metadata: Mapping[str, Any], text: str | None = None) -> str:
    """The source key of a parse tree from its root metadata: ``<pdf sha256>`` followed by
    ``:<parser>`` when the parser is recorded; without a source sha256, :func:`text_key` of
    ``text`` (the document text; required then)."""
    info = RootInfo(root_metadata)  # type: ignore[arg-type]  # read only
    raw = info.source
    sha = str(raw.get("sha256") or "") if isinstance(raw, Mapping) else ""
    if sha:
        parser = str(info.parser or "")
        return f"{sha}:{parser}" if parser else sha
    if text is None:
        raise ValueError("a tree without a source sha256 needs its text for a source key")
    return text_key(text)


def chunk_id(source_key: str, config_fingerprint: str, start: int, end: int) -> str:
    """Deterministic id of the chunk covering chars ``[start, end)`` of one source's document text
    under one chunking configuration (see the module docstring for the format)."""
    if not source_key:
        raise ValueError("chunk_id needs a non-empty source key")
    middle = hashlib.sha256(f"{source_key}\0{config_fingerprint}".encode()).hexdigest()[:10]
    return f"{source_key[:12]}-{middle}-{int(start)}-{int(end)}"


# -- id suffixes: the one home of the rules that make an id unique when its span does not ----------
def repeat_id(cid: str, n: int) -> str:
    """The id of the ``n``-th repeat (n >= 1) of a chunk whose id another chunk of the same call
    already has (equal text grounded twice, a strategy that emits one span twice): ``<id>~<n>``;
    ``n == 0`` is the id itself."""
    return f"{cid}~{int(n)}" if n else cid


def refused_id(source_key: str, config_fingerprint: str, text_hash_: str) -> str:
    """The id of a text grounding refused (it has no span): the empty span's id plus
    ``~refused-<first 8 hex of the text hash>``."""
    return f"{chunk_id(source_key, config_fingerprint, 0, 0)}~refused-{text_hash_[:8]}"


def text_only_id(source_key: str, config_fingerprint: str, at: int, text_hash_: str) -> str:
    """The id of a chunk with text but an empty document span (a model's chunk found nowhere in the
    document text): the empty span at ``at`` plus ``~text-<first 8 hex of the text hash>``."""
    return f"{chunk_id(source_key, config_fingerprint, at, at)}~text-{text_hash_[:8]}"
