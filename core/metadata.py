"""Chunk metadata of the store surfaces: the public path of the :mod:`grounded.io` codecs
(:mod:`~grounded.io.box_codec`, :mod:`~grounded.io.chunk_codec`, :mod:`~grounded.io.tree_payload`,
:mod:`~grounded.io.pdf_info`).

``chunk_of`` here reads a node, Document, hit or row with the boxes of its own text
(:mod:`grounded.integrations.boxes`: re-derived for a re-split part, never the parent's);
``read_stored_chunk`` reads what is stored as it is."""

from __future__ import annotations

from .integrations.boxes import chunk_of
from .io.box_codec import *  # noqa: F403
from .io.box_codec import __all__ as _boxes
from .io.chunk_codec import *  # noqa: F403
from .io.chunk_codec import __all__ as _chunks
from .io.pdf_info import *  # noqa: F403
from .io.pdf_info import __all__ as _info
from .io.tree_payload import *  # noqa: F403
from .io.tree_payload import __all__ as _tree

__all__ = [*_boxes, *_chunks, *_tree, *_info, "chunk_of"]
