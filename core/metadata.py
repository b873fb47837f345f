"""Chunk metadata of the store surfaces (public path; the code lives in :mod:`grounded.io.chunk_metadata`).

``chunk_from_store`` / ``record_from_store`` here read a node, Document or hit with the boxes of its
own text (:mod:`grounded.grounding.stored`: re-derived for a re-split part, never the parent's)."""

from __future__ import annotations

from .grounding import stored as _stored
from .io.chunk_metadata import *  # noqa: F403
from .io.chunk_metadata import __all__ as __all__  # noqa: F401

chunk_from_store = _stored.chunk_of
record_from_store = _stored.record_of
