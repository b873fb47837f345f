"""Table-aware grounding for texts that serialize a table cell by cell.

docling-core's ``HybridChunker`` (and similar "triplet" serializers) write a table as
``row header, column header = value. row header, column header = value. ...``: every row and
column header is repeated once per cell, and the cells come in a different order than in the
document text. Letter k-grams then explain little of such a text. Here it is matched word by
word onto the table's cells instead: inside the document-text range of each TABLE of the tree (its
caption included), the run of document words that best explains the text (maximum-sum run: letters
of the text's words minus letters of other words) is taken, then further runs for the words still
unexplained (the header row of a table whose middle rows a chunk holds), and a word of the text is
explained as often as the text repeats it (a header written once per cell is one cell of the table).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T
from .normalize import AlnumText, max_word_run

__all__ = ["TableRun", "looks_like_table_serialization", "table_ranges", "align_table"]

# "row header, column header = ": at the text's start or after a previous triplet's ". " (or a line
# start / "| "), the column header without quotes (code such as ``f(a, 'b') = 1`` is not a table)
_TRIPLET = re.compile(r"(?:^|(?<=\. )|(?<=\n)|(?<=\| ))[^\s,=][^,=\n]{0,200}, [^,=\n'\"]{1,200} = ", re.M)
_MARGIN = 400  # stream letters before/after a table that still count as its range (caption, notes)


def looks_like_table_serialization(text: str) -> bool:
    """True for a ``row header, column header = value`` serialization (two triplets at least)."""
    return len(_TRIPLET.findall(text)) >= 2


def table_ranges(root: ParsingResult, element_offsets: dict[str, int], norm: AlnumText) -> list[tuple[int, int]]:
    """Letter-stream ranges of the tree's tables (their text nodes, widened by a caption margin)."""
    out: list[tuple[int, int]] = []
    for node in root.walk():
        if node.type != T.TABLE:
            continue
        spans = [(element_offsets[n.id], element_offsets[n.id] + len(n.content)) for n in node.walk() if n.id in element_offsets]
        if not spans:
            continue
        lo = norm.position(min(s for s, _ in spans))
        hi = norm.position(max(e for _, e in spans))
        out.append((max(0, lo - _MARGIN), min(len(norm), hi + _MARGIN)))
    return out


@dataclass(frozen=True)
class TableRun:
    """A run of document words ``[lo, hi)`` (letter-stream positions) and how many of its letters
    belong to words of the text (``matched``)."""

    lo: int
    hi: int
    matched: int


def align_table(
    want: Counter[str], m: int, norm: AlnumText, ranges: list[tuple[int, int]], max_runs: int = 4
) -> tuple[list[TableRun], float, float, set[str]] | None:
    """Runs of one table explaining the text's words ``want`` (``m`` letters in all): ``(runs,
    coverage, precision, words found)`` for the table that explains most, or None. ``coverage``:
    the text's letters explained (a word counts with the text's multiplicity once any run holds
    it); ``precision``: letters of text words among the runs' letters."""
    best: tuple[list[TableRun], float, float, set[str]] | None = None
    min_gain = max(4, int(0.05 * m))
    for lo, hi in ranges:
        words, starts = norm.words(lo, hi)
        if not words:
            continue
        remaining = set(want)
        runs: list[TableRun] = []
        explained = 0
        for _ in range(max_runs):
            a, b = max_word_run(words, remaining)
            if b < a:
                break
            found = remaining & set(words[a : b + 1])
            gain = sum(len(w) * want[w] for w in found)
            if gain < min_gain:
                break
            d_lo = int(starts[a])
            d_hi = int(starts[b]) + len(words[b])
            runs.append(TableRun(d_lo, d_hi, sum(len(w) for w in words[a : b + 1] if w in want)))
            explained += gain
            remaining -= found
        if not runs:
            continue
        coverage = min(1.0, explained / m)
        span = sum(r.hi - r.lo for r in runs)
        precision = min(1.0, sum(r.matched for r in runs) / span) if span else 0.0
        if best is None or _f1(coverage, precision) > _f1(best[1], best[2]):
            best = (runs, coverage, precision, set(want) - remaining)
    return best


def _f1(c: float, p: float) -> float:
    return 2 * c * p / (c + p) if c + p else 0.0
