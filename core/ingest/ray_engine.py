"""The ``ray`` engine: the same per-document work as the local engine, on a Ray cluster.

Ray Data streams the (path, sha256) pairs still to do through ``map_batches`` with an actor pool
(:class:`_DocumentActor`: each actor builds the parser -- layout model loaded once, one ONNX
thread -- the chunker and the embedder once, then takes one document per batch). An actor returns
the document's chunk table as Arrow IPC bytes; the driver receives results as they stream in and
writes parts and manifest records exactly like the local engine, so both engines produce the same
files (same rows, same ids), the same resume and the same errors table.

Connection: ``ray_address`` (or ``$RAY_ADDRESS``) joins an existing cluster; without one a local
Ray runtime is started with ``num_cpus=workers`` by :mod:`.ray_runtime` (no connection outside the
machine, its folder removed, its processes killed when the driver dies). PDFs are read by the actors from their paths,
so on a multi-node cluster the inputs must be on a shared file system.

An actor that dies (killed, out of memory, a crash in native code) is restarted by Ray and its
document retried once (:data:`TASK_RETRIES`; Ray Data's default retries without limit, so a PDF
that crashes its parser hung the run); a document that kills its actor again gets the local
engine's :data:`~grounded.ingest.local_engine.CRASH` error and the run goes on (its block is one of
Ray Data's ``max_errored_blocks``).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import BackendUnavailableError, escape_controls
from .local_engine import CRASH
from .ray_runtime import local_ray, prepare_environment
from .worker import DocResult, JobConfig, process_document, safe_setup

log = logging.getLogger(__name__)

#: how many times a document whose actor died is given to a restarted actor before it is reported
#: as a :data:`~grounded.ingest.local_engine.CRASH` error
TASK_RETRIES = 1


def _ray(local: bool = False) -> Any:
    if local:
        prepare_environment()  # before Ray's constants are read at import (see ray_runtime)
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError("grounded ingest --engine ray", "ray", "'ray[data]'") from exc
    return ray


def _table_bytes(table: Any) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _table_from_bytes(data: bytes) -> Any:
    import pyarrow as pa

    with pa.ipc.open_stream(data) as reader:
        return reader.read_all()


class _DocumentActor:
    """One Ray actor: sets up once, then parses/chunks/embeds one document per row of a batch."""

    def __init__(self, config: JobConfig) -> None:
        safe_setup(config)  # a failure comes back from every row as setup-error

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {k: [] for k in ("status", "path", "sha256", "pages", "chunks", "seconds",
                                                      "error_type", "message", "table", "embed_cut")}
        for path, sha in zip(batch["path"], batch["sha256"], strict=True):
            result = process_document(str(path), str(sha))
            out["status"].append(result.status)
            out["path"].append(result.path)
            out["sha256"].append(result.sha256)
            out["pages"].append(result.pages)
            out["chunks"].append(result.chunks)
            out["seconds"].append(json.dumps(result.seconds))
            out["error_type"].append(result.error_type)
            out["message"].append(result.message)
            out["table"].append(_table_bytes(result.table) if result.table is not None else b"")
            out["embed_cut"].append(result.embed_cut)
        return out


def run_ray(
    todo: Sequence[tuple[str, str]], workers: int, config: JobConfig, *, ray_address: str | None = None
) -> Iterator[DocResult]:
    """Results of ``todo`` ((path, sha256) pairs) as Ray Data streams them back to the driver."""
    if not todo:
        return
    address = ray_address or os.environ.get("RAY_ADDRESS") or None
    ray = _ray(local=address is None)
    with contextlib.ExitStack() as stack:
        if not ray.is_initialized():
            if address is None:
                stack.enter_context(local_ray(ray, workers))
            else:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
                stack.callback(ray.shutdown)
        yield from _stream(ray, todo, workers, config)


def _map_documents(ray: Any, dataset: Any, workers: int, config: JobConfig) -> Any:
    """The dataset mapped through the actor pool, a document retried :data:`TASK_RETRIES` times.
    Ray 2.60 has no named parameter for that and calls the keyword form deprecated (a warning on
    the user's stderr, hidden here); a Ray without the keyword form gets Ray Data's default."""
    # one document in flight per actor: a document that kills its actor takes no queued neighbour
    # with it (with Ray Data's default of several, b.pdf queued behind crash-me.pdf died twice too)
    try:
        pool = ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1)
    except TypeError:  # pragma: no cover - a Ray without the parameter
        pool = ray.data.ActorPoolStrategy(size=workers)
    options = {"fn_constructor_args": (config,), "batch_size": 1, "compute": pool,
               "num_cpus": 1, "batch_format": "numpy"}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        try:
            return dataset.map_batches(_DocumentActor, **options, max_task_retries=TASK_RETRIES)
        except TypeError:  # pragma: no cover - a Ray that removed the keyword form
            log.warning("ingest: this Ray version cannot limit retries: a document that crashes its actor is retried by Ray")
            return dataset.map_batches(_DocumentActor, **options)


def _stream(ray: Any, todo: Sequence[tuple[str, str]], workers: int, config: JobConfig) -> Iterator[DocResult]:
    """Ray Data's results as :class:`DocResult` records (the runtime is up). Ray's and Ray Data's
    INFO/WARNING lines are shown only when the driver logs INFO (``-v``)."""
    import ray.data

    if not logging.getLogger().isEnabledFor(logging.INFO):
        for name in ("ray", "ray.data"):
            logging.getLogger(name).setLevel(logging.ERROR)
        # a document that killed its actor twice is logged with a traceback there: its CRASH error says it
        logging.getLogger("ray.data._internal.execution.streaming_executor_state").setLevel(logging.CRITICAL)

    context = ray.data.DataContext.get_current()
    saved = context.enable_progress_bars, context.max_errored_blocks
    context.enable_progress_bars = False
    context.max_errored_blocks = len(todo)  # a document that kills its actor twice: its error, not the run's
    try:
        dataset = ray.data.from_items([{"path": p, "sha256": s} for p, s in todo], override_num_blocks=len(todo))
        results = _map_documents(ray, dataset, workers, config)
        returned: set[tuple[str, str]] = set()
        for row in results.iter_rows():
            table = _table_from_bytes(bytes(row["table"])) if row["status"] == "done" else None
            returned.add((str(row["path"]), str(row["sha256"])))
            yield DocResult(
                status=str(row["status"]),
                path=str(row["path"]),
                sha256=str(row["sha256"]),
                table=table,
                pages=int(row["pages"]),
                chunks=int(row["chunks"]),
                seconds={k: float(v) for k, v in json.loads(str(row["seconds"])).items()},
                error_type=str(row["error_type"]),
                message=str(row["message"]),
                embed_cut=int(row["embed_cut"]),
            )
    finally:
        context.enable_progress_bars, context.max_errored_blocks = saved
    for path, sha in todo:
        if (path, sha) not in returned:  # its block errored: the actor died on it every time
            yield DocResult("error", path, sha, error_type=CRASH, message=(
                f"{escape_controls(path)}: the Ray actor died while handling this file, {TASK_RETRIES + 1} times "
                "(killed, out of memory or a crash in native code); the file is retried on the next run"))
