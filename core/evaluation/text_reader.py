"""Markdown / plain text -> :class:`~grounded.model.ParsingResult` tree without boxes.

Used to chunk text corpora (e.g. Chroma's evaluation corpora) with the library's strategies and
map every chunk back to exact corpus character ranges. Every element's ``content`` is an exact
slice of the source text and ``metadata["source_start"]`` is the offset of ``content[0]`` in it,
so ``text[source_start : source_start + len(content)] == content`` holds for every element.

Blocks are separated by blank lines (consecutive lines form one paragraph, as in Markdown).
Recognised structure:

* ``#``..``######`` headings (level = number of ``#``) and WikiText headings ``= = Title = =``
  (level = number of ``=``) -> SECTION_HEADER; the level-1 heading of a document is kept as
  SECTION_HEADER too (no TITLE guessing);
* list items ``-``/``*``/``+``/``1.``/``1)`` -> LIST_ITEM inside a LIST (continuation lines
  belong to the item; a blank line between items keeps the list going);
* everything else -> PARAGRAPH.

Section headers become the parents of the content that follows them, nested by level.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, InputNotFoundError
from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T

__all__ = ["read_text", "read_text_file"]

_MD_HEADING = re.compile(r"[ \t]{0,3}(#{1,6})[ \t]+(?P<text>.*?)[ \t]*#*[ \t]*$")
_WIKI_HEADING = re.compile(r"[ \t]*(?P<marks>=(?:[ \t]*=)*)[ \t]+(?P<text>\S.*?)[ \t]+(?P=marks)[ \t]*$")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+(?P<text>[^|\s].*?)[ \t]*$")


@dataclass
class _Block:
    kind: T
    start: int  # offset of content[0] in the source
    end: int
    level: int | None = None


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _heading(line: str) -> tuple[int, int, int] | None:
    """(level, text start, text end) within ``line`` when it is a heading."""
    m = _MD_HEADING.fullmatch(line)
    if m and m.group("text"):
        return len(m.group(1)), m.start("text"), m.end("text")
    m = _WIKI_HEADING.fullmatch(line)
    if m:
        return m.group("marks").count("="), m.start("text"), m.end("text")
    return None


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    para: list[int] | None = None  # [start, end] of the open paragraph / list item
    para_kind = T.PARAGRAPH

    def close() -> None:
        nonlocal para
        if para is not None:
            s, e = _strip_span(text, para[0], para[1])
            if e > s:
                blocks.append(_Block(para_kind, s, e))
        para = None

    pos = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        line_start, line_end = pos, pos + len(line)
        pos += len(raw)
        if not line.strip():
            close()
            continue
        head = _heading(line)
        if head is not None:
            close()
            level, hs, he = head
            blocks.append(_Block(T.SECTION_HEADER, line_start + hs, line_start + he, level))
            continue
        item = _LIST_ITEM.fullmatch(line)
        if item is not None:
            close()
            para, para_kind = [line_start + item.start("text"), line_end], T.LIST_ITEM
            continue
        if para is None:
            para, para_kind = [line_start, line_end], T.PARAGRAPH
        else:
            para[1] = line_end
    close()
    return blocks


def read_text(text: str, source: str | Path = "<text>", *, id_prefix: str = "t") -> ParsingResult:
    """Build a ROOT -> SECTION_HEADER -> PARAGRAPH / LIST -> LIST_ITEM tree from ``text``."""
    root = ParsingResult(
        id=f"{id_prefix}-root",
        type=T.ROOT,
        metadata={
            "parser": "grounded.text_reader",
            "source": {"path": str(source), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()},
            "page_count": 0,
            "pages": [],
            "characters": len(text),
        },
    )
    # stack of (level, node) of open sections; level 0 = root
    sections: list[tuple[int, ParsingResult]] = [(0, root)]
    current_list: ParsingResult | None = None
    counter = 0

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"{id_prefix}-{counter}"

    for block in _blocks(text):
        content = text[block.start : block.end]
        meta: dict[str, object] = {"source_start": block.start}
        if block.kind == T.SECTION_HEADER:
            current_list = None
            level = int(block.level or 1)
            while sections[-1][0] >= level:
                sections.pop()
            meta["level"] = level
            node = ParsingResult(id=new_id(), type=T.SECTION_HEADER, content=content, metadata=meta)
            sections[-1][1].add_child(node)
            sections.append((level, node))
            continue
        parent = sections[-1][1]
        if block.kind == T.LIST_ITEM:
            if current_list is None or current_list.parent is not parent:
                current_list = ParsingResult(id=new_id(), type=T.LIST, metadata={"source_start": block.start})
                parent.add_child(current_list)
            current_list.add_child(ParsingResult(id=new_id(), type=T.LIST_ITEM, content=content, metadata=meta))
            continue
        current_list = None
        parent.add_child(ParsingResult(id=new_id(), type=T.PARAGRAPH, content=content, metadata=meta))
    return root


def read_text_file(path: str | Path, *, id_prefix: str = "t") -> ParsingResult:
    """:func:`read_text` on a UTF-8 file (newlines kept as stored, so offsets match the file's text)."""
    path = Path(path)
    if not path.is_file():
        raise InputNotFoundError(path, "file not found")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    return read_text(text, source=path, id_prefix=id_prefix)
