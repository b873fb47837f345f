"""``ingest``: a folder / glob / list of PDFs -> Parquet chunk rows, resumable and failure-isolated.

Layout of ``OUT``::

    OUT/chunks/part-<sha12>-<fp8>.parquet   one file per document (all its chunks, or none)
    OUT/_manifest/<sha256>-<fp16>.json      one small record per finished document (done or error)
    OUT/documents.parquet                   one row per done document (rebuilt from the manifest)
    OUT/errors.parquet                      one row per failed input (rebuilt from the manifest)

Per document: sha256 (by the parent) -> skipped when its manifest record for this configuration
exists -> parse, chunk, embed in a worker process -> the parent writes the part file atomically
(temp file + rename), then the manifest record. A run killed at any moment therefore leaves
only whole part files, and a re-run redoes exactly the documents without a record (a part
without a record is rewritten with the same bytes). ``documents.parquet`` and ``errors.parquet``
are rewritten atomically from the records at the end of every run, in one pass over the
manifest (:meth:`_Out.finish`); a torn or damaged record is ignored with a warning naming its
file (an input whose record is damaged is done again, which rewrites the record).

Inputs that fail (corrupt, encrypted, image-only, not a PDF, unreadable) get an error record
with their typed error and never stop the run; a re-run does not retry them (pass
``retry_errors=True``), except a worker crash (``WorkerCrashError``), which is always retried.

Re-indexing (a guideline replaced by a new version, or a changed configuration or grounded
version): at the end of a run, the part files and records of an input of this run that are not
its current bytes under the current configuration are removed (part first, then record), so
``OUT`` never serves rows of a superseded version next to the new ones. Records of files that are
not inputs of this run are kept (a folder can be ingested in several runs).

Fewer documents than workers (one long guideline, ``--workers 2``): the local engine takes the
documents one after the other and spreads each over all workers by pages
(:mod:`grounded.ingest.split`), with the same rows as one worker per document.

Determinism: a document's rows depend only on its bytes and the configuration (chunk ids are
:func:`grounded.text.ids.chunk_id` of its sha256, parser and chunker fingerprint), never on
the worker count or the order in which documents finish.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import logging
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Literal

from ..errors import GroundedError, InputError, InputNotFoundError, OutputError
from ..io.atomic import atomic_write_bytes
from ..llm.spec import ModelSpec
from ..parsers.cache import file_sha256
from ..runtime.code_version import chunking_code_version, parser_code_version
from ..runtime.processes import ParentInfo
from ..runtime.version import __version__
from ..text.ids import stable_hash
from .progress import Progress, page_count
from .rows import _pa, documents_schema, errors_schema
from .worker import (
    EMBED_DIMS,
    DocResult,
    JobConfig,
    build_chunker,
    init_worker,
    process_document,
    setup_status,
)

__all__ = ["ingest", "IngestReport", "IngestError", "expand_inputs", "config_fingerprint"]

log = logging.getLogger(__name__)

_GLOB_CHARS = set("*?[")
#: error type of a document whose worker process died (killed, out of memory, crash in native code)
CRASH = "WorkerCrashError"


class IngestError(GroundedError):
    """The job cannot run at all (no input, a worker that cannot be set up, ...)."""


@dataclass
class IngestReport:
    """What one :func:`ingest` run did. ``done``/``skipped``/``failed`` count input files:
    ``skipped`` were already done (or failed) under this configuration in ``out``, or repeat the
    bytes of another input; ``failed`` includes inputs whose earlier failure was kept."""

    out: Path
    files: int = 0
    done: int = 0
    skipped: int = 0
    failed: int = 0
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    #: seconds per stage over all documents: parse (of it: layout), chunk, embed, rows, write
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors: list[tuple[str, str, str]] = field(default_factory=list)  # (path, error type, message)
    #: documents whose rows were removed because an input of this run superseded them
    retired: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def summary(self) -> str:
        return (
            f"{self.done} done, {self.skipped} skipped, {self.failed} failed "
            f"({self.pages} pages, {self.chunks} chunks in {self.seconds:.1f} s)"
            + (f", {self.retired} superseded removed" if self.retired else "")
            + f" -> {self.out}"
        )


# -- inputs -----------------------------------------------------------------------------------------
def _is_pdf_name(path: Path) -> bool:
    return path.suffix.lower() == ".pdf"


def _expand_one(item: str | os.PathLike[str]) -> Iterator[Path]:
    text = os.fspath(item)
    path = Path(text).expanduser()
    if path.is_dir():
        yield from (p for p in path.rglob("*") if _is_pdf_name(p) and p.is_file())
    elif path.is_file():
        if _is_pdf_name(path):
            yield path
        else:  # a list file: one path per line (relative to the list's folder), '#' comments
            for line in path.read_text(encoding="utf-8").splitlines():
                entry = line.strip()
                if entry and not entry.startswith("#"):
                    listed = Path(entry).expanduser()
                    yield listed if listed.is_absolute() else path.parent / listed
    elif _GLOB_CHARS & set(text):
        matches = [Path(m) for m in glob.glob(os.path.expanduser(text), recursive=True)]
        if not matches:
            raise InputNotFoundError(text, "the pattern matches no file")
        for m in matches:
            if m.is_dir():
                yield from _expand_one(m)
            elif m.is_file():
                yield m
    else:
        raise InputNotFoundError(text, "no such file, folder or pattern")


def expand_inputs(inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Absolute paths of the PDFs named by ``inputs`` (a folder: its ``*.pdf`` recursively; a
    glob; a PDF; a list file with one path per line; or a sequence of those), sorted, without
    repeats. Files listed in a list file are returned even when they do not exist (they become
    error rows); a folder, glob or list file that does not exist raises
    :class:`~grounded.errors.InputNotFoundError`."""
    items: Iterable[str | os.PathLike[str]] = [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs
    found = {Path(os.path.abspath(p)) for item in items for p in _expand_one(item)}
    return sorted(found)


# -- configuration ---------------------------------------------------------------------------------
def _dist_version(name: str) -> str | None:
    try:
        return importlib_metadata.version(name)
    except importlib_metadata.PackageNotFoundError:
        return None


def config_fingerprint(config: JobConfig, chunker_fingerprint: str) -> str:
    """Hash of everything that decides a document's rows: grounded's version, parsing and chunking
    code (so an output folder is never resumed under changed code), the parser and the versions of the
    libraries it runs, the chunker's fingerprint and the embedding model."""

    parser_libs = {"pymupdf": ("pymupdf", "pymupdf4llm", "pymupdf-layout")}.get(config.parser, ())
    return stable_hash(
        {
            "grounded": __version__,
            "parser_code": parser_code_version(),
            "chunking_code": chunking_code_version(),
            "parser": config.parser,
            "parser_libs": {name: _dist_version(name) for name in parser_libs},
            "chunker": chunker_fingerprint,
            "embed": config.embed,
        }
    )


# -- output -----------------------------------------------------------------------------------------
class _Out:
    def __init__(self, root: Path, fingerprint: str) -> None:
        self.root = root
        self.fp = fingerprint
        self.chunks = root / "chunks"
        self.manifest = root / "_manifest"
        try:
            self.chunks.mkdir(parents=True, exist_ok=True)
            self.manifest.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(root, f"cannot create the output folder: {exc.strerror or exc}") from exc

    def record_path(self, sha: str | None, path: str) -> Path:
        key = sha if sha is not None else "nosha-" + hashlib.sha256(path.encode()).hexdigest()
        return self.manifest / f"{key}-{self.fp[:16]}.json"

    def part_name(self, sha: str) -> str:
        return f"part-{sha[:12]}-{self.fp[:8]}.parquet"

    def _load(self, path: Path) -> dict[str, Any] | None:
        """The record in ``path``; None when it is absent, or torn / damaged (a warning names the
        file and the cause: the record is then ignored)."""
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ingest: damaged manifest record %s ignored: %s", path, exc)
            return None
        if not isinstance(record, dict):
            log.warning("ingest: damaged manifest record %s ignored: not a JSON object", path)
            return None
        return record

    def read_record(self, sha: str) -> dict[str, Any] | None:
        """This configuration's record of ``sha``, or None (absent or damaged: done again)."""
        return self._load(self.record_path(sha, ""))

    def write_record(self, record: dict[str, Any]) -> None:
        data = json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8")
        atomic_write_bytes(self.record_path(record.get("sha256"), str(record.get("path"))), data)

    def write_part(self, sha: str, table: Any) -> str:
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        name = self.part_name(sha)
        atomic_write_bytes(self.chunks / name, buffer.getvalue())
        return name

    def _superseded(self, record: dict[str, Any], current: dict[str, str], shas: set[str]) -> bool:
        """Whether ``record`` belongs to an input of this run (``current``: path -> sha256) but is
        not the current bytes of an input under this configuration."""
        sha = record.get("sha256")
        related = record.get("path") in current or sha in shas
        return related and not (sha in shas and record.get("config_fingerprint") == self.fp)

    def _retire(self, path: Path, record: dict[str, Any]) -> None:
        """Remove a superseded document: its part file first, then its record."""
        if record.get("part"):
            (self.chunks / str(record["part"])).unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        log.info("ingest: rows of %s (sha256 %s, config %s) superseded and removed",
                 record.get("path"), str(record.get("sha256"))[:12], str(record.get("config_fingerprint"))[:8])

    def finish(self, current: dict[str, str] | None) -> tuple[int, list[Path]]:
        """The end of a run, in one read of the manifest: remove the superseded documents of
        ``current`` (path -> sha256 of this run's inputs; None: remove nothing), rewrite
        documents.parquet and errors.parquet from the remaining records (in batches), and return
        (how many were removed, the part files of the done documents in manifest order)."""
        pa = _pa()
        import pyarrow.parquet as pq

        shas = set(current.values()) if current is not None else set()
        targets = {"done": ("documents.parquet", documents_schema()), "error": ("errors.parquet", errors_schema())}
        buffers = {status: io.BytesIO() for status in targets}
        batches: dict[str, list[dict[str, Any]]] = {status: [] for status in targets}
        retired = 0
        done_parts: list[Path] = []
        with contextlib.ExitStack() as stack:
            writers = {
                status: stack.enter_context(pq.ParquetWriter(buffers[status], schema))
                for status, (_, schema) in targets.items()
            }
            for path in sorted(self.manifest.glob("*.json")):
                record = self._load(path)
                if record is None:
                    continue
                if current is not None and self._superseded(record, current, shas):
                    self._retire(path, record)
                    retired += 1
                    continue
                status = record.get("status")
                if status not in targets:
                    continue
                schema = targets[status][1]
                batches[status].append({k: record.get(k) for k in schema.names})
                if len(batches[status]) >= 1000:
                    writers[status].write_table(pa.Table.from_pylist(batches[status], schema=schema))
                    batches[status] = []
                part = self.chunks / str(record.get("part") or "")
                if status == "done" and record.get("part") and part.is_file():
                    done_parts.append(part)
            for status, (_, schema) in targets.items():
                writers[status].write_table(pa.Table.from_pylist(batches[status], schema=schema))
        for status, (name, _) in targets.items():
            atomic_write_bytes(self.root / name, buffers[status].getvalue())
        return retired, done_parts


# -- the job ----------------------------------------------------------------------------------------
#: documents a worker pool takes before it is drained and replaced by fresh processes (PyMuPDF
#: keeps ~0.5 MB per parsed document in a process; this bounds a long run's worker memory)
RECYCLE_DOCUMENTS = 200


class _Pool:
    """A spawn process pool of ``workers`` processes (re-created after a worker crash, and after
    :data:`RECYCLE_DOCUMENTS` documents)."""

    def __init__(self, workers: int, config: JobConfig) -> None:
        self.workers = workers
        self.config = config
        self.executor: ProcessPoolExecutor | None = None
        self.documents = 0  # submitted to this executor

    def get(self) -> ProcessPoolExecutor:
        if self.executor is None:
            ctx = multiprocessing.get_context("spawn")  # no fork of a process with model threads
            self.executor = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=init_worker, initargs=(ParentInfo(), self.config)
            )
        return self.executor

    def reset(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.executor = None
        self.documents = 0

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
            self.executor = None
        self.documents = 0


def _pool_broke(exc: BaseException) -> bool:
    return isinstance(exc, BrokenProcessPool) or isinstance(exc.__cause__, BrokenProcessPool)


def _run_local(
    todo: Iterable[tuple[str, str]], workers: int, config: JobConfig, progress: Progress, split: bool = False
) -> Iterator[DocResult]:
    """Results of ``todo`` ((path, sha256) pairs, read lazily) as they arrive.

    ``split`` (fewer documents than workers): documents one after the other, each spread over
    all workers by pages (:func:`~grounded.ingest.split.split_document`); else one document per
    task, at most ``2 x workers`` in flight.
    """
    pool = _Pool(workers, config)
    try:
        if split:
            yield from _split_documents(todo, pool, config, progress)
        else:
            yield from _whole_documents(todo, pool)
    finally:
        pool.close()


def _split_documents(
    todo: Iterable[tuple[str, str]], pool: _Pool, config: JobConfig, progress: Progress
) -> Iterator[DocResult]:
    from .split import split_document

    chunker = build_chunker(config)
    checked = False
    for path, sha in todo:
        if progress.expected(path) < 2:  # a single page: nothing to split
            yield from _whole_documents([(path, sha)], pool)
            continue
        try:
            if not checked:  # one task per worker: all of them start (and load the model) at once
                checks = [pool.get().submit(setup_status) for _ in range(pool.workers)]
                status = next((s for s in (c.result() for c in checks) if s is not None), None)
                if status is not None:
                    yield DocResult("setup-error", path, sha, error_type=status[0], message=status[1])
                    return
                checked = True
            log.info("ingest: %s split over %d workers by pages", path, pool.workers)
            result = split_document(path, sha, config, pool.get(), pool.workers, chunker, progress.on_pages(path))
        except Exception as exc:
            if not _pool_broke(exc):
                raise
            log.warning("ingest: a worker process died; retrying %s on its own", path)
            pool.reset()
            checked = False
            yield from _whole_documents([(path, sha)], pool)
        else:
            yield result


def _whole_documents(todo: Iterable[tuple[str, str]], pool: _Pool) -> Iterator[DocResult]:
    """One document per task, at most ``2 x workers`` in flight (so memory does not grow with
    the corpus); the pool is drained and replaced after :data:`RECYCLE_DOCUMENTS` documents.

    When a worker dies, every document then in flight is retried alone (one in flight); one that
    kills its worker alone is reported as a :data:`CRASH` error.
    """
    pending = iter(todo)
    exhausted = False
    suspects: deque[tuple[str, str]] = deque()
    suspected: set[tuple[str, str]] = set()
    in_flight: dict[Future[DocResult], tuple[str, str]] = {}
    while True:
        limit = 1 if suspects else 2 * pool.workers
        if pool.documents >= RECYCLE_DOCUMENTS:
            limit = 0  # drain, then fresh processes
        while len(in_flight) < limit:
            item: tuple[str, str] | None = suspects.popleft() if suspects else None
            if item is None:
                item = next(pending, None) if not exhausted else None
                if item is None:
                    exhausted = True
                    break
            in_flight[pool.get().submit(process_document, *item)] = item
            pool.documents += 1
        if not in_flight:
            if limit == 0 and not exhausted:
                log.info("ingest: worker processes recycled after %d documents", pool.documents)
                pool.close()
                continue
            break
        finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
        broken: list[tuple[str, str]] = []
        for future in finished:
            item = in_flight.pop(future)
            try:
                yield future.result()
            except BrokenProcessPool:
                broken.append(item)
        if broken:
            broken.extend(in_flight.values())
            in_flight.clear()
            pool.reset()
            if len(broken) == 1 and broken[0] in suspected:  # it killed its worker alone
                path, sha = broken[0]
                yield DocResult("error", path, sha, error_type=CRASH,
                                message=f"{path}: the worker process died while parsing it (crash or out of memory)")
            else:
                log.warning("ingest: a worker process died; retrying its %d document(s) one at a time", len(broken))
                suspects.extend(sorted(broken))
                suspected.update(broken)


def ingest(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    parser: str = "pymupdf",
    strategy: str = "recursive",
    max_tokens: int = 256,
    overlap: int | float = 0,
    embed: Literal["minilm", "none"] = "none",
    workers: int | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    sink: Literal["parquet", "lancedb"] = "parquet",
    model: ModelSpec | None = None,
) -> IngestReport:
    """Parse, chunk and (optionally) embed every PDF of ``inputs`` into Parquet under ``out``.

    See the module docstring for the output layout, resume and failure rules. ``workers`` is
    the number of worker processes (default: the machine's cores); ``engine="ray"`` runs the
    documents on Ray (:mod:`grounded.ingest.ray_engine`; ``ray_address`` or ``$RAY_ADDRESS``
    joins a cluster, else a local runtime with ``workers`` CPUs) and writes the same files.
    ``sink="lancedb"`` also (re)builds the searchable LanceDB table ``out/lancedb`` from the Parquet
    parts at the end (:mod:`grounded.ingest.lance_sink`). ``model``: the model of a model-driven
    strategy (llm, vision) as :class:`~grounded.cli.llm_options.ModelSpec` (built in every worker). Returns an
    :class:`IngestReport`; raises :class:`IngestError` only when the job itself cannot run.
    """
    started = time.perf_counter()
    if engine not in ("local", "ray"):
        raise IngestError(f"engine must be 'local' or 'ray', got {engine!r}")
    if embed not in ("minilm", "none"):
        raise IngestError(f"embed must be 'minilm' or 'none', got {embed!r}")
    if sink not in ("parquet", "lancedb"):
        raise IngestError(f"sink must be 'parquet' or 'lancedb', got {sink!r}")
    n_workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if n_workers < 1:
        raise IngestError(f"workers must be >= 1, got {workers!r}")
    from ..parsers import parser_class

    parser_class(parser)  # unknown names fail here, before any work
    config = JobConfig(parser=parser, strategy=strategy, max_tokens=max_tokens, overlap=overlap, embed=embed, model=model)
    chunker = build_chunker(config)  # invalid chunking options fail here
    fingerprint = config_fingerprint(config, chunker.fingerprint)
    config = JobConfig(**{**config.__dict__, "config_fingerprint": fingerprint})
    del chunker
    _pa()  # pyarrow present?
    if engine == "ray":
        from .ray_engine import _ray

        _ray()  # ray installed?
    if sink == "lancedb":
        from .lance_sink import lancedb_module

        lancedb_module()  # lancedb installed?

    files = expand_inputs(inputs)
    report = IngestReport(out=Path(out), files=len(files))
    store = _Out(Path(out), fingerprint)
    pool_size = min(n_workers, max(len(files), 1))
    # fewer documents than workers: each document is spread over all workers by pages
    split = engine == "local" and parser == "pymupdf" and 0 < len(files) < n_workers
    bar = Progress(len(files), progress)
    count_pages = bar.shown or split
    seen: set[str] = set()
    current: dict[str, str] = {}  # input path -> sha256 of this run

    def todo() -> Iterator[tuple[str, str]]:
        """(path, sha256) of the inputs still to do, hashed lazily (work starts at once)."""
        for path in files:
            try:
                sha = file_sha256(path)
            except OSError as exc:
                error = InputNotFoundError(path, "no such file") if isinstance(exc, FileNotFoundError) else InputError(
                    path, f"cannot read: {exc.strerror or exc}"
                )
                _record_error(store, report, str(path), None, type(error).__name__, str(error))
                bar.file_done(str(path), failed=True)
                continue
            current[str(path)] = sha
            repeat = sha in seen
            seen.add(sha)
            record = None if repeat else store.read_record(sha)
            if repeat or (record is not None and _finished(record, retry_errors, store.chunks)):
                report.skipped += 1
                if record is not None and record.get("status") == "error":
                    report.failed += 1
                    report.errors.append((str(path), str(record.get("error_type")), str(record.get("message"))))
                bar.file_done(str(path), skipped=True, failed=record is not None and record.get("status") == "error")
                continue
            if count_pages:
                bar.expect(str(path), page_count(str(path)))
            yield str(path), sha

    finished = False
    try:
        if engine == "ray":
            from .ray_engine import run_ray

            results = run_ray(list(todo()), pool_size, config, ray_address=ray_address)
        else:
            results = _run_local(todo(), n_workers if split else pool_size, config, bar, split=split)
        for result in results:
            if result.status == "setup-error":
                raise IngestError(f"the worker processes cannot be set up: {result.error_type}: {result.message}")
            if result.status == "error":
                _record_error(store, report, result.path, result.sha256, result.error_type, result.message)
            else:
                _record_done(store, report, result, config)
            bar.file_done(result.path, pages=result.pages, failed=result.status == "error")
        finished = True
    finally:
        bar.close()
        # one read of the manifest; superseded rows are removed only after a whole run
        report.retired, done_parts = store.finish(current if finished else None)
    if sink == "lancedb":
        from .lance_sink import write_lancedb

        write_lancedb(store.root, done_parts, EMBED_DIMS.get(embed))
    report.seconds = time.perf_counter() - started
    return report


def _finished(record: dict[str, Any], retry_errors: bool, chunks: Path) -> bool:
    if record.get("status") == "done":  # done, unless its part file was removed since
        return bool(record.get("part")) and (chunks / str(record["part"])).is_file()
    return record.get("status") == "error" and not retry_errors and record.get("error_type") != CRASH


def _record_error(
    store: _Out, report: IngestReport, path: str, sha: str | None, error_type: str, message: str
) -> None:
    report.failed += 1
    report.errors.append((path, error_type, message))
    store.write_record(
        {"status": "error", "path": path, "sha256": sha, "config_fingerprint": store.fp,
         "error_type": error_type, "message": message}
    )


def _record_done(store: _Out, report: IngestReport, result: DocResult, config: JobConfig) -> None:
    assert result.sha256 is not None
    started = time.perf_counter()
    part = store.write_part(result.sha256, result.table)
    write_seconds = time.perf_counter() - started
    seconds = {**result.seconds, "write": write_seconds}
    store.write_record(
        {
            "status": "done",
            "path": result.path,
            "sha256": result.sha256,
            "config_fingerprint": store.fp,
            "parser": config.parser,
            "strategy": config.strategy,
            "pages": result.pages,
            "chunks": result.chunks,
            "part": part,
            "parse_seconds": round(seconds.get("parse", 0.0), 4),
            "chunk_seconds": round(seconds.get("chunk", 0.0) + seconds.get("rows", 0.0), 4),
            "embed_seconds": round(seconds.get("embed", 0.0), 4),
            "write_seconds": round(write_seconds, 4),
        }
    )
    report.done += 1
    report.pages += result.pages
    report.chunks += result.chunks
    for stage, value in seconds.items():
        report.stage_seconds[stage] = report.stage_seconds.get(stage, 0.0) + value
