"""Chunk metadata of the store surfaces (public path; the code lives in the :mod:`grounded.io` codecs:
:mod:`~grounded.io.box_codec`, :mod:`~grounded.io.chunk_codec`, :mod:`~grounded.io.tree_payload`,
:mod:`~grounded.io.pdf_info`).

``chunk_of`` here reads a node, Document, hit or row with the boxes of its own text
(:mod:`grounded.grounding.stored`: re-derived for a re-split part, never the parent's);
``read_stored_chunk`` reads what is stored as it is."""

from __future__ import annotations

from .grounding.stored import chunk_of
from .io.chunk_metadata import *  # noqa: F403
from .io.chunk_metadata import __all__ as _io_all

__all__ = [*_io_all, "chunk_of"]
