"""The chunker of a splitter's options: the one rule both adapters follow (:func:`build_chunker`),
and the input checks every grounded splitter makes before it cuts (:func:`refuse_raw_bytes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..chunking.base import ChunkingStrategy, strategy_class
from ..chunking.chunker import Chunker
from ..errors import ChunkingError, OptionError
from ..grounding.raw_text import refuse_raw_bytes
from ..text.assembly import BOX_MODES
from ..text.tokenizer import OFFLINE_ENCODINGS

__all__ = ["build_chunker", "refuse_raw_bytes", "OFFLINE_ENCODINGS"]


def build_chunker(
    strategy: str | ChunkingStrategy | Chunker,
    max_tokens: int | None,
    overlap: int | float,
    *,
    tokenizer: Any = None,
    box_mode: str = "auto",
    options: Mapping[str, Any] | None = None,
    owner: str = "the splitter",
    keywords: tuple[str, ...] = (),
) -> Chunker:
    """The chunker of a splitter's options - the one rule both adapters follow:

    * a built :class:`~grounded.chunking.Chunker` carries its tokenizer, box mode, overlap and
      options (only a matching ``max_tokens`` may be given);
    * a strategy object carries its size and overlap (a different ``max_tokens`` or any ``overlap``
      is refused: pass a new object or a name);
    * a strategy name takes ``max_tokens`` (default 256), ``overlap`` and the strategy's declared
      options; an option it does not declare is an :class:`~grounded.errors.OptionError` naming what
      ``owner`` accepts (its own ``keywords`` and the strategy's options).
    """
    options = dict(options or {})
    if box_mode not in BOX_MODES:
        raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
    if isinstance(strategy, Chunker):
        if tokenizer is not None or options or box_mode != "auto" or overlap:
            raise ChunkingError("a Chunker carries its own tokenizer, box mode, overlap and options: pass only chunk_size (or nothing)")
        if max_tokens is not None and max_tokens != strategy.max_tokens:
            raise ChunkingError(f"chunk_size={max_tokens} differs from the Chunker's max_tokens={strategy.max_tokens}")
        return strategy
    if isinstance(strategy, ChunkingStrategy):
        if max_tokens is not None and max_tokens != strategy.max_tokens:
            raise ChunkingError(
                f"max_tokens={max_tokens} differs from the given {type(strategy).__name__} (max_tokens={strategy.max_tokens}); "
                "pass a new strategy object or a strategy name"
            )
        if overlap and overlap != strategy.overlap:
            raise ChunkingError("a strategy object carries its own overlap: do not pass chunk_overlap")
        if options:
            raise ChunkingError("strategy options cannot be combined with a strategy object")
        return Chunker(strategy, tokenizer=tokenizer, box_mode=box_mode)
    if not isinstance(strategy, str):
        raise ChunkingError(f"strategy must be a name, a ChunkingStrategy or a Chunker, got {type(strategy).__name__}")
    declared = strategy_class(strategy).options
    unknown = set(options) - {o.name for o in declared or ()}
    if declared is not None and unknown:
        accepted = ", ".join(o.name for o in declared) or "(none)"
        raise OptionError(
            f"strategy {strategy!r}", ", ".join(sorted(unknown)),
            f"is not a keyword of {owner}; it accepts {', '.join(keywords)} and the options of strategy {strategy!r}: {accepted}",
        )
    return Chunker(strategy, 256 if max_tokens is None else max_tokens, overlap, tokenizer=tokenizer, box_mode=box_mode, **options)
