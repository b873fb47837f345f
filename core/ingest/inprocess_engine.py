"""The in-process engine (``workers=0``): the documents are handled in the caller's own process,
with no worker processes -- for notebooks, runtimes that cannot start processes, debugging.

Two stages overlap: this thread parses and chunks document *k + 1* while a second thread embeds
document *k*'s chunks and builds its rows (ONNX Runtime and torch release the GIL, so the layout
model and MiniLM share the cores). Results arrive in input order, one document behind; at most
one chunked document waits. The layout model and torch run with their default threads; the rows
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
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="grounded-ingest-finish") as finisher:
            waiting: Future[DocResult] | None = None
            for path, sha in todo:
                staged = parse_and_chunk(path, sha, config, parser.parse, chunker)
                if waiting is not None:
                    yield waiting.result()
                    waiting = None
                if isinstance(staged, Chunked):
                    waiting = finisher.submit(finish_document, staged, config, embed_map)
                else:
                    yield staged
            if waiting is not None:
                yield waiting.result()
    finally:
        close = getattr(parser, "close", None)
        if callable(close):
            close()
