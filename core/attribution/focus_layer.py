"""The focus layer of ``highlight``/``render``: each chunk's focus (:mod:`grounded.focus`) as a chunk
of its own, whose boxes are the focus boxes, drawn in :data:`FOCUS_COLOR` over the lighter chunk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..focus import Focus, focus_of
from ..model.chunk import Chunk

__all__ = ["FOCUS_COLOR", "CHUNK_UNDER_FOCUS_OPACITY", "focus_chunks"]

#: strong orange: the answer, over the chunk's marker yellow
FOCUS_COLOR = (1.0, 0.42, 0.0)
#: the opacity of a chunk's own highlight when its focus is drawn over it (the lighter layer)
CHUNK_UNDER_FOCUS_OPACITY = 0.35


def focus_chunks(
    pdf: str | os.PathLike[str] | bytes, chunks: Sequence[Chunk], *, query: str | None = None,
    focus: Focus | Sequence[Focus | None] | None = None,
) -> list[Chunk | None]:
    """One entry per chunk: a :class:`~grounded.model.Chunk` (the chunk's id and text) whose boxes are
    its focus boxes, or None (no focus, or no boxes for it). ``focus``: given focus (one, for a single
    chunk, or one per chunk); else ``query``: each chunk's :func:`~grounded.focus.focus_of`, placed
    in ``pdf`` (a path; PDF bytes cannot name a parse tree: no focus boxes, a warning)."""
    if focus is None and query is None:
        return [None] * len(chunks)
    if focus is None:
        where: dict[str, Any] = {"pdf": Path(os.fspath(pdf))} if not isinstance(pdf, bytes) else {}
        given: list[Focus | None] = [focus_of(c, str(query), **where) for c in chunks]
    elif isinstance(focus, Focus):
        given = [focus, *([None] * (len(chunks) - 1))]
    else:
        given = list(focus)
        if len(given) != len(chunks):
            raise ValueError(f"focus: {len(given)} given for {len(chunks)} chunks (one per chunk, None for none)")
    return [Chunk.of_boxes(c.id, c.content, list(f.boxes)) if f is not None and f.boxes else None
            for c, f in zip(chunks, given)]
