"""What one worker process does with one document: parse -> chunk -> (embed) -> Arrow table.

A worker process builds its parser, chunker and embedder once (:func:`init_worker`, the pool's
initializer) and then takes one document per task (:func:`process_document`). The PyMuPDF layout
model runs with one ONNX Runtime thread per process (no busy-waiting threads), so ``K`` worker
processes use ``K`` cores without fighting; every worker exits when its parent dies
(:func:`grounded.parsers._process.die_with_parent`).

Errors never escape a task: a :class:`~grounded.errors.GroundedError` (corrupt, encrypted,
image-only PDF, ...) or any other exception comes back as an ``error`` result naming its type.
A failure to set the worker up (missing extra, unknown parser) comes back as ``setup-error``:
the parent stops the job, since every document would fail the same way.
"""

from __future__ import annotations

import logging
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GroundedError
from ..parsers._process import ParentInfo, die_with_parent

log = logging.getLogger(__name__)

#: sentences per MiniLM batch
EMBED_BATCH = 64


@dataclass(frozen=True)
class JobConfig:
    """Everything a worker needs to turn a PDF into rows (picklable)."""

    parser: str = "pymupdf"
    strategy: str = "recursive"
    max_tokens: int = 256
    overlap: int | float = 0
    embed: str = "none"
    config_fingerprint: str = ""


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


class _State:
    config: JobConfig | None = None
    parser: Any = None
    chunker: Any = None
    embedder: Any = None
    setup_error: BaseException | None = None


def build_parser(name: str) -> Any:
    """The parser of a worker process: PyMuPDF with one layout thread (processes don't fight)."""
    from ..parsers import get_parser

    if name == "pymupdf":
        with warnings.catch_warnings():
            # a process that already loaded the model (workers=1 in-process use) keeps its threads
            warnings.filterwarnings("ignore", message="layout_threads=.*ignored")
            return get_parser(name, layout_threads=1)
    return get_parser(name)


def build_chunker(config: JobConfig) -> Any:
    from ..chunking import Chunker

    return Chunker(config.strategy, config.max_tokens, config.overlap)


def build_embedder(name: str) -> Any:
    if name == "none":
        return None
    if name != "minilm":
        raise ValueError(f"embed must be 'minilm' or 'none', got {name!r}")
    from ..chunking.strategies.semantic import minilm_embedder

    return minilm_embedder(batch_size=EMBED_BATCH)


def setup(config: JobConfig) -> None:
    """Build this process's parser, chunker and embedder (once)."""
    _State.config = config
    _State.parser = build_parser(config.parser)
    _State.chunker = build_chunker(config)
    if config.embed != "none":
        try:
            import torch

            torch.set_num_threads(1)  # one core per worker process
        except ImportError:  # the embedder reports the missing extra itself
            pass
    _State.embedder = build_embedder(config.embed)


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


def process_document(path: str, sha256: str) -> DocResult:
    """Parse, chunk and embed one PDF in this worker process; never raises."""
    if _State.setup_error is not None:
        exc = _State.setup_error
        return DocResult("setup-error", path, sha256, error_type=type(exc).__name__, message=str(exc))
    config = _State.config
    assert config is not None, "process_document before setup()"
    from .rows import chunk_rows

    seconds: dict[str, float] = {}
    try:
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # per-page warnings are in the parse metadata
            root = _State.parser.parse(Path(path))
        seconds["parse"] = time.perf_counter() - started
        started = time.perf_counter()
        chunks = list(_State.chunker.iter_chunks(root))
        pages = int(root.metadata.get("page_count") or 0)
        del root
        seconds["chunk"] = time.perf_counter() - started
        vectors = None
        if _State.embedder is not None:
            started = time.perf_counter()
            vectors = _State.embedder([c.content for c in chunks]) if chunks else None
            seconds["embed"] = time.perf_counter() - started
        started = time.perf_counter()
        table = chunk_rows(
            chunks,
            source_path=path,
            source_sha256=sha256,
            config_fingerprint=config.config_fingerprint,
            embeddings=vectors,
        )
        seconds["rows"] = time.perf_counter() - started
        return DocResult("done", path, sha256, table=table, pages=pages, chunks=len(chunks), seconds=seconds)
    except GroundedError as exc:
        return DocResult("error", path, sha256, error_type=type(exc).__name__, message=str(exc))
    except Exception as exc:  # any other failure of one document must not stop the run
        log.debug("ingest: %s failed:\n%s", path, traceback.format_exc())
        return DocResult("error", path, sha256, error_type=type(exc).__name__, message=f"{path}: {exc}")
