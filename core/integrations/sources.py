"""The adapter core: the PDF behind a framework Document or node, as both adapters see it.

A LlamaIndex node or LangChain Document reaches grounded from anywhere: grounded's own reader or
loader (its metadata holds a parse-tree reference, ``grounded_tree_ref``), or a framework's own
reader (``SimpleDirectoryReader``, ``PyMuPDFReader``, pymupdf4llm's ``LlamaMarkdownReader``,
LangChain's ``PyMuPDFLoader``/``PyPDFLoader``/``PyMuPDF4LLMLoader``: their metadata names the PDF
under ``file_path`` or ``source``), possibly split by any splitter since. :func:`source_view`
resolves either to a :class:`SourceView` - the parse tree (from the parse cache, else parsed once
and cached), its document text, the boxes of any character span, a :class:`~grounded.grounding.grounder.Grounder`
for text made elsewhere, and the tree of one page - or says, in words, why there is none.

Views are kept in one bounded in-process cache (:class:`~grounded.runtime.bounded.BoundedCache`),
so the Documents of one PDF share one tree, one token stream and one grounder.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import GroundedError, SchemaError
from ..grounding.grounder import Grounder
from ..io.tree_payload import TREE_KEY, decode_tree
from ..model.boxes import ParsingBoundingBox
from ..model.elements import ParsingResult
from ..parsers import get_parser
from ..parsers.cache import TREE_REF_KEY, ParseCache, cached_parse, resolve_tree
from ..runtime.bounded import BoundedCache
from ..text.assembly import ChunkAssembler
from ..text.ids import source_key
from ..text.stream import build_stream, document_text
from ..text.tokenizer import Tokenizer, load_tokenizer

__all__ = [
    "PAGE_KEY",
    "PDF_PATH_KEYS",
    "SourceView",
    "source_view",
    "document_view",
    "pdf_path_of",
    "names_pdf",
    "names_source",
    "page_tree",
    "locate",
    "clear_views",
    "near_of",
]

#: metadata key of grounded's per-page Documents (LlamaIndex reader, ``split_pages=True``): the
#: 1-based page the Document holds
PAGE_KEY = "grounded_page"
#: metadata keys under which readers name the PDF a Document came from, in the order they are
#: tried (LlamaIndex readers write ``file_path``; LangChain loaders ``source`` and ``file_path``;
#: ``PyMuPDFReader`` uses ``source`` for the page number, which names no file and is skipped)
PDF_PATH_KEYS = ("file_path", "source", "path", "file_name")
_CITATION = re.compile(r"^Source \d+:\n")
_VIEWS: BoundedCache[SourceView] = BoundedCache(16)


def _first_page(node: ParsingResult) -> int | None:
    holder: ParsingResult | None = node
    while holder is not None:
        if holder.geom:
            return min(b.page for b in holder.geom)
        holder = holder.parent
    return None


def page_tree(root: ParsingResult, page: int) -> ParsingResult:
    """The part of ``root`` on ``page``: every element whose first box lies on that page, nested as in
    the tree; elements of other pages are left out and their children on ``page`` move up to the
    nearest kept ancestor (a heading on the previous page does not repeat on this one). The result
    shares boxes with ``root`` (treat both as read-only)."""
    out = ParsingResult(root.id, root.type, root.content, list(root.geom), metadata=dict(root.metadata))
    stack: list[tuple[ParsingResult, ParsingResult]] = [(child, out) for child in reversed(root.children)]
    while stack:
        node, parent = stack.pop()
        target = parent
        if _first_page(node) == page:
            target = parent.add_child(
                ParsingResult(node.id, node.type, node.content, list(node.geom), metadata=dict(node.metadata), image=node.image)
            )
        stack.extend((child, target) for child in reversed(node.children))
    return out


def _normalized(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, and the original index of each char."""
    out: list[str] = []
    index: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not in_space and out:
                out.append(" ")
                index.append(i)
            in_space = True
        else:
            out.append(ch)
            index.append(i)
            in_space = False
    return "".join(out), index


def locate(part: str, text: str, lo: int = 0, hi: int | None = None) -> tuple[int, int] | None:
    """Char span ``[start, end)`` of ``part`` inside ``text[lo:hi]`` (exactly, else ignoring
    whitespace differences: splitters strip and re-join); the first occurrence, ``None`` if absent."""
    hi = len(text) if hi is None else hi
    lo = max(0, lo)
    core = part.strip()
    if not core:
        return None
    at = text.find(core, lo, hi)
    if at >= 0:
        return at, at + len(core)
    window, index = _normalized(text[lo:hi])
    wanted, _ = _normalized(core)
    at = window.find(wanted.strip())
    if at < 0:
        return None
    end = at + len(wanted.strip()) - 1
    return lo + index[at], lo + index[end] + 1


def _int(meta: Mapping[str, Any], key: str) -> int | None:
    value = meta.get(key)
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def _is_pdf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(1024)
    except OSError:
        return False
    return b"%PDF-" in head


def pdf_path_of(metadata: Mapping[str, Any]) -> tuple[Path | None, str]:
    """The PDF a Document's metadata names (see :data:`PDF_PATH_KEYS`; a relative path is taken from
    the working directory, as the reader that wrote it did): ``(path, "")``, or ``(None, cause)``
    when no key names a readable PDF file here."""
    named: list[str] = []
    for key in PDF_PATH_KEYS:
        value = metadata.get(key)
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            continue
        path = Path(os.fspath(value)).expanduser()
        if path.is_file():
            if _is_pdf(path):
                return path, ""
            named.append(f"{key}={str(value)!r} is not a PDF")
        else:
            named.append(f"{key}={str(value)!r} is not a file here")
    if not named:
        return None, "its metadata names no PDF (no file_path or source key)"
    return None, "its metadata names no readable PDF: " + "; ".join(named)


def names_pdf(metadata: Mapping[str, Any]) -> bool:
    """Whether the metadata refers to a PDF at all: a grounded tree reference, or a path-like value
    under one of :data:`PDF_PATH_KEYS` (whether or not that file is readable here)."""
    if metadata.get(TREE_REF_KEY) or metadata.get(TREE_KEY):
        return True
    for key in PDF_PATH_KEYS:
        value = metadata.get(key)
        if isinstance(value, (str, os.PathLike)) and str(value).lower().rstrip().endswith(".pdf"):
            return True
    return False


def names_source(metadata: Mapping[str, Any]) -> bool:
    """Whether the metadata names any source at all (a tree reference, or a value under one of
    :data:`PDF_PATH_KEYS`): text that names none is plain text, which has no boxes to give (and no
    warning to earn); one that names a source that cannot be used is worth a warning."""
    if metadata.get(TREE_REF_KEY) or metadata.get(TREE_KEY):
        return True
    return any(isinstance(metadata.get(k), (str, os.PathLike)) and str(metadata.get(k)).strip() for k in PDF_PATH_KEYS)


class SourceView:
    """One parse tree as the adapters use it: ``root``, its document ``text`` (what chunk offsets
    index), its source ``key`` (chunk ids), the boxes of a char span, a grounder, the tree of a page.
    Everything is built on first use and kept; treat the tree as read-only."""

    def __init__(self, root: ParsingResult) -> None:
        self.root = root
        self.doc = document_text(root)
        self.text = self.doc.text
        self.key = source_key(root.metadata, self.text)
        self._assemblers: dict[tuple[str, str], ChunkAssembler] = {}
        self._grounders: dict[tuple[Any, ...], Grounder] = {}
        self._pages: dict[int, SourceView] = {}

    def assembler(self, tokenizer: Tokenizer | None = None, box_mode: str = "auto") -> ChunkAssembler:
        """The assembler of this tree's token stream by ``tokenizer`` (default MiniLM): its token
        boundaries trim the boxes of a span, and line mode places tokens on lines."""
        # the default tokenizer is not loaded again to look the assembler up (tokenizer.json: 13 ms a load)
        key = ("default", box_mode) if tokenizer is None else (
            repr(tokenizer.describe()) if hasattr(tokenizer, "describe") else str(id(tokenizer)), box_mode)
        found = self._assemblers.get(key)
        if found is None:
            tok = tokenizer if tokenizer is not None else load_tokenizer(None)
            stream = build_stream(self.root, tok, self.doc)
            found = self._assemblers[key] = ChunkAssembler(stream, self.root, strategy="span", box_mode=box_mode)
        return found

    def boxes(self, start: int, end: int, *, tokenizer: Tokenizer | None = None, box_mode: str = "auto") -> list[ParsingBoundingBox]:
        """Boxes of the document text's characters ``[start, end)`` (as a chunk body there gets)."""
        return self.assembler(tokenizer, box_mode).boxes_for_chars(start, end)

    def grounder(
        self, *, box_mode: str = "auto", min_score: float | None = None, tokenizer: Any = None, password: str | None = None
    ) -> Grounder:
        """The :class:`~grounded.grounding.grounder.Grounder` of this tree (one per option set). ``password``: of an
        encrypted source PDF, so grounding reads its page furniture (without it: the tree only)."""
        key = (box_mode, min_score, tokenizer if tokenizer is None or isinstance(tokenizer, str) else id(tokenizer), password)
        found = self._grounders.get(key)
        if found is None:
            options: dict[str, Any] = {"box_mode": box_mode, "password": password, "tokenizer": tokenizer}
            if min_score is not None:
                options["min_score"] = min_score
            found = self._grounders[key] = Grounder(self.root, **options)
        return found

    def page(self, page: int) -> SourceView:
        """The view of :func:`page_tree` of ``page`` (kept): what grounded's per-page Documents
        (:data:`PAGE_KEY`) hold and index."""
        found = self._pages.get(page)
        if found is None:
            found = self._pages[page] = SourceView(page_tree(self.root, page))
        return found

    def span_of(self, text: str, meta: Mapping[str, Any], start_idx: int | None = None) -> tuple[int, int] | None:
        """Where ``text`` (a node's text, or a part of a chunk that copied the chunk's metadata) lies in
        the document text: inside the chunk's recorded body span when there is one, else at the node's
        ``start_char_idx``, else anywhere (first occurrence). Heading lines a chunk starts with (text
        mode of the hierarchical strategy) are skipped: they are not contiguous with the body. Exact
        up to whitespace: text that differs otherwise is for the grounder."""
        doc_text = self.text
        part = _CITATION.sub("", text, count=1)
        start, end = _int(meta, "start_char"), _int(meta, "end_char")
        windows: list[tuple[int, int]] = []
        if start is not None and end is not None and 0 <= start <= end <= len(doc_text):
            windows.append((start, end))
        if start_idx is not None and 0 <= start_idx < len(doc_text):
            windows.append((start_idx, min(len(doc_text), start_idx + len(part) + 64)))
        windows.append((0, len(doc_text)))
        candidates = [part]
        rest = part
        while "\n\n" in rest:  # a heading prefix ends with a blank line
            rest = rest.split("\n\n", 1)[1]
            candidates.append(rest)
        for lo, hi in windows:
            for candidate in candidates:
                if not candidate.strip():
                    continue
                found = locate(candidate, doc_text, lo, hi)
                if found is not None:
                    return found
        return None


def _view_of(key: tuple[str, ...], root: ParsingResult) -> SourceView:
    """The kept view of ``root`` (one per tree object), made on first use."""
    view = _VIEWS.get(key)
    if view is None or view.root is not root:
        view = _VIEWS.put(key, SourceView(root))
    return view


def source_view(
    metadata: Mapping[str, Any],
    *,
    tree: ParsingResult | None = None,
    cache: ParseCache | str | Path | None = None,
    password: str | None = None,
    parse: bool = True,
) -> tuple[SourceView | None, str]:
    """The :class:`SourceView` of the PDF a Document's ``metadata`` refers to, and ``""``; or
    ``(None, cause)``. In order: grounded's tree reference (process memory, the parse cache, or the
    unchanged PDF parsed again), a tree embedded by an older release, the given ``tree``, then - with
    ``parse`` - the PDF the metadata names (:func:`pdf_path_of`), parsed once with the default
    parser and kept in the parse cache (``cache``: a :class:`ParseCache` or its folder; default the
    user's parse cache; ``password``: of an encrypted PDF parsed here)."""
    store = cache if isinstance(cache, ParseCache) or cache is None else ParseCache(cache)
    if metadata.get(TREE_REF_KEY):
        # resolved every time (process memory, the cache, the unchanged PDF): a tree the caller's
        # cache cannot give (cleared memory, another cache folder, a changed PDF) is never served
        try:
            root = resolve_tree(metadata, store)
        except SchemaError as exc:
            return None, f"its parse tree cannot be read ({exc})"
        if root is None:
            return None, "its parse tree is not in the parse cache and the PDF is missing or changed"
        return _view_of(("ref", str(metadata[TREE_REF_KEY])), root), ""
    if tree is not None:
        return _view_of(("tree", str(id(tree))), tree), ""
    if metadata.get(TREE_KEY):
        try:
            root = decode_tree(metadata[TREE_KEY], source=str(metadata.get("file_path") or "<metadata>"))
        except SchemaError as exc:
            return None, f"its embedded parse tree cannot be read ({exc})"
        return SourceView(root), ""
    path, why = pdf_path_of(metadata)
    if path is None:
        return None, why
    if not parse:
        return None, f"{path} has not been parsed by grounded (parsing was turned off)"
    try:
        stat = path.stat()
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or exc})"
    file_key = ("file", str(path.resolve()), str(stat.st_size), str(stat.st_mtime_ns))
    view = _VIEWS.get(file_key)
    if view is not None:
        return view, ""
    store = store if store is not None else ParseCache()
    parser = get_parser("pymupdf")
    try:
        root = cached_parse(parser, str(path), cache=store, password=password)
        store.put(root)
    except GroundedError as exc:
        return None, f"{path} cannot be parsed ({exc})"
    return _VIEWS.put(file_key, SourceView(root)), ""


def document_view(
    metadata: Mapping[str, Any],
    *,
    tree: ParsingResult | None = None,
    cache: ParseCache | str | Path | None = None,
    password: str | None = None,
    parse: bool = True,
) -> tuple[SourceView | None, str]:
    """:func:`source_view`, restricted to the page of a grounded per-page Document (:data:`PAGE_KEY`):
    the view whose document text is the Document's own text."""
    view, why = source_view(metadata, tree=tree, cache=cache, password=password, parse=parse)
    page = metadata.get(PAGE_KEY)
    if view is None or page in (None, ""):
        return view, why
    try:
        return view.page(int(page)), ""
    except (TypeError, ValueError):
        return None, f"its {PAGE_KEY} {page!r} is not a page number"


def clear_views() -> None:
    """Forget every kept view (tests; a long-running process that re-read many PDFs)."""
    _VIEWS.clear()


def near_of(metadata: Mapping[str, Any], spans_key: str = "char_spans") -> int | None:
    """Where a Document's text begins in the document text, as its metadata records it (a page
    Document: its first char span; a chunk or element: ``start_char``), so its parts are searched
    there first."""
    spans: Any = metadata.get(spans_key)
    if isinstance(spans, str):
        try:
            spans = json.loads(spans)
        except json.JSONDecodeError:
            spans = None
    if isinstance(spans, Sequence) and spans and isinstance(spans[0], Sequence) and spans[0]:
        try:
            return int(spans[0][0])
        except (TypeError, ValueError):
            return None
    return _int(metadata, "start_char")
