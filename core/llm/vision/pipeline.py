"""The batch loop of seed 001 §3.2: render b pages, ask the model with the previous batch's context,
read its chunks, merge continuations, ground everything."""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from grounded.errors import ChunkingError
from grounded.grounding.grounder import Grounder
from grounded.model.chunk import Chunk
from grounded.model.elements import ParsingResult
from grounded.text.assembly import ChunkAssembler

from .. import Model, RetryPolicy
from .assemble import ChunkBuilder
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
    (:class:`grounded.llm.Model`; tests pass a recording ``sleep``)."""

    llm: Any
    model: str | None = None
    batch_size: int = 4
    dpi: int = 150
    pdf: PDFInput | None = None
    password: str | None = None
    retry: RetryPolicy | None = None
    sleep: Callable[[float], None] = time.sleep
    vision_model: Model = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ChunkingError(f"batch_size must be a positive int, got {self.batch_size!r}")
        if isinstance(self.dpi, bool) or not isinstance(self.dpi, int) or not 36 <= self.dpi <= 600:
            raise ChunkingError(f"dpi must be an int in [36, 600], got {self.dpi!r}")
        self.vision_model = as_vision_model(self.llm, self.model, retry=self.retry, sleep=self.sleep)

    def params(self) -> dict[str, Any]:
        """What decides the chunks besides the document (part of the chunker fingerprint)."""
        return {
            "model": self.vision_model.identity,
            "batch_size": self.batch_size,
            "dpi": self.dpi,
            "prompt_sha256": hashlib.sha256(CHUNKING_PROMPT.encode()).hexdigest()[:16],
        }

    def model_chunks(self, root: ParsingResult) -> list[ModelChunk]:
        """Every batch's answer read, headings completed to 3 levels, continuations merged. The
        answers do not depend on ``max_tokens``: the last two documents' are reused when the same
        tree is chunked again with the same model and settings (an adapter re-chunking at a smaller
        size to make room for metadata asks the model once)."""
        key = (id(root), id(self.llm), self.model, self.batch_size, self.dpi, self.pdf if isinstance(self.pdf, str) else id(self.pdf))
        for k, r, _, answers in _RECENT:
            if k == key and r is root:
                return answers
        answers = self._ask(root)
        _RECENT.insert(0, (key, root, self.llm, answers))
        del _RECENT[_KEEP:]
        return answers

    def _ask(self, root: ParsingResult) -> list[ModelChunk]:
        name, data = source_pdf(root, self.pdf)
        page_count = int(root.metadata.get("page_count") or 0)
        batches: list[list[ModelChunk]] = []
        context: BatchContext | None = None
        headings: tuple[str, ...] = ()
        for batch in render_batches(name, data, self.batch_size, self.dpi, password=self.password):
            what = f"{name} pages {batch.pages[0]}-{batch.pages[-1]}"
            prompt = build_prompt(batch.pages, page_count or batch.pages[-1], context)
            answer = self.vision_model.complete(prompt, images=batch.images, what=what)
            chunks = []
            for mc in parse_response(answer, what):
                full, issue = complete_headings(mc.headings, headings)
                mc = replace(mc, headings=full, batch=batch.index, pages=batch.pages)
                chunks.append(mc.with_issue(issue) if issue else mc)
                headings = full
            batches.append(chunks)
            context = BatchContext(chunks[-1].to_markup(), chunks[-1].headings)
        return merge_batches(batches)

    def chunks(self, root: ParsingResult, assembler: ChunkAssembler, max_tokens: int) -> Iterator[Chunk]:
        """Grounded chunks of ``root`` in reading order; warns (:class:`VisionWarning`) about pages
        with text that no grounded chunk covers."""
        merged = self.model_chunks(root)
        grounder = Grounder(root, stream=assembler.stream, box_mode=assembler.box_mode)
        builder = ChunkBuilder(grounder, assembler, max_tokens)
        covered: set[int] = set()
        for mc in merged:
            for chunk in builder.build(mc):
                covered.update(chunk.metadata["pages"])
                yield chunk
        text_pages = {b.page for n in assembler.stream.doc.nodes if n.content.strip() for b in n.geom}
        missing = sorted(text_pages - covered)
        if missing:
            source = root.metadata.get("source")
            name = source.get("name") if isinstance(source, dict) else "document"
            warnings.warn(
                f"{name}: pages {missing} have text but no grounded vision chunk (skipped by the model, or rewritten)",
                VisionWarning,
                stacklevel=2,
            )
