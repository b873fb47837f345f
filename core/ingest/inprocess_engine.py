"""The in-process engine (``workers=0``): the documents are handled in the caller's own process,
with no worker processes -- for notebooks, runtimes that cannot start processes, debugging.

Two stages overlap: this thread parses and chunks document *k + 1* while a second thread embeds
document *k*'s chunks and builds its rows (ONNX Runtime and torch release the GIL, so the layout
model and MiniLM share the cores). Results arrive in input order, one document behind; at most
one chunked document waits. The layout model runs with ONNX Runtime's default threads; torch with
one thread while a parse runs beside the embedding, its default number for the last document
(which embeds alone; the process's torch setting is restored at the end). The rows
are those of a worker-process run (ids, text, boxes), the vectors equal to float precision (one
torch thread per worker process there, the library's default here).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

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

__all__ = ["run_inprocess"]


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
    embed_map: EmbedMap | None = None if embedder is None else (lambda slices: map(embedder, slices))
    threads = _TorchThreads() if embedder is not None else None
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="grounded-ingest-finish") as finisher:
            waiting: Future[DocResult] | None = None
            pending = iter(todo)
            item = next(pending, None)
            while item is not None:
                staged = parse_and_chunk(item[0], item[1], config, parser.parse, chunker)
                item = next(pending, None)  # is another document coming? (the last embeds alone)
                if waiting is not None:
                    yield waiting.result()
                    waiting = None
                if isinstance(staged, Chunked):
                    waiting = finisher.submit(_finish, staged, config, embed_map, threads, item is not None)
                else:
                    yield staged
            if waiting is not None:
                yield waiting.result()
    finally:
        if threads is not None:
            threads.restore()
        close = getattr(parser, "close", None)
        if callable(close):
            close()


class _TorchThreads:
    """torch's intra-op threads for the embedding thread: one while a parse runs beside it (the
    layout model has the other core; more torch threads only fight it), torch's own number for
    the last document, which embeds alone. Restored when the run ends."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.default = torch.get_num_threads()

    def use(self, alone: bool) -> None:
        wanted = self.default if alone else 1
        if self.torch.get_num_threads() != wanted:
            self.torch.set_num_threads(wanted)

    def restore(self) -> None:
        self.use(alone=True)


def _finish(staged: Chunked, config: JobConfig, embed_map: EmbedMap | None, threads: _TorchThreads | None,
            parse_beside: bool) -> DocResult:
    if threads is not None:
        threads.use(alone=not parse_beside)
    return finish_document(staged, config, embed_map)
