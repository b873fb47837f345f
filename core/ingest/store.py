"""The files of an ingest output folder: part files, the per-document work log, the published state.

Layout of ``OUT``::

    OUT/manifest.json                                 the live state readers follow (:mod:`.manifest`)
    OUT/chunks/part-<sha12>-<path8>-<fp8>.parquet     one file per (content, path, configuration)
    OUT/_manifest/<sha256>-<path16>-<fp16>.json       the work log: one record per finished document
    OUT/documents.parquet, OUT/errors.parquet         tables of the live documents / failed inputs
    OUT/lancedb/                                      the LanceDB table (``--sink lancedb``)
    OUT/.lock                                         the writer lock (:mod:`.lock`)

No file or folder of this layout is written through a symbolic link (or into a device, a FIFO):
:meth:`OutFolder.check_kinds` refuses the run, before any work, when one is not what the layout
says (a regular file, a real folder), so a link planted in ``OUT`` can never make a run truncate
or replace its target (the lock file is opened with ``O_NOFOLLOW``, :mod:`.lock`).

Part files and records are keyed by the document's bytes (sha256), its path and the configuration:
a record never describes other bytes, another path or another configuration than its name says,
so it can be reused whenever that key comes back (resume after a kill). What is *served* is only
what ``manifest.json`` names; :meth:`OutFolder.publish` replaces it atomically, then
:meth:`OutFolder.collect_garbage` removes every part and record it no longer names (so after a
completed run ``OUT/chunks`` holds exactly the live parts).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from ..errors import OutputError
from ..io.atomic import atomic_write_bytes, atomic_write_files, file_kind
from .manifest import MANIFEST, Manifest
from .rows import _pa, documents_schema, errors_schema

__all__ = ["OutFolder", "path_key", "TABLES", "LANCEDB_DIR", "refuse_non_regular"]

log = logging.getLogger(__name__)


#: the tables rebuilt from the manifest at every publish
TABLES = ("documents.parquet", "errors.parquet")
#: the LanceDB folder (``--sink lancedb``)
LANCEDB_DIR = "lancedb"


def _kind(path: Path) -> int | None:
    """``lstat`` mode of ``path`` (None when it does not exist); OS errors as :class:`OutputError`."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputError(path, f"cannot inspect: {exc.strerror or exc}") from exc


def refuse_non_regular(path: Path, *, folder: bool = False) -> None:
    """Raise :class:`OutputError` when ``path`` exists and is not a regular file (``folder``: not
    a real folder) -- a symbolic link above all, which a write would follow to its target."""
    mode = _kind(path)
    if mode is None or (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
        return
    kind = file_kind(mode) or "a regular file"
    wanted = "a folder" if folder else "a regular file"
    raise OutputError(path, f"is {kind}, not {wanted}: refusing to write through it "
                            "(grounded ingest creates its own files in OUT; remove it)")


def path_key(path: str) -> str:
    """A file-name-safe hash of a document path."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()


class OutFolder:
    """One output folder, written under one configuration fingerprint ``fp``."""

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.root = root
        self.fp = fingerprint
        self.chunks = root / "chunks"
        self.records = root / "_manifest"
        for folder in (self.chunks, self.records, root / LANCEDB_DIR):
            refuse_non_regular(folder, folder=True)
        try:
            self.chunks.mkdir(parents=True, exist_ok=True)
            self.records.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(root, f"cannot create the output folder: {exc.strerror or exc}") from exc

    def check_kinds(self) -> None:
        """Refuse (:class:`OutputError`) a folder whose files are not what the layout says: a
        symbolic link (or device, FIFO, folder) at the manifest, a table, a part file or a record,
        a link at ``chunks``, ``_manifest``, ``lancedb`` or its table folder (the files inside the
        table are LanceDB's). Called under the lock, before any work."""
        from .lance_sink import TABLE

        for folder in (self.chunks, self.records, self.root / LANCEDB_DIR, self.root / LANCEDB_DIR / f"{TABLE}.lance"):
            refuse_non_regular(folder, folder=True)
        for name in (MANIFEST, *TABLES):
            refuse_non_regular(self.root / name)
        for folder, suffix in ((self.chunks, ".parquet"), (self.records, ".json")):
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                raise OutputError(folder, f"cannot list: {exc.strerror or exc}") from exc
            for entry in entries:
                if entry.name.endswith(suffix) and not entry.name.startswith(".") and not entry.is_file(follow_symlinks=False):
                    refuse_non_regular(Path(entry.path))

    # -- the work log ------------------------------------------------------------------------------
    def record_name(self, sha: str | None, path: str) -> str:
        return f"{sha or 'nosha'}-{path_key(path)[:16]}-{self.fp[:16]}.json"

    def part_name(self, sha: str, path: str) -> str:
        return f"part-{sha[:12]}-{path_key(path)[:8]}-{self.fp[:8]}.parquet"

    def read_record(self, sha: str, path: str) -> dict[str, Any] | None:
        """The record of (``sha``, ``path``) under this configuration; None when absent, or torn /
        damaged (a warning names the file: the document is then done again)."""
        file = self.records / self.record_name(sha, path)
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ingest: damaged manifest record %s ignored: %s", file, exc)
            return None
        if not isinstance(record, dict) or record.get("path") != path or record.get("sha256") != sha:
            log.warning("ingest: damaged manifest record %s ignored: not the record of %s", file, path)
            return None
        return record

    def write_record(self, record: dict[str, Any]) -> None:
        data = json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8")
        atomic_write_bytes(self.records / self.record_name(record.get("sha256"), str(record["path"])), data)

    def write_part(self, sha: str, path: str, table: Any) -> str:
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        name = self.part_name(sha, path)
        atomic_write_bytes(self.chunks / name, buffer.getvalue())
        return name

    def has_part(self, record: dict[str, Any]) -> bool:
        if not record.get("part"):
            return False
        mode = _kind(self.chunks / str(record["part"]))
        return mode is not None and stat.S_ISREG(mode)

    # -- the published state -----------------------------------------------------------------------
    def publish(self, manifest: Manifest) -> None:
        """Make ``manifest`` the live state (next generation): ``manifest.json`` by one atomic
        rename, then documents.parquet and errors.parquet rebuilt from it."""
        manifest.generation += 1
        atomic_write_bytes(self.root / MANIFEST, manifest.to_bytes())
        pa = _pa()
        import pyarrow.parquet as pq

        files = []
        for name, schema, records in (
            ("documents.parquet", documents_schema(), manifest.documents),
            ("errors.parquet", errors_schema(), manifest.errors),
        ):
            rows = [{k: records[p].get(k) for k in schema.names} for p in sorted(records)]
            buffer = io.BytesIO()
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), buffer)
            files.append((self.root / name, buffer.getvalue()))
        atomic_write_files(files)

    def collect_garbage(self, manifest: Manifest) -> int:
        """Remove the part files and records that ``manifest`` (the live state) does not name:
        superseded versions, other configurations, work of a killed run that was not published.
        Returns how many part files were removed."""
        parts = {str(d.get("part")) for d in manifest.documents.values()}
        keep = {self.record_name(r.get("sha256"), path) for path, r in [*manifest.documents.items(), *manifest.errors.items()]}
        removed = 0
        for part in self.chunks.glob("part-*.parquet"):
            if part.name not in parts:
                part.unlink(missing_ok=True)
                removed += 1
        for record in self.records.glob("*.json"):
            if record.name not in keep:
                record.unlink(missing_ok=True)
        if removed:
            log.info("ingest: %d part file(s) no longer served removed from %s", removed, self.chunks)
        return removed
