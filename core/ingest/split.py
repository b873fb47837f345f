"""One long document across all the local engine's workers (a run with fewer documents than workers).

The parent parses with a :class:`~grounded.parsers.backends.pymupdf.PyMuPDFParser` that borrows
the ingest pool for its page tasks (layout + elements of page ranges, merged in page order by the
parser exactly as with its own pool), chunks in the parent, and sends the fixed embedding slices
(:func:`~grounded.ingest.worker.embed_slices`, chunks in length order) to the pool. The rows are the ones a whole-document
task gives: the same parser code (``workers > 1`` gives the ``workers = 1`` tree), the same
slices, one layout / torch thread per worker process.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from .worker import DocResult, EmbedMap, JobConfig, document_result, embed_slice

__all__ = ["split_document"]


def split_document(
    path: str,
    sha256: str,
    config: JobConfig,
    executor: Executor,
    workers: int,
    chunker: Any,
    on_pages: Callable[[int, int], None] | None = None,
) -> DocResult:
    """Parse (page tasks on ``executor``), chunk (here) and embed (slices on ``executor``) one PDF.

    ``on_pages(done, total)`` reports the layout pass. Raises
    :class:`~concurrent.futures.process.BrokenProcessPool` (possibly as the cause of a
    ``ParserError``) when a worker died: the caller retries the document on its own.
    """
    from ..parsers.backends.pymupdf.parser import PyMuPDFParser

    parser = PyMuPDFParser(**PyMuPDFParser.check_options({**config.parser_options, "workers": workers, "pool": executor,
                                                          "progress": on_pages}))
    embed_map: EmbedMap | None = None
    if config.embed != "none":
        embed_map = lambda slices: executor.map(embed_slice, slices)  # noqa: E731
    try:
        return document_result(path, sha256, config, parser.parse, chunker, embed_map)
    finally:
        parser.close()  # its own resources only: the borrowed pool keeps running
