"""``ingest``: a folder / glob / list of PDFs -> an index of Parquet chunk rows that never lies.

The output folder (layout: :mod:`grounded.ingest.store`) is written by one run at a time (a lock,
:mod:`grounded.ingest.lock`), holds one configuration (:mod:`grounded.ingest.config`; a run with
another one is refused unless ``replace=True``), and serves what ``OUT/manifest.json`` names
(:mod:`grounded.ingest.manifest`; readers: :mod:`grounded.ingest.reader`).

Per document: sha256 (by the parent) -> skipped when the live manifest already serves these bytes
at this path -> parse, chunk, embed in a worker process -> the parent writes the part file
atomically, then the document's record (the work log a killed run resumes from: a record is keyed
by content, path and configuration, so it is reused whenever that key comes back). The manifest is
published (one atomic rename; LanceDB first, :mod:`grounded.ingest.lance_sink`) every
:data:`PUBLISH_SECONDS` and at the end of the run; then the part files and records it no longer
names are removed. Readers therefore see one version of every path at any moment, and a run
killed at any step leaves the previous generation served and its own work resumable.

What a run changes in the live state, per input path: its current bytes' rows (a new version
replaces the old one; a failure replaces the rows by an error row; bytes equal to another input
of the run: served once, under the first path; bytes served under another path that is not an
input of this run: moved to this path). Documents that are not inputs of the run are kept (a folder
can be ingested in several runs), unless ``replace=True``: then the run's inputs become the whole
index, switched in one publish at the end. Those among them whose file no longer exists are
reported (``IngestReport.gone``) and kept -- a drive that is not mounted must not empty the index
-- unless ``prune=True``: then their rows leave in the run's publish.

Inputs that fail (corrupt, encrypted, image-only, not a PDF, unreadable) get an error record with
their typed error and never stop the run. A re-run tries them again (default ``retry_errors=True``):
the cause may have been fixed outside the file -- a password given, an extra or OCR data installed
-- and a failure is cheap to repeat. ``retry_errors=False`` (``--skip-errors``) keeps an earlier
failure of the same bytes as it is, except a worker crash (``WorkerCrashError``), which is always
retried.

Fewer documents than workers (one long guideline, ``--workers 2``): the local engine takes the
documents one after the other and spreads each over all workers by pages
(:mod:`grounded.ingest.split`), with the same rows as one worker per document.

Determinism: a document's rows depend only on its bytes, path and the configuration (chunk ids are
:func:`grounded.text.ids.chunk_id` of its sha256, parser and chunker fingerprint), never on
the worker count or the order in which documents finish.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, InputNotFoundError, escape_controls
from ..llm.spec import ModelSpec
from ..parsers.cache import file_sha256
from ..runtime.device import check_device, torch_device
from .config import asdict, config_fingerprint, config_settings, settings_difference
from .errors import ConfigurationMismatchError, IngestError
from .inputs import expand_inputs, source_exists
from .local_engine import CRASH, run_local
from .lock import OutLock
from .manifest import Manifest, read_manifest
from .progress import Progress, page_count
from .rows import _pa
from .store import OutFolder
from .worker import EMBED_DIMS, DocResult, JobConfig, build_chunker, default_max_tokens

__all__ = ["ingest", "IngestReport", "IngestError", "expand_inputs", "config_fingerprint"]

log = logging.getLogger(__name__)

#: seconds between two publishes of the manifest during a run (new rows become visible)
PUBLISH_SECONDS = 300.0


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
    #: documents (or error rows) removed from the index because this run superseded them
    retired: int = 0
    #: indexed paths (documents or error rows) that are not inputs of this run and no longer exist
    #: (deleted, moved away, an unmounted drive): their rows are kept unless ``prune=True``
    gone: list[str] = field(default_factory=list)
    #: how many of ``gone`` this run removed from the index (``prune=True``)
    pruned: int = 0
    #: chunks of this run longer than the embedder's window (``--embed``; ``embed_window`` tokens):
    #: their vectors stand for the first ``embed_window`` tokens only (:func:`grounded.ingest.rows.embed_text`)
    embed_cut: int = 0
    embed_window: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def summary(self) -> str:
        return (
            f"{self.done} done, {self.skipped} skipped, {self.failed} failed "
            f"({self.pages} pages, {self.chunks} chunks in {self.seconds:.1f} s)"
            + (f", {self.retired} superseded removed" if self.retired else "")
            + (f", {self.pruned} gone removed" if self.pruned else "")
            + (f"; {self.embed_cut} chunks longer than the embedder's {self.embed_window}-token window: their "
               f"vectors cover the first {self.embed_window} tokens (-n {self.embed_window} or less embeds whole chunks)"
               if self.embed_cut else "")
            + f" -> {self.out}"
        )


def _has_old_index(store: OutFolder) -> bool:
    """Parts or records written before folders recorded their configuration."""
    return any(store.chunks.glob("part-*.parquet")) or any(store.records.glob("*.json"))


class _Run:
    """One run's live state: the manifest being built, what changed, when to publish."""

    def __init__(self, store: OutFolder, previous: Manifest | None, live: Manifest, report: IngestReport,
                 lance: bool, dim: int | None, publish_partial: bool) -> None:
        self.store = store
        self.published = previous  # the manifest on disk
        self.live = live
        self.report = report
        self.lance = lance
        self.dim = dim
        self.publish_partial = publish_partial
        self.by_sha = {str(d["sha256"]): p for p, d in live.documents.items()}
        self.last_publish = time.monotonic()

    # -- changes to the live state -----------------------------------------------------------------
    def _drop(self, path: str, sha: str | None) -> None:
        """``path`` serves nothing now; what it served counts as superseded unless it was the
        bytes ``sha`` it holds now (a missing part done again, a crash retried)."""
        doc = self.live.documents.pop(path, None)
        if doc is not None:
            self.by_sha.pop(str(doc["sha256"]), None)
            self.report.retired += doc.get("sha256") != sha
        error = self.live.errors.pop(path, None)
        if error is not None:
            self.report.retired += error.get("sha256") != sha

    def serve(self, record: dict[str, Any]) -> None:
        """``record`` (a done document) is now what its path serves."""
        path, sha = str(record["path"]), str(record["sha256"])
        self._drop(path, sha)
        holder = self.by_sha.get(sha)
        if holder is not None and holder != path:  # the same bytes move to this path
            self._drop(holder, None)
        self.live.documents[path] = record
        self.by_sha[sha] = path

    def fail(self, record: dict[str, Any]) -> None:
        """``record`` (an error) replaces whatever its path served."""
        self._drop(str(record["path"]), record.get("sha256"))
        self.live.errors[str(record["path"])] = record

    def prune(self, path: str) -> None:
        """``path`` (not an input, no longer on disk) leaves the index."""
        doc = self.live.documents.pop(path, None)
        if doc is not None:
            self.by_sha.pop(str(doc["sha256"]), None)
        self.live.errors.pop(path, None)
        self.report.pruned += 1

    def repeat(self, path: str) -> None:
        """``path`` repeats the bytes of an earlier input of this run: it serves nothing."""
        self._drop(path, None)

    # -- publishing ---------------------------------------------------------------------------------
    def changed(self) -> bool:
        old = self.published
        return old is None or (old.config, old.documents, old.errors, old.lancedb) != (
            self.live.config, self.live.documents, self.live.errors, self.live.lancedb)

    def publish(self) -> None:
        """LanceDB first (its version goes into the manifest), then the manifest (one rename)."""
        if self.lance:
            from .lance_sink import TABLE, sync_lancedb

            version = sync_lancedb(self.store.root, self.published, self.live, self.dim)
            self.live.lancedb = {"table": TABLE, "version": version}
        if self.changed():
            self.store.publish(self.live)
            self.published = self.live.copy()
        self.last_publish = time.monotonic()

    def maybe_publish(self) -> None:
        if self.publish_partial and time.monotonic() - self.last_publish >= PUBLISH_SECONDS:
            self.publish()


def ingest(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    parser: str = "pymupdf",
    strategy: str = "recursive",
    max_tokens: int | None = None,
    overlap: int | float = 0,
    embed: Literal["minilm", "none"] = "none",
    workers: int | None = None,
    progress: bool = True,
    retry_errors: bool = True,
    prune: bool = False,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    sink: Literal["parquet", "lancedb"] = "parquet",
    model: ModelSpec | None = None,
    replace: bool = False,
    parser_options: Mapping[str, Any] | None = None,
    strategy_options: Mapping[str, Any] | None = None,
    tokenizer: str | None = None,
    box_mode: str = "auto",
    password: str | None = None,
    device: str = "auto",
    parse_cache: bool = True,
) -> IngestReport:
    """Parse, chunk and (optionally) embed every PDF of ``inputs`` into the index ``out``.

    See the module docstring for the output, resume and failure rules. ``workers`` is the number of
    worker processes (default: the machine's cores; 0: none, the documents are handled in this
    process, embedding one while the next parses -- :mod:`grounded.ingest.inprocess_engine`); ``engine="ray"`` runs the documents on Ray
    (:mod:`grounded.ingest.ray_engine`; ``ray_address`` or ``$RAY_ADDRESS`` joins a cluster, else
    a local runtime with ``workers`` CPUs) and writes the same files. ``sink="lancedb"`` also keeps
    the LanceDB table ``out/lancedb`` in step (:mod:`grounded.ingest.lance_sink`; sticky: later runs
    keep it too). ``model``: the model of a model-driven strategy (llm, vision) as
    :class:`~grounded.llm.spec.ModelSpec`. ``replace``: this run's inputs, under this
    configuration, become the whole index of ``out`` (needed when ``out`` holds another
    configuration). ``parser_options`` (e.g. ``{"ocr": "always"}``) and ``strategy_options`` (e.g.
    ``{"percentile": 0.8}``) are JSON values checked by the parser's and strategy's declarations;
    ``max_tokens`` (default: 256, or with ``embed="minilm"`` and the default tokenizer the model's
    254-token window, so every chunk is embedded whole: :func:`~grounded.ingest.worker.default_max_tokens`),
    ``tokenizer`` (a name or tokenizer.json path) and ``box_mode`` as for
    :class:`~grounded.chunking.Chunker`; all of them are part of the folder's configuration.
    ``password`` opens encrypted inputs (every input gets it; it never enters the configuration, a
    row or a record). ``device``: where the embedder runs -- ``"auto"`` (default: CUDA when torch
    sees a GPU, else the CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (a GPU asked for but not usable
    raises :class:`~grounded.errors.DeviceUnavailableError` before any work); it is not part of the
    configuration fingerprint. ``retry_errors`` (default): inputs that failed in an earlier run
    are tried again (False: their failure is kept, see the module docstring). Indexed paths that
    are not inputs of the run and no longer exist are listed in ``report.gone`` and kept (an
    unmounted drive must not empty the index); ``prune=True`` removes their rows (Parquet and
    LanceDB in the run's publish). ``parse_cache`` (default True): read and write the parse cache
    (:func:`grounded.parsers.cache.parse_once`, ``$GROUNDED_CACHE_DIR/parses``), so a PDF parsed
    before with this parser configuration is not parsed again (a re-ingest with other chunking
    settings loads its trees); not part of the configuration. The local engine runs worker processes with the spawn method: a script must
    call ``ingest`` under ``if __name__ == "__main__":``.

    Raises :class:`IngestError` (its subclasses :class:`~grounded.ingest.errors.NoInputsError`,
    :class:`~grounded.ingest.errors.OutputLockedError`,
    :class:`~grounded.ingest.errors.ConfigurationMismatchError`), and
    :class:`~grounded.errors.UnguardedMainError`, only when the job itself cannot run;
    failing documents are in the report and ``errors.parquet``.
    """
    started = time.perf_counter()
    if engine not in ("local", "ray"):
        raise IngestError(f"engine must be 'local' or 'ray', got {engine!r}")
    if embed not in ("minilm", "none"):
        raise IngestError(f"embed must be 'minilm' or 'none', got {embed!r}")
    if sink not in ("parquet", "lancedb"):
        raise IngestError(f"sink must be 'parquet' or 'lancedb', got {sink!r}")
    try:
        check_device(device)
    except ValueError as exc:
        raise IngestError(str(exc)) from exc
    if embed != "none" and device.startswith("cuda"):
        with contextlib.suppress(ImportError):  # no torch: the embedder names the missing extra
            torch_device(device)  # no usable GPU: DeviceUnavailableError now, not in every worker
    n_workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if n_workers < 0 or (n_workers == 0 and engine == "ray"):
        raise IngestError(f"workers must be >= {1 if engine == 'ray' else 0} with engine {engine!r}, got {workers!r}")
    from ..parsers import parser_class

    pcls = parser_class(parser)  # unknown names and options fail here, before any work
    if max_tokens is None:
        max_tokens = default_max_tokens(embed, tokenizer)
    config = JobConfig(
        parser=parser, strategy=strategy, max_tokens=max_tokens, overlap=overlap, embed=embed, model=model,
        parser_options=pcls.check_options(parser_options or {}), strategy_options=dict(strategy_options or {}),
        tokenizer=tokenizer, box_mode=box_mode, password=password, device=device, parse_cache=parse_cache,
    )
    chunker = build_chunker(config)  # invalid chunking options fail here
    settings = config_settings(config, chunker.fingerprint)
    fingerprint = config_fingerprint(config, chunker.fingerprint)
    config = JobConfig(**{**asdict(config), "config_fingerprint": fingerprint})
    del chunker
    _pa()  # pyarrow present?
    if engine == "ray":
        from .ray_engine import _ray

        _ray()  # ray installed?
    elif n_workers > 0:
        from ..runtime.main_guard import check_main_guard

        check_main_guard()  # spawned workers would re-run an unguarded script
    files = expand_inputs(inputs, allow_empty=False)
    store = OutFolder(Path(out), fingerprint)
    with OutLock(store.root):
        report = _run(files, store, config, settings, n_workers, progress, retry_errors, prune, engine, ray_address, sink,
                      replace)
    report.seconds = time.perf_counter() - started
    return report


def _run(
    files: list[Path], store: OutFolder, config: JobConfig, settings: dict[str, Any], n_workers: int,
    progress: bool, retry_errors: bool, prune: bool, engine: str, ray_address: str | None, sink: str, replace: bool,
) -> IngestReport:
    """The job, holding the folder's lock."""
    fingerprint = config.config_fingerprint
    store.check_kinds()  # no link where the run writes (a link would be followed to its target)
    previous = read_manifest(store.root)
    held = previous.config.get("settings") if previous is not None else None
    other = previous.fingerprint != fingerprint if previous is not None else _has_old_index(store)
    if other and not replace:
        raise ConfigurationMismatchError(
            f"{store.root} holds an index made with another configuration ({settings_difference(held, settings)}); "
            f"write to another -o folder, or pass --replace (replace=True) to re-index it under this configuration"
        )
    fresh = Manifest(config={"fingerprint": fingerprint, "settings": settings})
    if previous is not None:
        fresh.generation = previous.generation
    live = fresh if replace or previous is None else previous.copy()
    if previous is None and not other:  # a new folder: its configuration is claimed at once, so
        store.publish(live)  # the work of a first run killed before publishing is resumed
        previous = live.copy()
    lance = sink == "lancedb" or bool(previous is not None and previous.lancedb)
    if lance:
        from .lance_sink import lancedb_module

        lancedb_module()  # lancedb installed?
        if sink != "lancedb":
            log.info("ingest: %s has a LanceDB table: kept in step", store.root)
    report = IngestReport(out=store.root, files=len(files))
    run = _Run(store, previous, live, report, lance, EMBED_DIMS.get(config.embed), publish_partial=not replace)
    # fewer documents than workers: each document is spread over all workers by pages
    split = engine == "local" and config.parser == "pymupdf" and 0 < len(files) < n_workers
    pool_size = min(n_workers, max(len(files), 1))
    bar = Progress(len(files), progress)
    count_pages = bar.shown or split
    seen: set[str] = set()
    inputs: set[str] = set()

    def skip(path: str, error: dict[str, Any] | None = None) -> None:
        report.skipped += 1
        if error is not None:
            report.failed += 1
            report.errors.append((path, str(error.get("error_type")), str(error.get("message"))))
        bar.file_done(path, skipped=True, failed=error is not None)

    def todo() -> Iterator[tuple[str, str]]:
        """(path, sha256) of the inputs still to do, hashed lazily (work starts at once)."""
        for file in files:
            path = str(file)
            inputs.add(path)
            try:
                sha = file_sha256(file)
            except OSError as exc:
                error = InputNotFoundError(path, "no such file") if isinstance(exc, FileNotFoundError) else InputError(
                    path, f"cannot read: {exc.strerror or exc}"
                )
                _record_error(run, path, None, type(error).__name__, str(error))
                bar.file_done(path, failed=True)
                continue
            if sha in seen:  # the same bytes as an earlier input: served once, under that path
                run.repeat(path)
                skip(path)
                continue
            seen.add(sha)
            doc, err = live.documents.get(path), live.errors.get(path)
            if doc is not None and doc.get("sha256") == sha and store.has_part(doc):
                skip(path)
                continue
            if err is not None and err.get("sha256") == sha and _final_error(err, retry_errors):
                skip(path, err)
                continue
            record = store.read_record(sha, path)  # done or failed by an earlier (killed) run?
            if record is not None and record.get("status") == "done" and store.has_part(record):
                run.serve(record)
                skip(path)
                continue
            if record is not None and record.get("status") == "error" and _final_error(record, retry_errors):
                run.fail(record)
                skip(path, record)
                continue
            holder = run.by_sha.get(sha)
            if holder is not None and holder not in inputs and store.has_part(live.documents[holder]):
                _move(run, live.documents[holder], path)  # the bytes now live here (the old path is gone)
                bar.file_done(path)
                continue
            if count_pages:
                bar.expect(path, page_count(path))
            yield path, sha

    completed = False
    try:
        if engine == "ray":
            from .ray_engine import run_ray

            results: Iterator[DocResult] = run_ray(list(todo()), pool_size, config, ray_address=ray_address)
        elif n_workers == 0:
            from .inprocess_engine import run_inprocess

            results = run_inprocess(todo(), config)
        else:
            results = run_local(todo(), n_workers if split else pool_size, config, bar, split=split)
        for result in results:
            if result.status == "setup-error":
                who = "the worker processes" if n_workers else "the in-process engine"
                raise IngestError(f"{who} cannot be set up: {result.error_type}: {result.message}")
            if result.status == "error":
                _record_error(run, result.path, result.sha256, result.error_type, result.message)
            else:
                _record_done(run, result, config)
            bar.file_done(result.path, pages=result.pages, failed=result.status == "error")
            run.maybe_publish()
        named = {str(f) for f in files}
        report.gone = sorted(p for p in {*live.documents, *live.errors} if p not in named and not source_exists(p))
        if report.gone:
            log.info("ingest: %d indexed input(s) no longer exist%s: %s", len(report.gone),
                     "; their rows are removed (prune)" if prune else "; their rows are kept",
                     ", ".join(escape_controls(p) for p in report.gone[:20]))
        if prune:
            for path in report.gone:
                run.prune(path)
        completed = True
    finally:
        bar.close()
        if completed or run.publish_partial:  # a --replace run switches only when complete
            run.publish()
    if replace and previous is not None:  # what left the index with the switch
        report.retired = sum(live.documents.get(p, {}).get("part") != d.get("part") for p, d in previous.documents.items())
        report.retired += sum(live.errors.get(p, {}).get("sha256") != e.get("sha256") for p, e in previous.errors.items())
    store.collect_garbage(run.live)
    return report


def _final_error(record: dict[str, Any], retry_errors: bool) -> bool:
    """Whether an error record stands (not retried): a worker crash is always retried."""
    return not retry_errors and record.get("error_type") != CRASH


def _record_error(run: _Run, path: str, sha: str | None, error_type: str, message: str) -> None:
    run.report.failed += 1
    run.report.errors.append((path, error_type, message))
    record = {"status": "error", "path": path, "sha256": sha, "config_fingerprint": run.store.fp,
              "error_type": error_type, "message": message}
    run.store.write_record(record)
    run.fail(record)


def _move(run: _Run, holder: dict[str, Any], path: str) -> None:
    """Serve the rows of ``holder`` (another path with the same bytes, no longer an input) at
    ``path``: its part with ``source_path`` rewritten (the rows a parse of ``path`` gives)."""
    import pyarrow.parquet as pq

    pa = _pa()
    table = pq.read_table(run.store.chunks / str(holder["part"]))
    column = table.schema.get_field_index("source_path")
    table = table.set_column(column, "source_path", pa.array([path] * table.num_rows, type=pa.string()))
    sha = str(holder["sha256"])
    record = {**holder, "path": path, "part": run.store.write_part(sha, path, table)}
    run.store.write_record(record)
    log.info("ingest: %s has the bytes of %s (indexed before, no longer an input): its rows move to %s",
             path, holder["path"], path)
    run.serve(record)
    run.report.done += 1
    run.report.chunks += int(record.get("chunks") or 0)


def _record_done(run: _Run, result: DocResult, config: JobConfig) -> None:
    assert result.sha256 is not None
    store, report = run.store, run.report
    started = time.perf_counter()
    part = store.write_part(result.sha256, result.path, result.table)
    write_seconds = time.perf_counter() - started
    seconds = {**result.seconds, "write": write_seconds}
    record = {
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
    store.write_record(record)
    run.serve(record)
    report.done += 1
    report.pages += result.pages
    report.chunks += result.chunks
    if result.embed_cut:
        from .worker import embed_window

        report.embed_cut += result.embed_cut
        report.embed_window = embed_window(config.embed)[1]
    for stage, value in seconds.items():
        report.stage_seconds[stage] = report.stage_seconds.get(stage, 0.0) + value
