"""The evaluation lab's errors (every module of the lab raises them; this one imports none of them)."""

from __future__ import annotations

from ..errors import GroundedError

__all__ = ["EvaluationError", "EvaluationDataError"]


class EvaluationError(GroundedError, ValueError):
    """An evaluation cannot run as asked (unknown parser, options that do not fit together)."""


class EvaluationDataError(EvaluationError):
    """Reference or prediction data would give a meaningless score: a reference set that comes out
    empty, or boxes of the two sides that never meet on a page (a coordinate/scale mismatch)."""
