"""The local engine: a spawn process pool on this machine (one document per task, or one long
document spread over all workers by pages), with crash isolation and worker recycling.

A worker that dies (killed, out of memory, a crash in native code) breaks the pool: the documents
then in flight are retried one at a time in a fresh pool; a document that kills its worker alone
gets a :data:`CRASH` error -- after a probe task checked that fresh workers start at all (workers
that die while starting are a job error, :class:`~grounded.ingest.errors.IngestError`, never
blamed on the documents).
"""

from __future__ import annotations

import logging
import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from ..errors import escape_controls
from ..runtime.processes import ParentInfo
from .errors import IngestError
from .progress import Progress
from .worker import DocResult, JobConfig, build_chunker, init_worker, process_document, setup_status

__all__ = ["CRASH", "RECYCLE_DOCUMENTS", "run_local"]

log = logging.getLogger(__name__)

#: error type of a document whose worker process died (killed, out of memory, crash in native code)
CRASH = "WorkerCrashError"

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


def run_local(
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
            log.info("ingest: %s split over %d workers by pages", escape_controls(str(path)), pool.workers)
            result = split_document(path, sha, config, pool.get(), pool.workers, chunker, progress.on_pages(path))
        except Exception as exc:
            if not _pool_broke(exc):
                raise
            log.warning("ingest: a worker process died; retrying %s on its own", escape_controls(str(path)))
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
                _probe(pool)  # fresh workers start? else the job stops: the document is not to blame
                path, sha = broken[0]
                yield DocResult("error", path, sha, error_type=CRASH, message=(
                    f"{path}: the worker process died while handling this file (killed, out of memory or "
                    "a crash in native code); the file is retried on the next run"))
            else:
                log.warning("ingest: a worker process died; retrying its %d document(s) one at a time", len(broken))
                suspects.extend(sorted(broken))
                suspected.update(broken)




def _probe(pool: _Pool) -> None:
    """Start fresh workers and run one setup check: raise :class:`IngestError` when they die
    while starting (then no document is to blame for the crashes)."""
    try:
        status = pool.get().submit(setup_status).result()
    except BrokenProcessPool:
        pool.reset()
        raise IngestError(
            "the worker processes die while starting (before any document): see the messages above; "
            "a script calling ingest() needs `if __name__ == \"__main__\":`"
        ) from None
    if status is not None:
        raise IngestError(f"the worker processes cannot be set up: {status[0]}: {status[1]}")
