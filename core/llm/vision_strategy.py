"""``vision``: seed 001's vision-guided batch chunker as a strategy (engine: :mod:`grounded.llm.vision`).

Its chunks are texts a multimodal model wrote, grounded in the document afterwards, not token
ranges of the stream: the chunker asks :meth:`VisionStrategy.chunks` for them (the grounded-text
hook of :class:`~grounded.chunking.Chunker`); :meth:`groups` is not available.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..chunking.base import ChunkingStrategy, Option, TokenGroup
from ..errors import ChunkingError
from ..model.chunk import Chunk
from ..model.elements import ParsingResult
from ..runtime.cloud import RetryPolicy
from ..text.assembly import ChunkAssembler
from ..text.stream import TokenStream
from .settings import GenerationSettings
from .spec import MODEL_OPTIONS


class VisionStrategy(ChunkingStrategy):
    """``Chunker("vision", max_tokens=..., llm=client)``; options: ``model`` (Gemini model name for a
    google-genai client), ``batch_size`` (4), ``dpi`` (150), ``pdf`` (path/bytes when the tree has no
    readable source), ``password``, ``retry`` (:class:`~grounded.runtime.cloud.RetryPolicy`), ``sleep``,
    ``generation`` (:class:`~grounded.llm.GenerationSettings` over seed 001's temperature 0.1),
    ``retries`` (re-asks of a batch whose answer holds no chunk, default 1)."""

    #: fingerprint name, frozen (its module when chunk ids were first issued; see text.ids.class_identity)
    IDENTITY = "grounded.chunking.strategies.vision.VisionStrategy"

    name = "vision"
    supports_overlap = False  # the model's chunks do not overlap (checked by the base class where it knows this flag)
    needs_model = True
    options = MODEL_OPTIONS + (
        Option("batch_size", int, 4, "pages per model request", low=1),
        Option("dpi", int, 150, "resolution of the page images sent to the model", low=36, high=600),
        Option("pdf", None, help="the PDF (path or bytes) when the tree has no readable source"),
        Option("password", str, None, "password of an encrypted PDF (the command line: --password)", secret=True, cli=False),
        Option("retries", int, 1, "re-asks of a batch whose answer holds no chunk", low=0),
    )

    def __init__(
        self,
        max_tokens: int = 256,
        overlap: int = 0,
        *,
        llm: Any = None,
        model: str | None = None,
        batch_size: int = 4,
        dpi: int = 150,
        pdf: Any = None,
        password: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        generation: GenerationSettings | Mapping[str, Any] | None = None,
        retries: int = 1,
    ) -> None:
        super().__init__(max_tokens, overlap)
        if self.overlap:  # a base class without the supports_overlap check
            raise ChunkingError("the vision strategy makes no overlapping windows: overlap must be 0")
        from .vision import VisionChunker

        self.engine = VisionChunker(llm, model, batch_size, dpi, pdf, password, retry, sleep, generation, retries)

    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        raise ChunkingError("vision chunks are model texts grounded in the document, not token ranges: use Chunker")

    def chunks(self, root: ParsingResult, assembler: ChunkAssembler) -> Iterator[Chunk]:
        return self.engine.chunks(root, assembler, self.max_tokens)

    def params(self) -> dict[str, Any]:
        """``max_tokens``, ``overlap`` and the engine's resolved options with the model's identity (the
        engine keeps the options, in the order chunk ids were first issued with)."""
        return {"max_tokens": self.max_tokens, "overlap": self.overlap, **self.engine.params()}
