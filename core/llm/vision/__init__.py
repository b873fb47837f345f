"""Vision-guided batch chunking (seed 001 §3): pages rendered in batches, chunked by an injected
multimodal model, continued chunks merged across batches, every chunk grounded in the parse tree.

``VisionChunker(llm).chunks(root, assembler, tokenizer, max_tokens)`` is the engine behind the
``vision`` chunking strategy (``Chunker("vision", max_tokens=..., llm=client)``). Modules:
:mod:`.render` (PDF pages -> PNG batches), :mod:`.prompt` (the seed's prompt + context),
:mod:`.models` (the public names of the vision model adapter, built on :mod:`grounded.llm`),
:mod:`.response` (answer -> model chunks), :mod:`.merge` (continuations across batches),
:mod:`.assemble` (grounding -> :class:`~grounded.model.Chunk` within the token bound) and
:mod:`.pipeline` (the batch loop). See docs/vision.md.
"""

from __future__ import annotations

from .models import VisionModel, as_vision_model
from .pipeline import VisionChunker, VisionWarning
from .response import ModelChunk, parse_response

__all__ = ["VisionChunker", "VisionWarning", "VisionModel", "as_vision_model", "ModelChunk", "parse_response"]
