"""Parse tree (+ chunks) -> :class:`~grounded.graph.nodes.NodeGraph`.

The section tree of the parse (content nested under SECTION_HEADER / TITLE elements) gives the
Header nodes and every content node's parent. TABLE elements become Table nodes, FIGURE elements
Image nodes (a CAPTION next to them is their caption, not body text); all other content of a
section is chunked with the given :class:`~grounded.chunking.Chunker` - one run per section, so a
Text node never straddles two sections - and each chunk becomes a Text node with the chunk's
exact boxes. Readings of the multi-strategy assembler (LLM transcriptions / descriptions) replace
or extend the text of Table and Image nodes.

The Document node carries the PDF's own document information (``info.pdf``: title, author,
dates, ... as the file has them; :mod:`.doc_metadata`) and its ``sha256``; with ``snapshots=FOLDER``
every Page node keeps a reference to a stored PNG of its page (:mod:`.snapshots`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..chunking.chunker import Chunker
from ..errors import ChunkingError, InputError
from ..grounding.normalize import alnum_text, strip_markup
from ..io.pdf_info import pdf_metadata
from ..model.boxes import ParsingBoundingBox
from ..model.elements import CONTAINER_TYPES, HEADING_TYPES, ParsingResult
from ..model.elements import ParsingResultType as T
from ..text.ids import source_key as tree_source_key
from ..text.stream import document_text
from .assembler import Assembly, RegionReading
from .nodes import CONTENT_KINDS, GraphNode, NodeGraph, NodeKind, TextPiece, node_id
from .tables import append_rows, continued_tables

__all__ = ["build_graph"]

_NON_TEXT = frozenset({T.TABLE, T.FIGURE})


def build_graph(
    tree: ParsingResult | Assembly,
    *,
    chunker: Chunker | None = None,
    source_key: str | None = None,
    snapshots: str | os.PathLike[str] | None = None,
    snapshot_dpi: int = 72,
) -> NodeGraph:
    """The node graph of a parse tree or of an :class:`~grounded.graph.assembler.Assembly`.

    ``chunker`` splits section text into Text nodes (default: ``Chunker("recursive", 256)`` with
    the MiniLM tokenizer). ``source_key`` names the source in node ids (default: the PDF's sha256
    and parser, as for chunk ids). ``snapshots``: a folder to store page PNGs in (rendered at
    ``snapshot_dpi`` from the source PDF the tree records; :func:`~grounded.graph.snapshots.keep_snapshots`
    takes the PDF itself, e.g. for a tree parsed from bytes)."""
    assembly = tree if isinstance(tree, Assembly) else Assembly(root=tree)
    root = assembly.root
    if root.type != T.ROOT:
        raise ChunkingError(f"a node graph needs a ROOT node, got {root.type}")
    key = source_key or tree_source_key(root.metadata, document_text(root).text)
    graph = _Builder(assembly, chunker or Chunker("recursive", 256), key).build()
    if snapshots is not None:
        from .snapshots import keep_snapshots

        source = _source_path(root)
        if source is None:
            raise InputError("<tree>", "records no readable source PDF to render snapshots from: "
                                       "call grounded.graph.snapshots.keep_snapshots(graph, pdf, folder)")
        keep_snapshots(graph, source, snapshots, dpi=snapshot_dpi)
    return graph


def _source(root: ParsingResult) -> Mapping[str, object]:
    source = root.info.source
    return source if isinstance(source, Mapping) else {}


def _source_path(root: ParsingResult) -> Path | None:
    source = _source(root)
    path = source.get("path")
    if not path or source.get("from_bytes") or not Path(str(path)).is_file():
        return None
    return Path(str(path))


def _document_metadata(root: ParsingResult) -> dict[str, object]:
    """``title`` (the TITLE element, else the file name), the PDF's ``sha256`` and its document
    information ``pdf`` (the fields it has: recorded by the parse, else read from the source file)."""
    meta: dict[str, object] = {"title": _title(root)}
    sha = _source(root).get("sha256")
    if sha:
        meta["sha256"] = str(sha)
    info = {k: v for k, v in pdf_metadata(_source_path(root), root=root).items() if v}
    if info:
        meta["pdf"] = info
    return meta


@dataclass
class _Section:
    node: GraphNode
    elements: list[ParsingResult] = field(default_factory=list)


class _Builder:
    def __init__(self, assembly: Assembly, chunker: Chunker, key: str) -> None:
        self.assembly = assembly
        self.root = assembly.root
        self.chunker = chunker
        self.key = key
        self.graph = NodeGraph(key)
        self.order: dict[str, float] = {}  # node id -> reading position
        self.position = {e.id: i for i, e in enumerate(self.root.walk())}
        self.index = self.root.index()
        self.captions: dict[str, ParsingResult] = {}
        for element in self.root.walk():
            if element.children:
                self.captions.update(_captions(element.children))
        self.caption_ids = {c.id for c in self.captions.values()}
        self.continued = continued_tables(self.root, self.captions)
        self.tails = {t.id for parts in self.continued.values() for t in parts}

    def build(self) -> NodeGraph:
        graph, key = self.graph, self.key
        pages = _page_numbers(self.root)
        page_texts = _page_texts(self.root)
        doc = graph.add(GraphNode(
            id=node_id(key, NodeKind.DOCUMENT, "document"), kind=NodeKind.DOCUMENT,
            text="",
            boxes=[_whole_page(p) for p in pages],
            metadata=_document_metadata(self.root),
        ))
        page_nodes = []
        for p in pages:
            page = graph.add(GraphNode(
                id=node_id(key, NodeKind.PAGE, str(p)), kind=NodeKind.PAGE, text=page_texts.get(p, ""),
                boxes=[_whole_page(p)], metadata={"page": p, "strategy": self.assembly.page_strategies.get(p, "fast")},
            ), doc)
            self._page_reading(page, doc)
            if not page.text.strip():
                page.flag("no text was read on this page")
            page_nodes.append(page)
        graph.chain(page_nodes)
        doc.text = "\n\n".join(p.text for p in page_nodes)
        sections = self._walk(doc)
        for section in sections:
            self._add_text_nodes(section)
        content = sorted((n for n in graph if n.kind in CONTENT_KINDS), key=lambda n: self.order[n.id])
        graph.chain(content)
        graph.reorder([doc.id] + [p.id for p in page_nodes] + [n.id for n in content])
        for node in graph:  # children in reading order (pages first under the document)
            node.child_ids.sort(key=lambda c: (graph[c].kind != NodeKind.PAGE, self.order.get(c, 0.0)))
        graph.check()
        return graph

    def _page_reading(self, page: GraphNode, doc: GraphNode) -> None:
        """A page only the LLM could read: its transcription is the Page text and one generated
        Text node (the whole page as its region) placed after the content of earlier pages."""
        p = int(page.info.page)  # type: ignore[arg-type]  # every Page node has its number
        reading = self.assembly.page_readings.get(p)
        if reading is None:
            return
        for reason in reading.flags:
            page.flag(reason)
        if not reading.text.strip() or page.text.strip():
            return
        page.text = reading.text
        node = self.graph.add(GraphNode(
            id=node_id(self.key, NodeKind.TEXT, f"page-{p}-llm"), kind=NodeKind.TEXT, text=reading.text,
            boxes=list(page.boxes), generated=True, pieces=list(reading.pieces), flags=list(reading.flags),
            metadata={"strategy": "llm"},
        ), doc)
        before = [i for e, i in self.position.items() if (pages := _element_pages(self.index[e])) and min(pages) < p]
        self.order[node.id] = max(before, default=-1) + 0.5

    # -- sections ---------------------------------------------------------------------------------
    def _walk(self, doc: GraphNode) -> list[_Section]:
        """Header, Table and Image nodes; returns each section's text elements (in order)."""
        sections: list[_Section] = []
        stack: list[tuple[ParsingResult, _Section]] = [(self.root, _Section(doc))]
        while stack:
            element, section = stack.pop()
            sections.append(section)
            pending: list[tuple[ParsingResult, _Section]] = []
            for child in element.children:
                if child.id in self.caption_ids:
                    continue
                if child.type in HEADING_TYPES:
                    header = self._add(NodeKind.HEADER, child, section.node, text=child.content, boxes=child.geom)
                    header.info.level = child.level or 1
                    pending.append((child, _Section(header)))
                elif child.type in _NON_TEXT:
                    if child.id not in self.tails:  # a continued table's later parts join its first part
                        self._add_region(child, self.captions.get(child.id), section.node, self.continued.get(child.id, []))
                else:
                    section.elements.append(child)
            stack.extend(reversed(pending))
        return sections

    def _add(self, kind: NodeKind, element: ParsingResult, parent: GraphNode, *, text: str,
             boxes: list[ParsingBoundingBox]) -> GraphNode:
        node = self.graph.add(GraphNode(
            id=node_id(self.key, kind, element.id), kind=kind, text=text, boxes=list(boxes), element_ids=[element.id],
        ), parent)
        self.order[node.id] = float(self.position[element.id])
        return node

    def _add_region(self, element: ParsingResult, caption: ParsingResult | None, parent: GraphNode,
                    continued: list[ParsingResult]) -> None:
        """A Table/Image node; a table continued on the next page(s) is one node over all parts."""
        kind = NodeKind.TABLE if element.type == T.TABLE else NodeKind.IMAGE
        body, strategies = "", set[str]()
        pieces: list[TextPiece] = []
        flags: list[str] = []
        boxes: list[ParsingBoundingBox] = []
        for part in (element, *continued):
            reading: RegionReading | None = self.assembly.readings.get(part.id)
            fast = part.content if kind == NodeKind.TABLE else ""
            text, how = fast, "fast"
            if reading is not None and reading.text.strip():
                text, how = _choose(fast, reading, flags)
            body = append_rows(body, text) if body and how == "fast" else "\n".join(t for t in (body, text) if t)
            strategies.add(how)
            boxes.extend(part.geom)
            if reading is not None:
                pieces.extend(reading.pieces)
                flags.extend(reading.flags)
        text = "\n\n".join(t for t in (caption.content if caption else "", body) if t.strip())
        node = self._add(kind, element, parent, text=text, boxes=boxes)
        node.info.strategy = strategies.pop() if len(strategies) == 1 else "mixed"
        node.pieces = pieces
        for reason in flags:
            node.flag(reason)
        if caption is not None:
            node.info.caption = caption.content
            node.element_ids.append(caption.id)
        for part in continued:
            node.element_ids.append(part.id)
            if part.id in self.captions:
                node.element_ids.append(self.captions[part.id].id)
        if not text.strip():
            node.flag(f"no text: the {kind.value} has no caption and no transcription/description")

    # -- text -------------------------------------------------------------------------------------
    def _add_text_nodes(self, section: _Section) -> None:
        if not section.elements:
            return
        mini = ParsingResult(id=f"{section.node.id}:root", type=T.ROOT, metadata=dict(self.root.metadata))
        for element in section.elements:
            mini.add_child(ParsingResult.from_dict(element.to_dict()))
        if not document_text(mini).text.strip():
            return
        for chunk in self.chunker.iter_chunks(mini, source_key=f"{self.key}:{section.node.id}"):
            elements = [str(e) for e in chunk.element_ids]
            node = self.graph.add(GraphNode(
                id=chunk.id, kind=NodeKind.TEXT, text=chunk.content, boxes=list(chunk.geom), element_ids=elements,
                metadata={"strategy": "fast", "token_count": int(chunk.token_count)},
            ), section.node)
            first = self.position.get(elements[0], 0) if elements else 0
            self.order[node.id] = first + int(chunk.start_char or 0) / 1e7


#: an LLM transcription replaces the text layer's table only when its verbatim lines hold at least
#: this share of the table's letters and digits; otherwise the table keeps its text and gains the
#: model's generated lines (a partial transcription never drops rows)
MIN_TRANSCRIBED = 0.9


def _choose(fast: str, reading: RegionReading, flags: list[str]) -> tuple[str, str]:
    """(text, strategy) of a region from its text-layer table and the LLM's reading."""
    have = len(alnum_text(strip_markup(fast)).text)
    verbatim = sum(len(alnum_text(strip_markup(p.text)).text) for p in reading.pieces if not p.generated)
    if not have or verbatim >= MIN_TRANSCRIBED * have:
        return reading.text, "llm"
    flags.append(f"llm: the transcription holds {verbatim / have:.0%} of the table's text; the text layer's table is kept")
    extra = [p.text for p in reading.pieces if p.generated]
    return "\n".join([fast, *extra]), "mixed"


def _captions(children: list[ParsingResult]) -> dict[str, ParsingResult]:
    """FIGURE/TABLE element id -> the CAPTION sibling next to it. A caption starting with "Table"
    goes to the nearer table, one starting with "Fig" to the nearer figure, any other to the
    previous (else the next) figure or table; each gets one caption at most."""
    out: dict[str, ParsingResult] = {}
    for i, child in enumerate(children):
        if child.type != T.CAPTION:
            continue
        near = [children[j] for j in (i - 1, i + 1) if 0 <= j < len(children) and children[j].type in _NON_TEXT]
        head = child.content.lstrip().lower()
        wanted = T.TABLE if head.startswith("table") else T.FIGURE if head.startswith("fig") else None
        fits = [n for n in near if (wanted is None or n.type == wanted) and n.id not in out]
        if fits:
            out[fits[0].id] = child
    return out


def _element_pages(element: ParsingResult) -> list[int]:
    return [b.page for b in element.geom]


def _page_numbers(root: ParsingResult) -> list[int]:
    pages = set(root.info.page_numbers())
    if not pages:
        pages = {b.page for n in root.walk() for b in n.geom}
    return sorted(pages)


def _page_texts(root: ParsingResult) -> dict[int, str]:
    """Each page's text in reading order (a table as its Markdown, on its first page)."""
    parts: dict[int, list[str]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        own = node.type == T.TABLE or node.type not in CONTAINER_TYPES
        if own and node.geom and node.content.strip():
            parts.setdefault(min(b.page for b in node.geom), []).append(node.content)
        if node.type != T.TABLE:
            stack.extend(reversed(node.children))
    return {p: "\n\n".join(v) for p, v in parts.items()}


def _title(root: ParsingResult) -> str:
    title = next((n.content for n in root.walk() if n.type == T.TITLE and n.content.strip()), "")
    if title:
        return title
    source = root.info.source
    return str(source.get("name", "")) if isinstance(source, Mapping) else ""


def _whole_page(page: int) -> ParsingBoundingBox:
    return ParsingBoundingBox(page, 0.0, 0.0, 1.0, 1.0)


