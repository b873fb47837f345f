"""Seed 001's step/list rule, checked after grounding: a list stays in one chunk.

The seed's prompt makes it the highest-priority rule ("NEVER split numbered steps, instructions, or
procedures across different chunks"; "ALL items in a numbered or bulleted list MUST stay together in
one chunk"; seed 001 §3: "Step preservation ensures that all numbered steps or procedures remain in the
same chunk ... List continuity keeps related list items together"), but a model may still split a list,
and a list longer than the token bound is split by it. So after the chunks are built:

* **list runs** (:func:`list_runs`) are found in the document text: maximal sequences of at least two
  consecutive list items, an item being a ``LIST_ITEM`` element or a line that starts with a list
  marker (``1.``, ``2)``, ``(4)``, ``a.``, ``(b)``, ``•``, ``-``, ``Step 3:``), so numbered steps a
  parser read as paragraphs count too, and a list continued on the next page is one run;
* a run whose text lies in two or more grounded chunks is **merged back** into one chunk (from the
  first chunk's start to the last one's end, the first chunk's heading line kept) when that chunk fits
  ``max_tokens``; otherwise every chunk holding part of it gets ``list_split: true`` in its metadata
  and a warning is logged - the split is never silent.

Chunks the model wrote but the document does not have (ungrounded) are left where they are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grounded.errors import escape_controls
from grounded.model.chunk import Chunk
from grounded.model.elements import ParsingResultType as T
from grounded.text.stream import DocumentText

__all__ = ["ListRun", "list_runs", "keep_lists_whole", "LIST_MARKER"]

log = logging.getLogger(__name__)

#: a line that starts a list item: a number or letter with "." / ")", a bracketed number, a bullet,
#: or "Step N"
LIST_MARKER = re.compile(
    r"^\s*(?:\(?\d{1,3}[.)]|\([a-z]\)|[a-z][.)]|[•▪◦●○■□‣∙·*\-–—]|step\s+\d{1,3}\s*[:.)]?)\s+\S", re.IGNORECASE
)


@dataclass(frozen=True)
class ListRun:
    """One list in the document text: characters ``[start, end)`` holding ``items`` items."""

    start: int
    end: int
    items: int


def _units(doc: DocumentText) -> list[tuple[int, int, bool]]:
    """``(start, end, is_item)`` of every LIST_ITEM node and every line of the other text nodes."""
    out: list[tuple[int, int, bool]] = []
    for k, node in enumerate(doc.nodes):
        start, end = doc.node_span(k)
        if node.type == T.LIST_ITEM:
            out.append((start, end, True))
            continue
        pos = start
        for line in node.content.split("\n"):
            if line.strip():
                out.append((pos, pos + len(line), bool(LIST_MARKER.match(line))))
            pos += len(line) + 1
    return out


def list_runs(doc: DocumentText) -> list[ListRun]:
    """The lists of the document text, in reading order (see the module doc)."""
    runs: list[ListRun] = []
    current: list[tuple[int, int, bool]] = []
    for unit in [*_units(doc), (0, 0, False)]:  # a sentinel closes the last run
        if unit[2]:
            current.append(unit)
            continue
        if len(current) >= 2:
            runs.append(ListRun(current[0][0], current[-1][1], len(current)))
        current = []
    return runs


def _span(chunk: Chunk) -> tuple[int, int]:
    return int(chunk.metadata["start_char"]), int(chunk.metadata["end_char"])


def _holders(chunks: Sequence[Chunk], run: ListRun) -> list[int]:
    """Indexes of the grounded chunks whose body holds part of ``run``."""
    out = []
    for i, chunk in enumerate(chunks):
        s, e = _span(chunk)
        if e > s and s < run.end and e > run.start:
            out.append(i)
    return out


def keep_lists_whole(
    chunks: list[Chunk],
    runs: Sequence[ListRun],
    merge: Callable[[list[Chunk]], Chunk | None],
    source: str = "document",
) -> list[Chunk]:
    """``chunks`` with every list run in one chunk where it fits: ``merge(parts)`` returns the merged
    chunk, or None when it would exceed the token bound (then the parts are flagged ``list_split``).
    Returns the new chunk list in reading order."""
    out = list(chunks)
    for run in runs:
        held = _holders(out, run)
        if len(held) < 2:
            continue
        parts = [out[i] for i in held]
        merged = merge(parts)
        if merged is not None:
            ungrounded_between = [out[i] for i in range(held[0], held[-1] + 1) if i not in held]
            out[held[0] : held[-1] + 1] = [merged, *ungrounded_between]
            continue
        for chunk in parts:
            chunk.extra["list_split"] = True
        log.warning("%s: a list of %d items (characters %d-%d) is split over %d chunks: merged it exceeds the token "
                    "bound; the chunks are flagged list_split", escape_controls(str(source)), run.items, run.start, run.end, len(parts))
    return out
