"""Grounding: exact source boxes for text that grounded's chunker did not make.

``Grounder(root).ground(text)`` finds any text (another splitter's chunk, an LLM's rewrite, a quoted
sentence) in the document text of a parse tree and returns its character span(s), an alignment
score and the boxes the chunk assembly makes for those spans; texts that cannot be aligned well
enough are refused with a reason, never given invented boxes. See :mod:`.grounder`.
"""

from __future__ import annotations

from .grounder import Grounder, Grounding, GroundingStatus, ground, ground_quote
from .normalize import alnum_text, strip_markup

__all__ = ["Grounder", "Grounding", "GroundingStatus", "ground", "ground_quote", "alnum_text", "strip_markup"]
