"""Post-processing across batches (seed 001 §3.3.3): continued chunks are merged, continued tables
stay one row per chunk with their header.

Rules, applied to the first chunk of every batch after the first when it is flagged
``[CONTINUES]True``:

* a table-row chunk continuing a table-row chunk is another row of the same table: it stays its own
  chunk; when the model left its header out, the previous chunk's header is put back;
* anything else (a paragraph, a list, steps cut by the batch boundary) is appended to the previous
  chunk (a header the continuation repeats is dropped), which keeps the previous chunk's headings.

Inside a batch the model saw both pieces, so ``True`` there only records that a chunk belongs to the
same procedure or table; those chunks are kept as they are (the flag stays in the metadata).
``Partial`` is never merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .response import ModelChunk

__all__ = ["merge_batches", "table_header"]


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.strip().splitlines()]


def table_header(text: str) -> list[str] | None:
    """The header lines (header row + ``|---|`` rule) of a chunk that starts with a pipe table."""
    lines = _lines(text)
    if len(lines) >= 2 and lines[0].startswith("|") and set(lines[1]) <= set("|-: ") and "-" in lines[1]:
        return lines[:2]
    return None


def _norm(lines: Sequence[str]) -> list[str]:
    return [" ".join(ln.replace("|", " ").split()).lower() for ln in lines]


def _is_rows(text: str) -> bool:
    lines = [ln for ln in _lines(text) if ln]
    return bool(lines) and all(ln.startswith("|") for ln in lines)


def merge_batches(batches: Sequence[Sequence[ModelChunk]]) -> list[ModelChunk]:
    """All batches' chunks in order, continuations at batch boundaries resolved (module docstring)."""
    out: list[ModelChunk] = []
    for b, chunks in enumerate(batches):
        for i, chunk in enumerate(chunks):
            if not (b > 0 and i == 0 and chunk.continues == "True" and out):
                out.append(chunk)
                continue
            prev = out[-1]
            header = table_header(prev.content)
            own = table_header(chunk.content)
            if header is not None and (own is not None and _norm(own) == _norm(header) or own is None and _is_rows(chunk.content)):
                if own is None:  # rows without their header: the table's header goes back on
                    chunk = replace(chunk, content="\n".join([*header, chunk.content.strip()]))
                    chunk = chunk.with_issue("table header taken from the previous chunk")
                out.append(chunk)
                continue
            body = chunk.content
            if header is not None and own is not None and _norm(own) == _norm(header):
                body = "\n".join(_lines(body)[2:])
            out[-1] = replace(
                prev,
                content=prev.content.rstrip() + "\n" + body.strip(),
                pages=tuple(sorted({*prev.pages, *chunk.pages})),
                issues=(*prev.issues, *chunk.issues),
                parts=prev.parts + chunk.parts,
            )
    return out
