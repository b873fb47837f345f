"""What one worker process does with one document: parse -> chunk -> (embed) -> Arrow table.

A worker process builds its parser, chunker and embedder once (:func:`init_worker`, the pool's
initializer) and then takes one document per task (:func:`process_document`). The PyMuPDF layout
model runs with one ONNX Runtime thread per process (no busy-waiting threads), so ``K`` worker
processes use ``K`` cores without fighting; every worker exits when its parent dies
(:func:`grounded.runtime.processes.die_with_parent`).

Errors never escape a task: a :class:`~grounded.errors.GroundedError` (corrupt, encrypted,
image-only PDF, ...) or any other exception comes back as an ``error`` result naming its type.
A failure to set the worker up (missing extra, unknown parser) comes back as ``setup-error``:
the parent stops the job, since every document would fail the same way.
"""

from __future__ import annotations

import functools
import logging
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GroundedError, escape_controls
from ..llm.spec import ModelSpec, strategy_options
from ..runtime.processes import ParentInfo, die_with_parent

log = logging.getLogger(__name__)

#: chunks per MiniLM call (one model batch). A document's chunks are embedded in length order
#: (:func:`embed_slices`), so a batch pads little: 16 cost 20% less CPU than 64 on the shared long
#: PDFs (one torch thread, vectors equal to cosine 0.9999999; ``benchmarks/embed_batches.py``)
EMBED_BATCH = 16
#: vector size of each ``embed`` choice
EMBED_DIMS = {"minilm": 384}


@dataclass(frozen=True)
class JobConfig:
    """Everything a worker needs to turn a PDF into rows (picklable)."""

    parser: str = "pymupdf"
    strategy: str = "recursive"
    max_tokens: int = 256
    overlap: int | float = 0
    embed: str = "none"
    config_fingerprint: str = ""
    #: the model of a model-driven strategy (llm, vision), built in each worker
    model: ModelSpec | None = None
    #: the parser's constructor options (``ocr``, ``ocr_dpi``, ...; JSON values), checked by its declaration
    parser_options: dict[str, Any] = field(default_factory=dict)
    #: the strategy's options (``percentile``, ``heading_budget``, ...; JSON values), checked by its declaration
    strategy_options: dict[str, Any] = field(default_factory=dict)
    tokenizer: str | None = None
    box_mode: str = "auto"
    #: the password of encrypted inputs: given to every parse, never fingerprinted, recorded or shown
    password: str | None = field(default=None, repr=False)
    #: where the embedder runs (``auto``/``cpu``/``cuda[:N]``, :mod:`grounded.runtime.device`); not
    #: part of the fingerprint: it says where vectors are computed, not which ones
    device: str = "auto"
    #: read and write the parse cache (:func:`grounded.parsers.cache.parse_once`): a PDF parsed before
    #: with this parser configuration is loaded, not parsed again. Not part of the fingerprint: the
    #: cached tree is the tree a parse gives
    parse_cache: bool = True


@dataclass
class DocResult:
    """Outcome of one document: ``status`` is ``done``, ``error`` or ``setup-error``."""

    status: str
    path: str
    sha256: str | None
    table: Any = None
    pages: int = 0
    chunks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    error_type: str = ""
    message: str = ""
    #: chunks longer than the embedder's window (:func:`~grounded.ingest.rows.embed_text`): their
    #: vectors stand for the first ``window`` tokens only
    embed_cut: int = 0


class _State:
    config: JobConfig | None = None
    parser: Any = None
    chunker: Any = None
    embedder: Any = None
    setup_error: BaseException | None = None


def build_parser(config: JobConfig, worker: bool = True) -> Any:
    """The parser of a job, with the job's parser options. In a worker process (``worker``) PyMuPDF
    lays out with one thread (processes don't fight); in the caller's own process (the in-process
    engine) with ONNX Runtime's default number."""
    from ..parsers import get_parser

    if config.parser == "pymupdf" and worker:
        with warnings.catch_warnings():
            # a process that already loaded the model (workers=1 in-process use) keeps its threads
            warnings.filterwarnings("ignore", message="layout_threads=.*ignored")
            return get_parser(config.parser, **{"layout_threads": 1, **config.parser_options})
    return get_parser(config.parser, **config.parser_options)


def build_chunker(config: JobConfig) -> Any:
    from ..chunking import Chunker

    options = {**config.strategy_options, **strategy_options(config.strategy, config.model or ModelSpec())}
    if config.password is not None and any(o.name == "password" for o in _strategy_declared(config.strategy)):
        options["password"] = config.password  # a strategy that opens the PDF itself (vision)
    return Chunker(config.strategy, config.max_tokens, config.overlap, tokenizer=config.tokenizer,
                   box_mode=config.box_mode, **options)


def _strategy_declared(strategy: str) -> tuple[Any, ...]:
    from ..chunking.base import strategy_class

    return strategy_class(strategy).options or ()


@functools.lru_cache(maxsize=4)
def embed_window(name: str) -> tuple[Callable[[str], int], int]:
    """``(count, window)`` of an ``--embed`` choice: its tokenizer's count and how many tokens of a
    text its model reads (:func:`~grounded.ingest.rows.embed_text` fits each chunk to it)."""
    if name != "minilm":
        raise ValueError(f"embed must be 'minilm', got {name!r}")
    from ..chunking.nlp import minilm_window
    from ..text.tokenizer import minilm_tokenizer

    return minilm_tokenizer().count, minilm_window()


#: chunk bound of a run that does not name one and embeds nothing (or with another tokenizer)
DEFAULT_MAX_TOKENS = 256


def default_max_tokens(embed: str, tokenizer: str | None) -> int:
    """The ``max_tokens`` of a run that does not name one: 256, or -- when it embeds with a model
    whose tokenizer is the chunker's too (``--embed minilm``, default tokenizer) -- at most the
    model's window (254 for MiniLM), so no chunk's tail is left out of its vector."""
    from ..text.tokenizer import DEFAULT_TOKENIZER_NAME

    if embed == "none" or tokenizer not in (None, DEFAULT_TOKENIZER_NAME):
        return DEFAULT_MAX_TOKENS
    return min(DEFAULT_MAX_TOKENS, embed_window(embed)[1])


def build_embedder(name: str, device: str = "auto") -> Any:
    """The embedder of ``--embed NAME`` on ``device`` (None for ``none``)."""
    if name == "none":
        return None
    if name != "minilm":
        raise ValueError(f"embed must be 'minilm' or 'none', got {name!r}")
    from ..chunking.strategies.semantic import minilm_embedder

    return minilm_embedder(batch_size=EMBED_BATCH, device=device)


def setup(config: JobConfig) -> None:
    """Build this process's parser, chunker and embedder (once)."""
    _State.config = config
    _State.parser = build_parser(config)
    _State.chunker = build_chunker(config)
    if config.embed != "none":
        try:
            import torch

            torch.set_num_threads(1)  # one core per worker process
        except ImportError:  # the embedder reports the missing extra itself
            pass
    _State.embedder = build_embedder(config.embed, config.device)


def safe_setup(config: JobConfig) -> None:
    """:func:`setup`, keeping a failure to report it from every task (the parent then stops the
    job with the real reason)."""
    try:
        setup(config)
    except Exception as exc:  # reported per task as setup-error (the parent stops the job)
        _State.setup_error = exc


def init_worker(parent: ParentInfo | None, config: JobConfig) -> None:
    """Process-pool initializer: die with the parent, then :func:`safe_setup`."""
    die_with_parent(parent)
    safe_setup(config)


def embed_order(texts: Sequence[str]) -> list[int]:
    """The order in which a document's chunks are embedded: longest first (by characters, ties in
    document order), so each :data:`EMBED_BATCH` slice holds chunks of similar length and the
    model pads little."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


def embed_slices(texts: Sequence[str], batch: int = EMBED_BATCH, order: Sequence[int] | None = None) -> list[list[str]]:
    """``texts`` in :func:`embed_order` (or the given ``order``), cut into consecutive slices of
    ``batch``: each slice is embedded by one call (one model batch), so a vector depends only on
    its document -- never on which process embedded it (:func:`embed_document` puts the vectors
    back in order)."""
    order = embed_order(texts) if order is None else order
    return [[texts[i] for i in order[k : k + batch]] for k in range(0, len(order), batch)]


def embed_document(texts: Sequence[str], embed_map: EmbedMap, batch: int = EMBED_BATCH) -> Any:
    """Vectors of a document's chunk ``texts`` (float32, one row per text, in ``texts`` order):
    :func:`embed_slices` of ``batch`` through ``embed_map``."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    order = embed_order(texts)
    stacked = np.concatenate([np.asarray(v, dtype=np.float32) for v in embed_map(embed_slices(texts, batch, order))])
    vectors = np.empty_like(stacked)
    vectors[order] = stacked
    return vectors


def embed_slice(texts: list[str]) -> Any:
    """Pool task: MiniLM vectors of one slice, in this worker process (one torch thread)."""
    assert _State.embedder is not None, "embed_slice in a worker set up without embeddings"
    return _State.embedder(texts)


#: ``slices -> vectors per slice`` (in order); the local map, or a pool's
EmbedMap = Callable[[list[list[str]]], Iterable[Any]]


@dataclass
class Chunked:
    """A document parsed and chunked, waiting for its vectors and rows (:func:`finish_document`)."""

    path: str
    sha256: str
    chunks: list[Any]
    pages: int
    seconds: dict[str, float]


def _failed(exc: Exception, path: str, sha256: str) -> DocResult:
    """The ``error`` result of one document's failure (a lost pool worker is re-raised: the caller
    retries the document)."""
    if isinstance(exc, BrokenProcessPool) or isinstance(exc.__cause__, BrokenProcessPool):
        raise exc
    if isinstance(exc, GroundedError):
        return DocResult("error", path, sha256, error_type=type(exc).__name__, message=str(exc))
    log.debug("ingest: %s failed:\n%s", escape_controls(str(path)), traceback.format_exc())
    return DocResult("error", path, sha256, error_type=type(exc).__name__, message=f"{path}: {exc}")


def _parse(path: str, sha256: str, config: JobConfig, parse: Callable[..., Any]) -> tuple[Any, bool]:
    """``(tree, from_cache)`` of one PDF: through the parse cache when ``config.parse_cache`` and
    ``parse`` is a parser's own ``parse`` (keyed by the job's parser options: the worker's runtime
    ones, one layout thread or a borrowed pool, give the same tree), else ``parse`` itself."""
    from ..parsers.base import BaseParser

    parser = getattr(parse, "__self__", None)
    if config.parse_cache and isinstance(parser, BaseParser):
        from ..parsers.cache import ParseCache, parse_once

        return parse_once(parser, Path(path), cache=ParseCache(), options=config.parser_options,
                          password=config.password, sha256=sha256)
    return parse(Path(path), password=config.password), False


def parse_and_chunk(path: str, sha256: str, config: JobConfig, parse: Callable[..., Any], chunker: Any) -> Chunked | DocResult:
    """The first half of :func:`document_result`: parse and chunk one PDF (an ``error`` result
    when either fails; never raises)."""
    seconds: dict[str, float] = {}
    try:
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # per-page warnings are in the parse metadata
            root, cached = _parse(path, sha256, config, parse)
        seconds["parse"] = time.perf_counter() - started
        if "layout_seconds" in root.metadata and not cached:  # the layout pass inside "parse" (PyMuPDF)
            seconds["layout"] = float(root.metadata["layout_seconds"])
        started = time.perf_counter()
        chunks = list(chunker.iter_chunks(root))
        pages = int(root.info.page_count or 0)
        del root
        seconds["chunk"] = time.perf_counter() - started
        return Chunked(path, sha256, chunks, pages, seconds)
    except Exception as exc:  # one document's failure must not stop the run
        return _failed(exc, path, sha256)


def finish_document(staged: Chunked, config: JobConfig, embed_map: EmbedMap | None) -> DocResult:
    """The second half of :func:`document_result`: embed (``embed_map`` over
    :func:`embed_slices`) and tabulate a chunked document; never raises."""
    from ..io.chunk_codec import chunk_to_row
    from .rows import chunk_rows, embed_text

    seconds = dict(staged.seconds)
    try:
        vectors = None
        cut = 0
        if embed_map is not None:
            started = time.perf_counter()
            if staged.chunks:
                count, window = embed_window(config.embed)
                fitted = [embed_text(chunk_to_row(c), count, window) for c in staged.chunks]
                cut = sum(1 for _, beyond in fitted if beyond)
                vectors = embed_document([text for text, _ in fitted], embed_map)
            seconds["embed"] = time.perf_counter() - started
        started = time.perf_counter()
        table = chunk_rows(
            staged.chunks,
            source_path=staged.path,
            source_sha256=staged.sha256,
            config_fingerprint=config.config_fingerprint,
            embeddings=vectors,
            dim=EMBED_DIMS.get(config.embed),
        )
        seconds["rows"] = time.perf_counter() - started
        return DocResult("done", staged.path, staged.sha256, table=table, pages=staged.pages, chunks=len(staged.chunks),
                         seconds=seconds, embed_cut=cut)
    except Exception as exc:  # one document's failure must not stop the run
        return _failed(exc, staged.path, staged.sha256)


def document_result(
    path: str, sha256: str, config: JobConfig, parse: Callable[..., Any], chunker: Any, embed_map: EmbedMap | None
) -> DocResult:
    """Parse, chunk, embed (``embed_map`` over :func:`embed_slices`) and tabulate one PDF; never
    raises. Shared by a worker's whole-document task and the parent's page-split path."""
    staged = parse_and_chunk(path, sha256, config, parse, chunker)
    return staged if isinstance(staged, DocResult) else finish_document(staged, config, embed_map)


def setup_status() -> tuple[str, str] | None:
    """Pool task: this worker's setup error as (type, message), or None."""
    exc = _State.setup_error
    return None if exc is None else (type(exc).__name__, str(exc))


def process_document(path: str, sha256: str) -> DocResult:
    """Pool task: parse, chunk and embed one whole PDF in this worker process; never raises."""
    if _State.setup_error is not None:
        exc = _State.setup_error
        return DocResult("setup-error", path, sha256, error_type=type(exc).__name__, message=str(exc))
    config = _State.config
    assert config is not None, "process_document before setup()"
    embedder = _State.embedder
    embed_map: EmbedMap | None = None if embedder is None else (lambda slices: map(embedder, slices))
    return document_result(path, sha256, config, _State.parser.parse, _State.chunker, embed_map)
