"""The batch loop of seed 001 §3.2: render b pages, ask the model with the previous batch's context,
read its chunks, merge continuations, ground everything."""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from grounded.errors import ChunkingError, ModelOutputError, escape_controls
from grounded.grounding.grounder import Grounder
from grounded.model.chunk import Chunk
from grounded.model.elements import ParsingResult
from grounded.text.assembly import ChunkAssembler

from .. import VISION_SETTINGS, GenerationSettings, Model, RetryPolicy, nudged, reask_prompt
from ..settings import effective_settings
from .assemble import ChunkBuilder
from .lists import keep_lists_whole, list_runs
from .merge import merge_batches
from .models import as_vision_model
from .prompt import CHUNKING_PROMPT, BatchContext, build_prompt
from .render import PDFInput, render_batches, source_pdf
from .response import ModelChunk, complete_headings, parse_response

__all__ = ["VisionChunker", "VisionWarning"]


_RECENT: list[tuple[tuple[Any, ...], ParsingResult, Any, list[ModelChunk]]] = []  # (key, root, llm, answers)
_KEEP = 2  # documents whose model chunks are kept (strong refs, so the ids in the keys stay theirs)


class VisionWarning(UserWarning):
    """Pages with text that no grounded chunk covers (the model skipped them or rewrote them)."""


@dataclass
class VisionChunker:
    """Seed 001's vision-guided chunker over one injected model (see :mod:`grounded.llm.vision`).

    ``batch_size`` pages (default 4) rendered at ``dpi`` go to the model per request; ``pdf`` (a
    path or bytes) when the tree does not record a readable source path; ``password`` for an
    encrypted PDF; ``retry``/``sleep``: backoff for rate limits (HTTP 429), timeouts and server errors
    (:class:`grounded.llm.Model`; tests pass a recording ``sleep``); ``generation``: temperature /
    output tokens / seed over seed 001's temperature 0.1 (:data:`grounded.llm.VISION_SETTINGS`);
    ``retries``: re-asks of a batch whose answer holds no chunk (default 1; the prompt names the error,
    the temperature is nudged: :func:`grounded.llm.nudged`)."""

    llm: Any
    model: str | None = None
    batch_size: int = 4
    dpi: int = 150
    pdf: PDFInput | None = None
    password: str | None = None
    retry: RetryPolicy | None = None
    sleep: Callable[[float], None] = time.sleep
    generation: GenerationSettings | Mapping[str, Any] | None = None
    retries: int = 1
    vision_model: Model = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ChunkingError(f"batch_size must be a positive int, got {self.batch_size!r}")
        if isinstance(self.dpi, bool) or not isinstance(self.dpi, int) or not 36 <= self.dpi <= 600:
            raise ChunkingError(f"dpi must be an int in [36, 600], got {self.dpi!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ChunkingError(f"retries must be a non-negative int, got {self.retries!r}")
        settings = effective_settings(VISION_SETTINGS, self.llm, self.generation)
        self.vision_model = as_vision_model(self.llm, self.model, retry=self.retry, sleep=self.sleep, settings=settings)

    def params(self) -> dict[str, Any]:
        """What decides the chunks besides the document (part of the chunker fingerprint)."""
        return {
            "model": self.vision_model.identity,
            "batch_size": self.batch_size,
            "dpi": self.dpi,
            "retries": self.retries,
            "prompt_sha256": hashlib.sha256(CHUNKING_PROMPT.encode()).hexdigest()[:16],
        }

    def model_chunks(self, root: ParsingResult) -> list[ModelChunk]:
        """Every batch's answer read, headings completed to 3 levels, continuations merged. The
        answers do not depend on ``max_tokens``: the last two documents' are reused when the same
        tree is chunked again with the same model and settings (an adapter re-chunking at a smaller
        size to make room for metadata asks the model once)."""
        key = (id(root), id(self.llm), self.vision_model.identity, self.batch_size, self.dpi,
               self.pdf if isinstance(self.pdf, str) else id(self.pdf))
        for k, r, _, answers in _RECENT:
            if k == key and r is root:
                return answers
        answers = self._ask(root)
        _RECENT.insert(0, (key, root, self.llm, answers))
        del _RECENT[_KEEP:]
        return answers

    def _ask(self, root: ParsingResult) -> list[ModelChunk]:
        name, data = source_pdf(root, self.pdf)
        page_count = int(root.info.page_count or 0)
        batches: list[list[ModelChunk]] = []
        context: BatchContext | None = None
        headings: tuple[str, ...] = ()
        for batch in render_batches(name, data, self.batch_size, self.dpi, password=self.password):
            what = f"{name} pages {batch.pages[0]}-{batch.pages[-1]}"
            prompt = build_prompt(batch.pages, page_count or batch.pages[-1], context)
            chunks = []
            for mc in self._read_batch(prompt, batch.images, what):
                full, issue = complete_headings(mc.headings, headings)
                mc = replace(mc, headings=full, batch=batch.index, pages=batch.pages)
                chunks.append(mc.with_issue(issue) if issue else mc)
                headings = full
            batches.append(chunks)
            context = BatchContext(chunks[-1].to_markup(), chunks[-1].headings)
        return merge_batches(batches)

    def _read_batch(self, prompt: str, images: tuple[bytes, ...], what: str) -> list[ModelChunk]:
        """The chunks of one batch's answer; an answer holding none is asked again (``retries``)."""
        current = prompt
        for attempt in range(self.retries + 1):
            answer = self.vision_model.complete(current, images=images, what=what, allow_empty=True,
                                                settings=nudged(self.vision_model.settings, attempt))
            try:
                return parse_response(answer, what)
            except ModelOutputError as exc:
                if attempt == self.retries:
                    raise
                current = reask_prompt(prompt, answer, exc.cause, "chunks in the format [CONTINUES]True|False|Partial"
                                       "[/CONTINUES] then [HEAD]main > section > chunk[/HEAD] then the chunk text")
        raise AssertionError("unreachable")  # pragma: no cover

    def chunks(self, root: ParsingResult, assembler: ChunkAssembler, max_tokens: int) -> Iterator[Chunk]:
        """Grounded chunks of ``root`` in reading order, a list split over chunks merged back or
        flagged ``list_split`` (:mod:`grounded.llm.vision.lists`); warns (:class:`VisionWarning`) about
        pages with text that no grounded chunk covers."""
        merged = self.model_chunks(root)
        grounder = Grounder(root, stream=assembler.stream, box_mode=assembler.box_mode)
        builder = ChunkBuilder(grounder, assembler, max_tokens)
        built = [chunk for mc in merged for chunk in builder.build(mc)]
        source = root.info.source
        label = str(source.get("name", "document")) if isinstance(source, dict) else "document"
        built = keep_lists_whole(built, list_runs(assembler.stream.doc), builder.merge, label)
        covered: set[int] = set()
        for index, chunk in enumerate(built):
            chunk.index = index
            covered.update(chunk.pages)
            yield chunk
        text_pages = {b.page for n in assembler.stream.doc.nodes if n.content.strip() for b in n.geom}
        missing = sorted(text_pages - covered)
        if missing:
            source = root.info.source
            name = source.get("name") if isinstance(source, dict) else "document"
            warnings.warn(
                f"{escape_controls(str(name))}: pages {missing} have text but no grounded vision chunk (skipped by the model, or rewritten)",
                VisionWarning,
                stacklevel=2,
            )
