"""The chunker's token record and the chunk / chunking result (thesis Fig. 3.5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import SchemaError
from ._checks import _array, _is_int, _kind, _metadata, _object, _text
from .boxes import ParsingBoundingBox


@dataclass(slots=True)
class RichToken:
    """One token of the chunker's stream, tied to its element (thesis Fig. 3.5).

    ``char_start``/``char_end`` locate the token inside the element's ``content``; delimiter
    tokens between elements have ``element_id`` None.
    """

    element_id: str | None
    token_idx: int
    token: int
    text: str
    char_start: int
    char_end: int


@dataclass(eq=True)
class Chunk:
    """One retrieval passage. ``metadata`` keys: token_count, strategy, element_ids, heading_path,
    pages, start_char/end_char (``document_text[start_char:end_char]`` is the chunk body),
    body_start (offset of the body inside ``content``; > 0 when headings are prepended)."""

    id: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    geom: list[ParsingBoundingBox] = field(default_factory=list)

    @property
    def body(self) -> str:
        return self.content[int(self.metadata.get("body_start", 0)) :]

    @property
    def pages(self) -> list[int]:
        return sorted({b.page for b in self.geom})

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "metadata": self.metadata,
            "geom": [b.to_dict() for b in self.geom],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "chunk") -> Chunk:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, where)
        raw_id = d.get("id")
        if not isinstance(raw_id, str) and not _is_int(raw_id):
            raise SchemaError(f"{where}: " + ("missing 'id'" if "id" not in d else f"'id' must be a string, got {_kind(raw_id)}"))
        where = f"chunk {str(raw_id)!r}"
        content = _text(d, "content", where, required=True) or ""
        metadata = _metadata(d, where)
        _check_chunk_metadata(metadata, len(content), where)
        geom = [ParsingBoundingBox.from_dict(b, f"{where}: geom[{i}]") for i, b in enumerate(_array(d, "geom", where))]
        return cls(id=str(raw_id), content=content, metadata=metadata, geom=geom)


_CHUNK_INT_KEYS = ("token_count", "start_char", "end_char", "body_start")
_CHUNK_LIST_KEYS = {"pages": _is_int, "heading_path": lambda v: isinstance(v, str),
                    "element_ids": lambda v: isinstance(v, str), "heading_ids": lambda v: isinstance(v, str)}


def _check_chunk_metadata(meta: dict[str, Any], length: int, where: str) -> None:
    """The chunk metadata keys readers rely on have the types the chunker writes."""
    for key in _CHUNK_INT_KEYS:
        v = meta.get(key)
        if v is not None and (not _is_int(v) or v < 0):
            raise SchemaError(f"{where}: metadata.{key} must be an integer >= 0, got {_kind(v)} {v!r:.40}")
    body_start = meta.get("body_start")
    if body_start is not None and body_start > length:
        raise SchemaError(f"{where}: metadata.body_start {body_start} lies beyond the content ({length} characters)")
    for key, ok in _CHUNK_LIST_KEYS.items():
        v = meta.get(key)
        if v is not None and (not isinstance(v, list) or not all(ok(x) for x in v)):
            raise SchemaError(f"{where}: metadata.{key} must be an array of {'integers' if key == 'pages' else 'strings'}")


@dataclass(eq=True)
class ChunkingResult:
    """All chunks of one document plus metadata: strategy + parameters, tokenizer, and the root
    metadata of the parse they came from (``metadata["document"]``)."""

    chunks: list[Chunk] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"metadata": self.metadata, "chunks": [c.to_dict() for c in self.chunks]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkingResult:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, "result")
        chunks = [Chunk.from_dict(c, f"chunks[{i}]") for i, c in enumerate(_array(d, "chunks", "result"))]
        return cls(chunks=chunks, metadata=_metadata(d, "result"))
