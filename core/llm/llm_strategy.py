"""LLM semantic chunking (Chroma's ``LLMSemanticChunker``, Smith & Troynikov 2024, seed 003).

The document is split into small pieces (at most ``piece_tokens`` tokens, default 50, with the
recursive delimiter splitter). Pieces are numbered from 1 and shown to a language model wrapped in
``<|start_chunk_X|>`` / ``<|end_chunk_X|>`` markers, a window at a time (pieces are added until the
window holds more than ``window_tokens`` tokens, default 800). The model answers
``split_after: 3, 5``: a chunk ends after each listed piece. The next window starts after the last
split. When at most four pieces are left they join the last chunk without a call (as Chroma does).
A run of pieces above ``max_tokens`` is re-split by the recursive splitter.

The model is injected (``llm=``): anything :func:`grounded.llm.as_model` accepts (a LlamaIndex
``LLM``, a LangChain chat model, a google-genai client with ``model=``, or a callable ``prompt -> str``
that gets the system and user text joined); none of those libraries is imported here. An answer
without a ``split_after:`` line (an empty one included), with numbers outside the window or not
ascending, or cut off at the output limit, is asked again (``retries`` times): the re-ask names the
error and the answer and says what is expected (:func:`grounded.llm.reask_prompt`; Chroma names
only the rejected numbers), with a temperature nudged up (:func:`grounded.llm.nudged`), since
near-greedy decoding answers the same prompt the same way. After that the valid numbers are kept and,
if none is left, the window ends one chunk. Every such repair is logged as a warning, so the output is
deterministic for given answers and the loop always advances.

Generation settings (``generation=``, :class:`~grounded.llm.GenerationSettings`) default to
Chroma's: temperature 0.2, a 200-token answer (:data:`grounded.llm.LLM_CHUNKER_SETTINGS`); given
fields override them, and they are part of the fingerprint (``params()["llm"]``).
Rate limits, server errors and timeouts are retried with backoff (``retry``, ``sleep``); a call that
still fails is a :class:`~grounded.errors.ModelCallError`, a reply that is not text or was cut off a
:class:`~grounded.errors.ModelOutputError`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..chunking.base import Option, is_int
from ..chunking.pieces import Document, Piece, PieceStrategy
from ..errors import ChunkingError
from . import LLM_CHUNKER_SETTINGS, GenerationSettings, Model, RetryPolicy, as_model, nudged, reask_prompt
from .replies import CutOffAnswerError
from .settings import effective_settings
from .spec import MODEL_OPTIONS

__all__ = ["LLMStrategy", "parse_split_after", "check_split_after", "SYSTEM_PROMPT"]

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You split a text into sections that each keep to one theme. The text is cut into numbered "
    "pieces, each wrapped in <|start_chunk_X|> and <|end_chunk_X|> tags where X is the piece number. "
    "Name the pieces after which a new section should begin, so that consecutive pieces on the same "
    "theme stay together. Example: if pieces 1 and 2 belong together and piece 3 starts a new theme, "
    "split after piece 2. List the numbers in ascending order. Answer in the form 'split_after: 3, 5'."
)
_TAIL = 4  # at most this many pieces left over join the last chunk without asking the model
_SPLIT_LINE = re.compile(r"split_after\s*:?(.*)", re.IGNORECASE)


def user_prompt(window: str, after: int) -> str:
    return (
        f"CHUNKED_TEXT: {window}\n\n"
        "Answer only with the numbers of the pieces after which a split should occur. Give at least one "
        f"split. The numbers must be in ascending order and larger than {after}."
    )


def expected_answer(current: int, last: int) -> str:
    """What a valid answer for the window of pieces ``current+1 .. last`` looks like (for re-asks)."""
    return (f"one line 'split_after: N, M, ...' naming piece numbers in strictly ascending order, "
            f"each larger than {current} and at most {last}")


def check_split_after(numbers: list[int] | None, current: int, last: int) -> str | None:
    """What is wrong with the numbers of an answer for pieces ``current+1 .. last`` (None: valid)."""
    if numbers is None:
        return "it has no 'split_after:' line"
    if not numbers:
        return "its 'split_after:' line names no piece number"
    if numbers != sorted(set(numbers)):
        return f"the numbers {numbers} are not in strictly ascending order"
    if numbers[0] <= current:
        return f"{numbers[0]} is not larger than {current}"
    if numbers[-1] > last:
        return f"{numbers[-1]} is past the last piece shown ({last})"
    return None


def parse_split_after(answer: str) -> list[int] | None:
    """The numbers of the last ``split_after:`` line of ``answer`` (None: no such line)."""
    found = None
    for line in answer.splitlines():
        m = _SPLIT_LINE.search(line)
        if m:
            found = m.group(1)
    return None if found is None else [int(x) for x in re.findall(r"\d+", found)]


class LLMStrategy(PieceStrategy):
    """Parameters: ``llm`` (required to chunk; see the module doc), ``model`` (the Gemini model of a
    google-genai client), ``piece_tokens`` (default 50, at most N), ``window_tokens`` (default 800),
    ``retries`` (re-asks after an invalid answer, default 1), ``retry`` / ``sleep`` (backoff of
    failed calls, :class:`~grounded.llm.RetryPolicy`), ``generation`` (temperature / output
    tokens / seed over the defaults :data:`~grounded.llm.LLM_CHUNKER_SETTINGS`)."""

    #: fingerprint name, frozen (its module when chunk ids were first issued; see text.ids.class_identity)
    IDENTITY = "grounded.chunking.strategies.llm.LLMStrategy"
    #: the generation settings under ``generation=`` (Chroma's LLMSemanticChunker: temperature 0.2, 200 tokens)
    generation_defaults: GenerationSettings = LLM_CHUNKER_SETTINGS

    name = "llm"
    piece_kind = "split"
    supports_overlap = False
    needs_model = True
    options = MODEL_OPTIONS + (
        Option("piece_tokens", int, None, "tokens per numbered piece (default: min(50, max-tokens))", low=1),
        Option("window_tokens", int, 800, "tokens of pieces shown to the model per request", low=1),
        Option("retries", int, 1, "re-asks after an invalid answer", low=0),
    )

    def __init__(
        self,
        max_tokens: int = 256,
        overlap: int = 0,
        llm: Any = None,
        piece_tokens: int | None = None,
        window_tokens: int = 800,
        retries: int = 1,
        model: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        generation: GenerationSettings | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(max_tokens, overlap)
        piece_tokens = min(50, self.max_tokens) if piece_tokens is None else piece_tokens
        if not is_int(piece_tokens) or not 1 <= piece_tokens <= max_tokens:
            raise ChunkingError(f"piece_tokens must be an int in [1, max_tokens], got {piece_tokens!r}")
        if not is_int(window_tokens) or window_tokens < 1:
            raise ChunkingError(f"window_tokens must be a positive int, got {window_tokens!r}")
        if not is_int(retries) or retries < 0:
            raise ChunkingError(f"retries must be a non-negative int, got {retries!r}")
        self.piece_tokens = int(piece_tokens)
        self.window_tokens = int(window_tokens)
        self.retries = int(retries)
        self.llm = llm
        self.generation = effective_settings(self.generation_defaults, llm, generation)
        self._model: Model | None = None
        if llm is not None:
            self._model = as_model(llm, model=model, retry=retry, sleep=sleep, settings=self.generation)
        #: counts of the last document: model calls, rejected answers, repaired windows
        self.stats: dict[str, int] = {}

    def piece_options(self) -> dict[str, Any]:
        return {"max_tokens": self.piece_tokens}

    def params(self) -> dict[str, Any]:
        """The declared options' values (:meth:`ChunkingStrategy.params`) and the model's identity."""
        return {**super().params(), "llm": self._model.identity if self._model is not None else None}

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterator[tuple[int, int]]:
        ends = self.split_points(pieces)
        start = 0
        for end in ends:
            yield from doc.split(pieces[start].start, pieces[end - 1].end, self.max_tokens)
            start = end

    def split_points(self, pieces: Sequence[Piece]) -> list[int]:
        """Piece counts after which a chunk ends (1-based piece numbers, ascending, the last = P)."""
        total = len(pieces)
        self.stats = {"calls": 0, "rejected": 0, "repaired": 0}
        if total and self._model is None:
            raise ChunkingError("the llm strategy needs a model: Chunker('llm', llm=...) "
                                "(LlamaIndex LLM, LangChain chat model or callable)")
        splits: list[int] = []
        current = 0  # pieces 1..current are chunked
        while current < total - _TAIL:
            last, parts, tokens = current, [], 0
            while last < total and (last == current or tokens <= self.window_tokens):
                piece = pieces[last]
                last += 1
                tokens += piece.tokens
                parts.append(f"<|start_chunk_{last}|>{piece.text}<|end_chunk_{last}|>")
            chosen = self._ask("".join(parts), current, last)
            splits.extend(chosen)
            current = chosen[-1]
        if not splits or splits[-1] != total:
            splits.append(total)
        return [s for s in splits if s > 0]

    def _ask(self, window: str, current: int, last: int) -> list[int]:
        """Valid split numbers in ``(current, last]`` for one window (see the module doc)."""
        assert self._model is not None
        base = user_prompt(window, current)
        prompt = base
        numbers: list[int] | None = None
        for attempt in range(self.retries + 1):
            self.stats["calls"] += 1
            what = f"llm chunker: pieces {current + 1}-{last}"
            try:
                answer = self._model.complete(prompt, system=SYSTEM_PROMPT, what=what, allow_empty=True,
                                              settings=nudged(self._model.settings, attempt))
            except CutOffAnswerError as exc:  # cut off at the output limit, or blocked: an invalid answer too
                answer, numbers, error = "", None, exc.cause
            else:
                numbers = parse_split_after(answer)
                error = check_split_after(numbers, current, last) or ""
                if not error:
                    assert numbers is not None
                    return numbers
            self.stats["rejected"] += 1
            log.warning("llm chunker: invalid answer %r for pieces %d-%d: %s", answer.strip()[:200], current + 1, last, error)
            prompt = reask_prompt(base, answer, error, expected_answer(current, last))
        self.stats["repaired"] += 1
        kept = sorted({n for n in numbers or () if current < n <= last})
        if kept:
            log.warning("llm chunker: kept splits %s of the last answer for pieces %d-%d", kept, current + 1, last)
            return kept
        log.warning("llm chunker: no valid split for pieces %d-%d; the window ends one chunk", current + 1, last)
        return [last]
