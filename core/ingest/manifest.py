"""``OUT/manifest.json``: the live state of an ingest output folder, the one file readers follow.

It names the configuration of the folder and, per indexed path, the one part file serving it::

    {"format": "grounded-ingest-manifest/1", "generation": 7,
     "config": {"fingerprint": "...", "settings": {"max_tokens": 256, "embed": "minilm", ...}},
     "documents": [{"path": ..., "sha256": ..., "part": "part-....parquet", "chunks": 12, ...}, ...],
     "errors": [{"path": ..., "sha256": ..., "error_type": ..., "message": ...}, ...],
     "lancedb": {"table": "chunks", "version": 9} | null}

The writer replaces it by an atomic rename, so a reader sees one generation or the next, never a
mix: each path names one part (one version of the document). ``lancedb.version`` is the version
of the LanceDB table that holds exactly the rows of ``documents`` (a reader checks it out).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OutputError
from ..io.atomic import file_kind

__all__ = ["MANIFEST", "FORMAT", "Manifest", "read_manifest"]

MANIFEST = "manifest.json"
FORMAT = "grounded-ingest-manifest/1"


@dataclass
class Manifest:
    """One generation of an output folder's live state (see the module docstring)."""

    generation: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    #: path -> the record of the done document serving it
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: path -> the error record of an input that failed (its current bytes)
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    lancedb: dict[str, Any] | None = None

    @property
    def fingerprint(self) -> str:
        return str(self.config.get("fingerprint") or "")

    def copy(self) -> Manifest:
        return Manifest(self.generation, dict(self.config), dict(self.documents), dict(self.errors),
                        None if self.lancedb is None else dict(self.lancedb))

    def to_bytes(self) -> bytes:
        data = {
            "format": FORMAT,
            "generation": self.generation,
            "config": self.config,
            "documents": [self.documents[p] for p in sorted(self.documents)],
            "errors": [self.errors[p] for p in sorted(self.errors)],
            "lancedb": self.lancedb,
        }
        return json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True).encode("utf-8")

    @classmethod
    def from_json(cls, data: Any, where: Path) -> Manifest:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise OutputError(where, f"not a grounded ingest manifest of format {FORMAT}")
        try:
            documents = {str(d["path"]): d for d in data["documents"]}
            errors = {str(e["path"]): e for e in data["errors"]}
            return cls(int(data["generation"]), dict(data["config"]), documents, errors, data.get("lancedb"))
        except (KeyError, TypeError, ValueError) as exc:
            raise OutputError(where, f"damaged manifest ({type(exc).__name__}: {exc})") from exc


def read_manifest(out: str | Path) -> Manifest | None:
    """The live manifest of the output folder ``out``; None when there is none (a new folder).
    A manifest that cannot be read raises :class:`~grounded.errors.OutputError` naming it, as does
    one that is not a regular file (a FIFO, a device, a folder, a symbolic link: the error ``grounded
    ingest`` gives), which is never read (a FIFO would block the reader forever)."""
    path = Path(out) / MANIFEST
    raw = _read_regular(path)
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise OutputError(path, f"damaged manifest ({exc})") from exc
    return Manifest.from_json(data, path)


def _refuse(path: Path, mode: int) -> OutputError:
    return OutputError(path, f"is {file_kind(mode) or 'not a regular file'}, not a regular file: refusing to read it "
                             "(grounded ingest writes its own manifest; remove it and re-run grounded ingest)")


def _read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file ``path`` (None: it does not exist), opened without blocking and
    without following a link, its type checked on the open descriptor (no race with a swap)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a symbolic link
            raise _refuse(path, stat.S_IFLNK) from exc
        raise OutputError(path, f"cannot read the manifest: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read()
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(path, f"cannot read the manifest: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
