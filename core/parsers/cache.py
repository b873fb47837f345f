"""The reader -> node-parser hand-over: parse trees on disk, referenced by a compact string.

A framework Document must not carry its parse tree (100+ KB): stores, caches and node
relationships would copy it into every chunk. Instead a reader stores the tree once in a
:class:`ParseCache` and puts only a reference into the Document's metadata
(:data:`TREE_REF_KEY`, e.g. ``grounded:v1:<pdf sha256>:<parser fingerprint>``, ~100 bytes); a
splitter calls :func:`resolve_tree` on the metadata to get the tree back:

1. from an in-process LRU of decoded trees (bounded by count): chunking many nodes of one document
   decodes its tree once;
2. from the cache directory (lossless JSON of :mod:`grounded.serialization`, written atomically -
   two processes putting the same tree at once both succeed and leave one intact file);
3. on a miss, by re-parsing ``metadata["file_path"]`` with the recorded parser - only when the
   file's sha256 still matches the reference; a changed or missing file gives ``None`` (the caller
   decides: warn and chunk as plain text, or refuse).

The tree of an encrypted PDF (``source["encrypted"]``) is never written to the directory - it holds
the decrypted text - only kept in process memory (another process, or this one after the LRU
dropped it, cannot re-parse it without the password: :func:`resolve_tree` gives ``None``); an
entry of one found on disk (written by an older version) is removed.

The reference is a content address (PDF bytes + parser name, version and options), so equal
references mean equal trees whichever directory holds them. Directory: ``ParseCache(directory)``,
else ``$GROUNDED_CACHE_DIR/parses``, else ``~/.cache/grounded/parses``. Trees returned by the
cache are shared between callers: treat them as read-only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GroundedError, SchemaError
from ..io.atomic import atomic_write_text
from ..io.codec import dumps_parsing_result, loads_parsing_result
from ..model.elements import ParsingResult
from .ocr.engine import check_mode

if TYPE_CHECKING:
    from . import BaseParser
from ..runtime.code_version import parser_code_version

__all__ = [
    "TREE_REF_KEY",
    "PARSER_OPTIONS_KEY",
    "ParseCache",
    "TreeRef",
    "parser_fingerprint",
    "tree_ref",
    "ref_for",
    "parse_ref",
    "resolve_tree",
    "file_sha256",
    "cached_parse",
    "with_ocr",
    "default_cache_dir",
    "clear_memory",
]

log = logging.getLogger(__name__)

#: Document metadata key holding the compact reference to the parse tree
TREE_REF_KEY = "grounded_tree_ref"
#: Document metadata key holding the parser's constructor options as compact JSON (only when set),
#: so a miss can re-parse exactly as the reader did
PARSER_OPTIONS_KEY = "grounded_parser_options"
_PREFIX = "grounded:v1:"
_REF = re.compile(r"^grounded:v1:(?P<sha>[0-9a-f]{64}):(?P<parser>[A-Za-z0-9_.+-]*):(?P<fp>[0-9a-f]{16})$")
#: decoded trees kept per process
MEMORY_SIZE = 8


class TreeRef:
    """A parsed reference: the source's sha256, the parser name and the parser fingerprint."""

    __slots__ = ("sha256", "parser", "fingerprint")

    def __init__(self, sha256: str, parser: str, fingerprint: str):
        self.sha256, self.parser, self.fingerprint = sha256, parser, fingerprint

    def __str__(self) -> str:
        return f"{_PREFIX}{self.sha256}:{self.parser}:{self.fingerprint}"

    def __repr__(self) -> str:
        return f"TreeRef({str(self)!r})"


def default_cache_dir() -> Path:
    base = os.environ.get("GROUNDED_CACHE_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "grounded") / "parses"


def parser_fingerprint(parser: str, version: str = "", options: Mapping[str, Any] | None = None) -> str:
    """16 hex digits naming a parser configuration (name, tool version, constructor options,
    grounded's parsing code)."""
    payload = json.dumps(
        {"parser": parser, "version": version, "options": dict(options or {}), "code": parser_code_version()},
        sort_keys=True, separators=(",", ":"), default=repr,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def ref_for(sha256: str, parser: str, version: str = "", options: Mapping[str, Any] | None = None) -> str:
    """The reference of a parse of the PDF with ``sha256`` by ``parser`` (name, tool version,
    options) - computable before parsing, to look the tree up first."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", parser)
    return str(TreeRef(sha256, name, parser_fingerprint(name, version, options)))


def _root_sha(root: ParsingResult) -> str:
    source = root.metadata.get("source")
    sha = str(source.get("sha256") or "") if isinstance(source, Mapping) else ""
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise SchemaError("the parse tree records no source sha256 (root.metadata['source']['sha256']); cannot reference it")
    return sha


def _encrypted(root: ParsingResult) -> bool:
    """Whether ``root`` is the parse of an encrypted PDF (its text must not reach the disk)."""
    source = root.metadata.get("source")
    return isinstance(source, Mapping) and bool(source.get("encrypted"))


def tree_ref(root: ParsingResult, options: Mapping[str, Any] | None = None) -> str:
    """The reference string of a parsed tree (its PDF's sha256 + parser fingerprint)."""
    meta = root.metadata
    return ref_for(_root_sha(root), str(meta.get("parser") or ""), str(meta.get("parser_version") or ""), options)


def parse_ref(ref: str) -> TreeRef:
    match = _REF.match(str(ref).strip())
    if not match:
        raise SchemaError(f"not a grounded tree reference: {str(ref)[:80]!r} (expected {_PREFIX}<sha256>:<parser>:<fingerprint>)")
    return TreeRef(match["sha"], match["parser"], match["fp"])


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- in-process LRU (shared by every ParseCache of the process: references are content addresses) --
_memory: OrderedDict[str, ParsingResult] = OrderedDict()
_lock = threading.Lock()


def _remember(ref: str, root: ParsingResult) -> None:
    with _lock:
        _memory[ref] = root
        _memory.move_to_end(ref)
        while len(_memory) > MEMORY_SIZE:
            _memory.popitem(last=False)


def _recall(ref: str) -> ParsingResult | None:
    with _lock:
        root = _memory.get(ref)
        if root is not None:
            _memory.move_to_end(ref)
        return root


def clear_memory() -> None:
    """Forget the decoded trees of this process (the disk cache is kept)."""
    with _lock:
        _memory.clear()


class ParseCache:
    """Parse trees on disk, one lossless JSON file per (PDF sha256, parser configuration)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()

    def __repr__(self) -> str:
        return f"ParseCache({str(self.directory)!r})"

    def path(self, ref: str | TreeRef) -> Path:
        r = ref if isinstance(ref, TreeRef) else parse_ref(ref)
        return self.directory / r.sha256[:2] / f"{r.sha256}-{r.parser or 'unknown'}-{r.fingerprint}.json"

    def put(self, root: ParsingResult, options: Mapping[str, Any] | None = None) -> str:
        """Store ``root`` (atomically; an existing entry is kept) and return its reference.
        ``options``: the parser's constructor options (part of the reference). The tree of an
        encrypted PDF is kept in process memory only, never written."""
        ref = tree_ref(root, options)
        path = self.path(ref)
        if _encrypted(root):
            path.unlink(missing_ok=True)  # written by an older version
        elif not path.is_file():
            atomic_write_text(path, dumps_parsing_result(root))
        _remember(ref, root)
        return ref

    def get(self, ref: str) -> ParsingResult | None:
        """The tree behind ``ref`` (memory, then disk), or ``None`` when neither holds it. A damaged
        file is logged and treated as a miss."""
        ref = str(parse_ref(ref))
        root = _recall(ref)
        if root is not None:
            return root
        path = self.path(ref)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            log.warning("parse cache entry %s is damaged (not UTF-8); removing it", path)
            path.unlink(missing_ok=True)
            return None
        try:
            root = loads_parsing_result(text, source=str(path))
        except SchemaError as exc:
            log.warning("parse cache entry is damaged, removing it: %s", exc)
            path.unlink(missing_ok=True)
            return None
        if _encrypted(root):
            log.warning("parse cache entry %s holds the text of an encrypted PDF; removing it", path)
            path.unlink(missing_ok=True)
            return None
        _remember(ref, root)
        return root

    def __contains__(self, ref: object) -> bool:
        return isinstance(ref, str) and (_recall(str(parse_ref(ref))) is not None or self.path(ref).is_file())

    def remove(self, ref: str) -> None:
        ref = str(parse_ref(ref))
        with _lock:
            _memory.pop(ref, None)
        self.path(ref).unlink(missing_ok=True)


def with_ocr(options: Mapping[str, Any] | None, ocr: str | None) -> dict[str, Any]:
    """A parser's constructor options with an adapter's ``ocr=`` added (unchanged when ``ocr`` is
    None); ``ValueError`` for an unknown mode or one that contradicts ``options["ocr"]``."""
    merged = dict(options or {})
    if ocr is None:
        return merged
    check_mode(ocr)
    if merged.get("ocr", ocr) != ocr:
        raise ValueError(f"ocr={ocr!r} contradicts parser_options['ocr']={merged['ocr']!r}")
    merged["ocr"] = ocr
    return merged


def cached_parse(
    parser: BaseParser,
    pdf: str | Path | bytes,
    *,
    cache: ParseCache | None,
    options: Mapping[str, Any] | None = None,
    password: str | None = None,
    name: str | None = None,
) -> ParsingResult:
    """The tree of ``pdf`` (a path or the PDF's bytes) by ``parser`` built with ``options``: the
    cached tree of these exact bytes and parser configuration when ``cache`` holds one, else
    ``parser.parse(pdf, password=..., name=...)`` (the caller stores it). A cached tree of an
    encrypted PDF is never returned: it is parsed again so the password is checked each time.
    The file is read once here (to hash it); an unreadable path is left to the parser's typed error."""
    if cache is not None:
        try:
            sha = hashlib.sha256(pdf).hexdigest() if isinstance(pdf, bytes) else file_sha256(pdf)
        except OSError:
            sha = ""
        root = cache.get(ref_for(sha, parser.name, parser.version(), options)) if sha else None
        if root is not None and not _encrypted(root):
            return root
    return parser.parse(pdf, password=password, name=name)


def _options_from(metadata: Mapping[str, Any]) -> dict[str, Any]:
    raw = metadata.get(PARSER_OPTIONS_KEY)
    if not raw:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(str(raw))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"metadata {PARSER_OPTIONS_KEY!r} is not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise SchemaError(f"metadata {PARSER_OPTIONS_KEY!r} must be a JSON object")
    return value


def resolve_tree(
    metadata: Mapping[str, Any], cache: ParseCache | None = None, *, reparse: bool = True
) -> ParsingResult | None:
    """The parse tree a Document's metadata refers to (:data:`TREE_REF_KEY`), or ``None``.

    Order: process memory, the cache directory, then - with ``reparse`` - the PDF at
    ``metadata["file_path"]`` parsed again with the recorded parser (and options) when its sha256
    is still the referenced one; the new parse is put into the cache. ``None`` when the metadata
    holds no reference, the file is gone or changed, or re-parsing fails (logged)."""
    raw = metadata.get(TREE_REF_KEY)
    if not raw:
        return None
    ref = parse_ref(str(raw))
    cache = cache if cache is not None else ParseCache()
    root = cache.get(str(ref))
    if root is not None or not reparse:
        return root
    path = metadata.get("file_path")
    if not path or not Path(str(path)).is_file():
        log.info("parse tree %s is not cached and its PDF (%r) is not readable here", ref, path)
        return None
    if file_sha256(str(path)) != ref.sha256:
        log.warning("%s changed since it was read (sha256 differs from %s); read it again", path, ref)
        return None
    from . import get_parser

    options = _options_from(metadata)
    try:
        root = get_parser(ref.parser or str(metadata.get("parser") or "pymupdf"), **options).parse(str(path))
    except (GroundedError, ImportError, ValueError) as exc:
        log.warning("re-parsing %s for its parse tree failed: %s", path, exc)
        return None
    got = tree_ref(root, options)
    cache.put(root, options)
    if got != str(ref):  # another parser version: still this PDF, but say so
        log.info("%s re-parsed as %s (the reference was %s)", path, got, ref)
        _remember(str(ref), root)
    return root
