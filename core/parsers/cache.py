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
3. on a miss, by re-parsing the Document's ``file_path`` with the recorded parser - only when the
   file's sha256 still matches the reference; a changed or missing file gives ``None`` (the caller
   decides: warn and chunk as plain text, or refuse).

The tree of an encrypted PDF (``source["encrypted"]``) is never written to the directory - it holds
the decrypted text - only kept in process memory (another process, or this one after the LRU
dropped it, cannot re-parse it without the password: :func:`resolve_tree` gives ``None``); an
entry of one found on disk (written by an older version) is removed.

The reference is a content address (PDF bytes + parser name, version and options), so equal
references mean equal trees whichever directory holds them. Directory: ``ParseCache(directory)``,
else ``$GROUNDED_CACHE_DIR/parses``, else the platform's user cache folder (``platformdirs``:
``~/.cache/grounded/parses`` on Linux, ``~/Library/Caches/grounded/parses`` on macOS,
``%LOCALAPPDATA%\\grounded\\Cache\\parses`` on Windows). Trees returned by the cache are shared
between callers: treat them as read-only.

An entry is never trusted blindly. Its first line records the reference, the source sha256 and
the sha256 of the tree text that follows; every load checks all three (and the tree's own
``source.sha256``) against the requested reference - a swapped, copied, linked or damaged entry is
a miss, removed, with a logged warning, never another document's tree. An entry that is not a
regular file (a directory, a FIFO, a symbolic link, a device) or is larger than the cache's size
bound is refused without being read. An entry that cannot be removed (a directory that is not empty:
an empty one is removed; a read-only cache; no permission) is bypassed, never overwritten, with one
warning per process naming the cause (its PDF is parsed on every run until it is removed).

**Parse once per PDF.** :func:`parse_once` is the cache's read-and-write path for one parse:
``grounded chunk``, ``grounded ground`` and every ``grounded ingest`` worker call it by default
(``--no-parse-cache``, ``ingest(parse_cache=False)`` turn it off), so a PDF parsed once with a parser
configuration is not parsed again: re-chunking with another ``-n`` or strategy loads the tree
(~0.1 s for 13 pages) instead of running the layout model. Its trees are decoded from the directory
for each caller (a private copy, never the process LRU) with the source path and name of the call
stamped in, so the output is the one of a fresh parse (only the recorded parse timings,
``elapsed_seconds`` / ``layout_seconds``, are those of the parse that made the entry). Concurrent
processes share a directory safely: an entry is written to a temporary file and renamed (readers
see a whole entry or none; two writers of one entry both succeed), and an entry that fails its
checks is removed, parsed again and rewritten, never served. A parse with a side effect beyond the
tree (``image_dir``: figure PNGs) and a PDF read from a file object are not cached.

Size bound: ``ParseCache(max_bytes=...)``, else ``$GROUNDED_CACHE_MAX_MB`` (megabytes), else
:data:`DEFAULT_MAX_MB` (2048 MB). After each write the least recently used entries (by the later
of access and modification time; a hit refreshes the modification time) are removed until the
directory holds at most that many bytes. A cache directory that cannot be written (no permission,
a file in its place) does not fail the caller: trees are then kept in process memory only, with
one warning per directory.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import stat
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GroundedError, SchemaError, escape_controls
from ..io.atomic import atomic_write_bytes, file_kind
from ..io.codec import dumps_parsing_result, loads_parsing_result
from ..model.elements import ParsingResult

if TYPE_CHECKING:
    from . import BaseParser
from ..runtime.bounded import BoundedCache
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
    "parse_once",
    "with_ocr",
    "default_cache_dir",
    "DEFAULT_MAX_MB",
    "clear_memory",
]

log = logging.getLogger(__name__)

#: Document metadata key holding the compact reference to the parse tree
TREE_REF_KEY = "grounded_tree_ref"
#: Document metadata key holding the parser's constructor options as compact JSON (only when set),
#: so a miss can re-parse exactly as the reader did
PARSER_OPTIONS_KEY = "grounded_parser_options"
#: Document metadata keys a miss re-parses from: the PDF's path and the parser's registered name
#: (written by the readers and loaders)
FILE_PATH_KEY, PARSER_KEY = "file_path", "parser"
_PREFIX = "grounded:v1:"
_REF = re.compile(r"^grounded:v1:(?P<sha>[0-9a-f]{64}):(?P<parser>[A-Za-z0-9_.+-]*):(?P<fp>[0-9a-f]{16})$")
#: decoded trees kept per process
MEMORY_SIZE = 8
#: default size bound of a cache directory in megabytes (``$GROUNDED_CACHE_MAX_MB`` overrides)
DEFAULT_MAX_MB = 2048
MAX_MB_ENV = "GROUNDED_CACHE_MAX_MB"
#: marks the first line of an entry (format version of the header)
_ENTRY_FORMAT = "grounded.parse_cache_entry/1"


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
    """``$GROUNDED_CACHE_DIR/parses``, else ``parses`` in the platform's user cache folder."""
    base = os.environ.get("GROUNDED_CACHE_DIR")
    if base:
        return Path(base).expanduser() / "parses"
    import platformdirs

    return Path(platformdirs.user_cache_dir("grounded", appauthor=False)) / "parses"


def _default_max_bytes() -> int:
    raw = os.environ.get(MAX_MB_ENV, "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            mb = -1.0
        if mb > 0:
            return int(mb * 1024 * 1024)
        log.warning("%s=%r is not a positive number of megabytes; using %d", MAX_MB_ENV, raw, DEFAULT_MAX_MB)
    return DEFAULT_MAX_MB * 1024 * 1024


def parser_fingerprint(parser: str, version: str = "", options: Mapping[str, Any] | None = None) -> str:
    """16 hex digits naming a parser configuration (name, tool version, constructor options without
    the secret ones such as API keys, grounded's parsing code)."""
    from . import public_options

    payload = json.dumps(
        {"parser": parser, "version": version, "options": public_options(parser, options or {}), "code": parser_code_version()},
        sort_keys=True, separators=(",", ":"), default=repr,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def ref_for(sha256: str, parser: str, version: str = "", options: Mapping[str, Any] | None = None) -> str:
    """The reference of a parse of the PDF with ``sha256`` by ``parser`` (name, tool version,
    options) - computable before parsing, to look the tree up first."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", parser)
    return str(TreeRef(sha256, name, parser_fingerprint(name, version, options)))


def _root_sha(root: ParsingResult) -> str:
    source = root.info.source
    sha = str(source.get("sha256") or "") if isinstance(source, Mapping) else ""
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise SchemaError("the parse tree records no source sha256 (root.metadata['source']['sha256']); cannot reference it")
    return sha


def _encrypted(root: ParsingResult) -> bool:
    """Whether ``root`` is the parse of an encrypted PDF (its text must not reach the disk)."""
    source = root.info.source
    return isinstance(source, Mapping) and bool(source.get("encrypted"))


def tree_ref(root: ParsingResult, options: Mapping[str, Any] | None = None) -> str:
    """The reference string of a parsed tree (its PDF's sha256 + parser fingerprint)."""
    info = root.info
    return ref_for(_root_sha(root), str(info.parser or ""), str(info.parser_version or ""), options)


def parse_ref(ref: str) -> TreeRef:
    match = _REF.match(str(ref).strip())
    if not match:
        raise SchemaError(f"not a grounded tree reference: {str(ref)[:80]!r} (expected {_PREFIX}<sha256>:<parser>:<fingerprint>)")
    return TreeRef(match["sha"], match["parser"], match["fp"])


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- in-process LRU (shared by every ParseCache of the process: references are content addresses) --
_memory: BoundedCache[ParsingResult] = BoundedCache(MEMORY_SIZE)


def _remember(ref: str, root: ParsingResult) -> None:
    _memory.put(ref, root)


def _recall(ref: str) -> ParsingResult | None:
    return _memory.get(ref)


def clear_memory() -> None:
    """Forget the decoded trees of this process (the disk cache is kept)."""
    _memory.clear()


#: cache directories already reported as unusable (one warning each per process)
_unusable_dirs: set[str] = set()
#: entries already reported as impossible to remove (one warning each per process)
_blocked_entries: set[str] = set()


class ParseCache:
    """Parse trees on disk, one checked JSON file per (PDF sha256, parser configuration), the
    directory bounded to ``max_bytes`` (least recently used entries evicted; see the module
    docstring)."""

    def __init__(self, directory: str | Path | None = None, *, max_bytes: int | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_cache_dir()
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.max_bytes = max_bytes if max_bytes is not None else _default_max_bytes()

    def __repr__(self) -> str:
        return f"ParseCache({str(self.directory)!r})"

    def path(self, ref: str | TreeRef) -> Path:
        r = ref if isinstance(ref, TreeRef) else parse_ref(ref)
        return self.directory / r.sha256[:2] / f"{r.sha256}-{r.parser or 'unknown'}-{r.fingerprint}.json"

    def put(self, root: ParsingResult, options: Mapping[str, Any] | None = None, *, remember: bool = True) -> str:
        """Store ``root`` (atomically; a valid existing entry is kept) and return its reference.
        ``options``: the parser's constructor options (part of the reference). The tree of an
        encrypted PDF is kept in process memory only, never written. A directory that cannot be
        written keeps the tree in memory only (one warning per directory), never fails the call.
        ``remember=False``: the directory only, not this process's LRU of decoded trees (a caller
        that keeps using ``root`` and may change it, :func:`parse_once`)."""
        ref = tree_ref(root, options)
        path = self.path(ref)
        if remember:
            _remember(ref, root)
        try:
            if _encrypted(root):
                path.unlink(missing_ok=True)  # written by an older version
            elif (self._lstat(path) is None or not self._valid(ref, path)) and self._discard(path, None):
                atomic_write_bytes(path, _entry_bytes(ref, root))
                self._evict(keep=path)
        except OSError as exc:
            self._unusable(exc)
        return ref

    def _unusable(self, exc: OSError) -> None:
        key = os.path.abspath(self.directory)
        if key in _unusable_dirs:
            return
        _unusable_dirs.add(key)
        warnings.warn(
            f"parse cache {escape_controls(str(self.directory))} is not usable ({getattr(exc, 'cause', None) or exc.strerror or exc}); "
            "parse trees are kept in this process's memory only",
            RuntimeWarning, stacklevel=3,
        )

    @staticmethod
    def _lstat(path: Path) -> os.stat_result | None:
        try:
            return os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _discard(self, path: Path, reason: str | None) -> bool:
        """Remove an entry that must not be served (``reason``: why, logged); a directory only when
        empty (never removed recursively). Returns whether the path is free now. An entry that
        cannot be removed (a non-empty directory, a read-only file system, no permission) is
        bypassed -- a miss, and no new entry is written in its place -- and said once per process
        with the true cause."""
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return True
        except OSError as exc:
            cause = exc.strerror or str(exc)
        else:
            try:
                if stat.S_ISDIR(st.st_mode):
                    os.rmdir(path)  # only an empty one
                else:
                    path.unlink()
            except FileNotFoundError:
                return True
            except OSError as exc:
                cause = ("it is a directory that is not empty, which is never removed" if exc.errno == errno.ENOTEMPTY
                         else exc.strerror or str(exc))
            else:
                if reason is not None:
                    log.warning("parse cache entry %s %s; removed it (a miss: parsed again)", escape_controls(str(path)),
                                reason)
                return True
        key = os.path.abspath(path)
        if key not in _blocked_entries:
            _blocked_entries.add(key)
            log.warning(
                "parse cache entry %s %s and cannot be removed (%s): it is bypassed, so this PDF is parsed again on "
                "every run until the entry is removed", escape_controls(str(path)), reason or "is in the way", cause,
            )
        return False

    def _read(self, path: Path) -> bytes | None:
        """The bytes of a regular-file entry within the size bound, else None (refused entries are
        removed and logged without being read)."""
        try:
            st = self._lstat(path)
        except OSError as exc:
            log.warning("cannot read parse cache entry %s: %s", escape_controls(str(path)), exc.strerror or exc)
            return None
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            self._discard(path, f"is {file_kind(st.st_mode)}, not a regular file")
            return None
        if st.st_size > self.max_bytes:
            self._discard(path, f"is larger than the cache bound ({st.st_size} > {self.max_bytes} bytes)")
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:  # replaced by a link between lstat and open (ELOOP), no permission
            log.warning("cannot read parse cache entry %s: %s", escape_controls(str(path)), exc.strerror or exc)
            return None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                self._discard(path, "is not a regular file")
                return None
            data = fh.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            self._discard(path, "is larger than the cache bound")
            return None
        return data

    def _valid(self, ref: str, path: Path) -> bool:
        """Whether the entry at ``path`` is a checked entry of ``ref`` (without decoding the tree)."""
        data = self._read(path)
        return data is not None and not isinstance(_check_entry(ref, data), str)

    def get(self, ref: str) -> ParsingResult | None:
        """The tree behind ``ref`` (memory, then disk), or ``None`` when neither holds it. An entry
        that fails a check (another document's, damaged, not a regular file) is logged, removed
        and treated as a miss."""
        ref = str(parse_ref(ref))
        root = _recall(ref)
        if root is not None:
            return root
        root = self.load(ref)
        if root is not None:
            _remember(ref, root)
        return root

    def refs_of(self, sha256: str, parser: str | None = None) -> list[str]:
        """The references of the entries this directory holds for the PDF with ``sha256`` (of any
        parser configuration, or of ``parser`` only), newest first: what a reader that knows the
        PDF but not the parser options its tree was made with (a search hit) can try."""
        if not _SHA256.match(sha256):
            return []
        found: list[tuple[float, str]] = []
        try:
            entries = list(os.scandir(self.directory / sha256[:2]))
        except OSError:
            return []
        for entry in entries:
            name = entry.name
            if not (name.startswith(sha256 + "-") and name.endswith(".json")):
                continue
            rest = name[len(sha256) + 1 : -len(".json")]
            name_parser, _, fingerprint = rest.rpartition("-")
            if parser is not None and name_parser != parser:
                continue
            ref = f"{_PREFIX}{sha256}:{name_parser}:{fingerprint}"
            if not _REF.match(ref):
                continue
            try:
                found.append((entry.stat(follow_symlinks=False).st_mtime, ref))
            except OSError:
                continue
        return [ref for _, ref in sorted(found, reverse=True)]

    def load(self, ref: str) -> ParsingResult | None:
        """The tree behind ``ref`` decoded from the directory for this caller alone (a new object on
        every call; the process LRU is neither read nor filled), or ``None``. Checked and
        discarded like :meth:`get`."""
        ref = str(parse_ref(ref))
        path = self.path(ref)
        data = self._read(path)
        if data is None:
            return None
        checked = _check_entry(ref, data)
        if isinstance(checked, str):
            self._discard(path, checked)
            return None
        try:
            root = loads_parsing_result(bytes(checked), source=str(path))
        except SchemaError as exc:
            self._discard(path, f"does not hold a readable parse tree ({exc})")
            return None
        if _root_sha_or_none(root) != parse_ref(ref).sha256:
            self._discard(path, "holds the tree of another document (its source sha256 differs)")
            return None
        if _encrypted(root):
            self._discard(path, "holds the text of an encrypted PDF")
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used = oldest time: a hit makes it recent
        return root

    def _evict(self, keep: Path) -> None:
        """Remove the least recently used entries until the directory holds at most ``max_bytes``
        (never ``keep``, the entry just written)."""
        entries: list[tuple[float, int, str]] = []
        try:
            shards = [e for e in os.scandir(self.directory) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for shard in shards:
            try:
                files = list(os.scandir(shard.path))
            except OSError:
                continue
            for entry in files:
                if not entry.name.endswith(".json") or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries.append((max(st.st_atime, st.st_mtime), st.st_size, entry.path))
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes:
            return
        keep_path = str(keep)
        for _, size, name in sorted(entries):
            if total <= self.max_bytes:
                break
            if name == keep_path:
                continue
            try:
                os.unlink(name)
            except OSError:
                continue
            total -= size
            log.info("parse cache: evicted %s (the cache holds more than %d bytes)", name, self.max_bytes)

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, str):
            return False
        if _recall(str(parse_ref(ref))) is not None:
            return True
        st = self._lstat(self.path(ref))
        return st is not None and stat.S_ISREG(st.st_mode)

    def remove(self, ref: str) -> None:
        ref = str(parse_ref(ref))
        _memory.discard(ref)
        self._discard(self.path(ref), None)


def _root_sha_or_none(root: ParsingResult) -> str | None:
    try:
        return _root_sha(root)
    except SchemaError:
        return None


def _entry_bytes(ref: str, root: ParsingResult) -> bytes:
    """An entry: a one-line header (format, reference, source sha256, sha256 of the body), then the
    tree's lossless JSON."""
    body = dumps_parsing_result(root).encode("utf-8")
    header = {
        "format": _ENTRY_FORMAT,
        "ref": ref,
        "source_sha256": parse_ref(ref).sha256,
        "content_sha256": hashlib.sha256(body).hexdigest(),
        "bytes": len(body),
    }
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("ascii") + b"\n" + body


def _check_entry(ref: str, data: bytes) -> memoryview | str:
    """The body of a valid entry of ``ref``, else the reason it is not one (a string)."""
    newline = data.find(b"\n", 0, 4096)
    if newline < 0:
        return "has no entry header (written by an older version, or damaged)"
    try:
        header = json.loads(data[:newline])
    except (ValueError, RecursionError):
        return "has a damaged header"
    if not isinstance(header, dict) or header.get("format") != _ENTRY_FORMAT:
        return "has no entry header (written by an older version, or damaged)"
    if header.get("ref") != ref or header.get("source_sha256") != parse_ref(ref).sha256:
        return "belongs to another document or parser configuration (its recorded reference differs)"
    body = memoryview(data)[newline + 1:]
    if header.get("bytes") != len(body) or header.get("content_sha256") != hashlib.sha256(body).hexdigest():
        return "is damaged (its content hash does not match)"
    return body


def with_ocr(options: Mapping[str, Any] | None, ocr: str | None) -> dict[str, Any]:
    """A parser's constructor options with an adapter's ``ocr=`` added (unchanged when ``ocr`` is
    None); ``ValueError`` for one that contradicts ``options["ocr"]`` (the mode itself is checked by
    the parser's declared options when the parser is built)."""
    merged = dict(options or {})
    if ocr is None:
        return merged
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


#: parser options whose parse has an effect beyond the tree (files written): such a parse is never cached
UNCACHED_OPTIONS = ("image_dir",)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def parse_once(
    parser: BaseParser,
    pdf: str | os.PathLike[str] | bytes,
    *,
    cache: ParseCache | None,
    options: Mapping[str, Any] | None = None,
    password: str | None = None,
    name: str | None = None,
    sha256: str | None = None,
) -> tuple[ParsingResult, bool]:
    """``(tree, from_cache)``: the tree of ``pdf`` (a path or the PDF's bytes) by ``parser`` built
    with ``options`` (its user-given constructor options; runtime ones such as ``workers`` or
    ``layout_threads`` do not change a tree and are left out), read from ``cache`` when it holds
    these bytes under this parser configuration and grounded's parsing code, else parsed and
    written to it. ``cache=None`` parses without the cache.

    The tree is the caller's own (decoded for this call, never shared), its source path and name
    those of this call, as a fresh parse records them. ``sha256``: the PDF's hash when the caller
    has it (ingest does), else the file is hashed here. Not cached: an encrypted PDF (its password
    is checked by every parse, its text never written), a parse with an option in
    :data:`UNCACHED_OPTIONS`, a file object, and a path that cannot be read (the parser raises its
    typed error)."""
    opts = dict(options or {})
    usable = (
        cache is not None
        and isinstance(pdf, (str, os.PathLike, bytes))
        and not any(opts.get(k) is not None or getattr(parser, k, None) is not None for k in UNCACHED_OPTIONS)
    )
    if not usable:
        return parser.parse(pdf, password=password, name=name), False
    assert cache is not None
    sha = sha256 if sha256 and _SHA256.match(sha256) else None
    if sha is None:
        try:
            sha = hashlib.sha256(pdf).hexdigest() if isinstance(pdf, bytes) else file_sha256(pdf)
        except OSError:
            return parser.parse(pdf, password=password, name=name), False
    ref = ref_for(sha, parser.name, parser.version(), opts)
    root = cache.load(ref)
    if root is not None and not _encrypted(root):
        _stamp_source(root, pdf, name)
        return root, True
    root = parser.parse(pdf, password=password, name=name)
    try:
        cache.put(root, opts, remember=False)
    except SchemaError as exc:  # a tree without a source sha256 (a foreign parser): not cacheable
        log.info("parse of %s not cached: %s", escape_controls(str(name or pdf)[:200]), exc)
    return root, False


def _stamp_source(root: ParsingResult, pdf: str | os.PathLike[str] | bytes, name: str | None) -> None:
    """Record this call's source path and name in a cached tree, as
    :meth:`grounded.parsers.source.PreparedSource.stamp` does for a fresh parse (the entry may have
    been written for the same bytes under another path or name)."""
    from .source import BYTES_NAME

    source = dict(root.info.source or {})
    source.pop("from_bytes", None)
    if isinstance(pdf, bytes):
        source.update({"path": name or BYTES_NAME, "name": Path(name).name if name else BYTES_NAME, "from_bytes": True})
    else:
        source.update({"path": str(Path(pdf)), "name": Path(pdf).name})
    root.info.source = source


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
    the Document's ``file_path`` parsed again with the recorded parser (and options) when its sha256
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
    path = metadata.get(FILE_PATH_KEY)
    if not path or not Path(str(path)).is_file():
        log.info("parse tree %s is not cached and its PDF (%r) is not readable here", ref, escape_controls(str(path)))
        return None
    if file_sha256(str(path)) != ref.sha256:
        log.warning("%s changed since it was read (sha256 differs from %s); read it again", escape_controls(str(path)), ref)
        return None
    from . import get_parser

    options = _options_from(metadata)
    try:
        root = get_parser(ref.parser or str(metadata.get(PARSER_KEY) or "pymupdf"), **options).parse(str(path))
    except (GroundedError, ImportError, ValueError) as exc:
        log.warning("re-parsing %s for its parse tree failed: %s", escape_controls(str(path)), exc)
        return None
    got = tree_ref(root, options)
    cache.put(root, options)
    if got != str(ref):  # another parser version: still this PDF, but say so
        log.info("%s re-parsed as %s (the reference was %s)", escape_controls(str(path)), got, ref)
        _remember(str(ref), root)
    return root
