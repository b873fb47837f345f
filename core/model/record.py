"""The typed chunk record of earlier releases: :class:`ChunkRecord` is :class:`~grounded.model.Chunk`
(one chunk type with typed fields; ``from_chunk``/``to_chunk`` give copies)."""

from __future__ import annotations

from .chunk import RECORD_KEYS, Chunk, stored_chunk_dict, text_hash

__all__ = ["ChunkRecord", "RECORD_KEYS", "text_hash", "stored_chunk_dict"]

ChunkRecord = Chunk
