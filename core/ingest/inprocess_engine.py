"""The in-process engine (``workers=0``): the documents are handled in the caller's own process,
with no worker processes -- for notebooks, runtimes that cannot start processes, debugging.

Two stages overlap: this thread parses and chunks the next document while a second thread embeds
the chunks of the documents parsed before and builds their rows (ONNX Runtime and torch release
the GIL, so the layout model and MiniLM share the cores). Neither stage waits for the other while
it has work: a parse starts as soon as the previous one ends (unless :data:`MAX_PENDING` chunked
documents still wait for their vectors), and the embedding picks torch's threads per batch -- one while
a parse runs beside it (the layout model has the other core), torch's own number whenever no
parse runs (the last documents, or while this thread hands results to the caller). On Linux the
embedding thread runs at a lower scheduling priority (:data:`EMBED_NICE`): the parse is the
critical path and its ONNX Runtime threads wait for each other inside every operator, so a core
goes to the embedding when the parse leaves it idle instead of stalling an operator (``python
benchmarks/ingest_speed.py --sections like``, docs/results/ingest_speed.md). Results arrive
in input order; the process's torch setting is restored at the end. The rows are those of a
worker-process run (ids, text, boxes), the vectors equal to float precision (one torch thread per
worker process there).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .worker import (
    Chunked,
    DocResult,
    EmbedMap,
    JobConfig,
    build_chunker,
    build_embedder,
    build_parser,
    finish_document,
    parse_and_chunk,
)

__all__ = ["EMBED_NICE", "MAX_PENDING", "run_inprocess"]

log = logging.getLogger(__name__)

#: chunked documents (the one being embedded included) that may wait for their vectors and rows
#: while the next one parses; each holds its chunks in memory. With more waiting, the next parse
#: starts when the oldest is done
MAX_PENDING = 2
#: how much lower the embedding thread's priority is than the caller's (Linux ``nice`` increment;
#: a thread's own setting, gone with the thread when the run ends)
EMBED_NICE = 10


def run_inprocess(todo: Iterable[tuple[str, str]], config: JobConfig) -> Iterator[DocResult]:
    """Results of ``todo`` ((path, sha256) pairs, read lazily) in input order. A failure to set
    up (missing extra, unusable device) is one ``setup-error`` result, as from a worker."""
    try:
        parser = build_parser(config, worker=False)
        chunker = build_chunker(config)
        embedder = build_embedder(config.embed, config.device)
    except Exception as exc:  # reported as setup-error: the job stops with the real reason
        first = next(iter(todo), None)
        path, sha = first if first is not None else ("", None)
        yield DocResult("setup-error", path, sha, error_type=type(exc).__name__, message=str(exc))
        return
    parsing = threading.Event()
    threads = _TorchThreads(parsing) if embedder is not None else None
    embed_map: EmbedMap | None = None if embedder is None or threads is None else threads.embed_map(embedder)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="grounded-ingest-finish") as finisher:
            pending: deque[Future[DocResult]] = deque()
            try:
                for path, sha in todo:
                    while pending and (pending[0].done() or sum(not f.done() for f in pending) > MAX_PENDING):
                        yield pending.popleft().result()
                    parsing.set()
                    try:
                        staged = parse_and_chunk(path, sha, config, parser.parse, chunker)
                    finally:
                        parsing.clear()
                    pending.append(
                        finisher.submit(finish_document, staged, config, embed_map)
                        if isinstance(staged, Chunked) else _done(staged)
                    )
                while pending:
                    yield pending.popleft().result()
            finally:
                for left in pending:  # the caller stopped early: no embedding runs on after it
                    left.cancel()
                if threads is not None:  # torch's setting of the embedding thread, then of this one
                    finisher.submit(threads.restore).result()
                    threads.restore()
    finally:
        close = getattr(parser, "close", None)
        if callable(close):
            close()


def _done(result: DocResult) -> Future[DocResult]:
    """A finished future (a document whose parse failed keeps its place in the input order)."""
    future: Future[DocResult] = Future()
    future.set_result(result)
    return future


class _TorchThreads:
    """torch's intra-op threads for the embedding, chosen before every batch: one while a parse
    runs beside it (``parsing`` set: the layout model has the other core; more torch threads
    only fight it), torch's own number when the embedding runs alone. Restored when the run ends."""

    def __init__(self, parsing: threading.Event) -> None:
        import torch

        self.torch = torch
        self.default = torch.get_num_threads()
        self.parsing = parsing

    def use(self, alone: bool) -> None:
        wanted = self.default if alone else 1
        if self.torch.get_num_threads() != wanted:
            self.torch.set_num_threads(wanted)

    def restore(self) -> None:
        self.use(alone=True)

    def embed_map(self, embedder: Any) -> EmbedMap:
        """``slices -> vectors per slice``, each slice embedded with the threads of that moment."""

        def run(slices: list[list[str]]) -> Iterator[Any]:
            _lower_priority()
            for texts in slices:
                self.use(alone=not self.parsing.is_set())
                yield embedder(texts)

        return run


def _lower_priority() -> None:
    """Lower this thread's scheduling priority by :data:`EMBED_NICE` once (Linux, where a thread
    id names the thread in ``setpriority``; elsewhere it could name another process: nothing)."""
    import os
    import sys

    if sys.platform != "linux" or getattr(_thread_state, "niced", False):
        return
    _thread_state.niced = True
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + EMBED_NICE))
    except OSError:  # a sandbox that forbids it: the run is only slower
        log.debug("ingest: the embedding thread's priority could not be lowered", exc_info=True)


#: per thread: whether :func:`_lower_priority` ran in it
_thread_state = threading.local()
