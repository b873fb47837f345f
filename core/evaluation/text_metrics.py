"""Edit distances for content extraction (thesis §3.5.2).

* :func:`edit_distance` – Levenshtein distance (unit costs) between strings or sequences.
* :func:`ned` – OmniDocBench's normalized edit distance ``d / max(|a|, |b|)`` in [0, 1]; this is
  what the content tables report (0 = identical; two empty inputs score 0).
* :func:`n_gld` – the normalized generalized Levenshtein distance of Yujian & Bo (thesis eq. 3.8),
  ``2·GLD / (α(|a| + |b|) + GLD)`` with unit costs (α = 1), a metric in [0, 1].
* :func:`normalize_text` – what both sides go through before comparison: Markdown/HTML markup,
  whitespace and punctuation removed (OmniDocBench compares such "normalized lines").
* :func:`hungarian` – the optimal one-to-one matching of a cost matrix that pairs blocks, tables
  and formulas by their distances.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import Any

from ..errors import BackendUnavailableError

__all__ = ["edit_distance", "ned", "n_gld", "normalize_text", "strip_markdown", "hungarian"]

_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MD_LINE_MARKERS = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+|\d{1,3}[.)][ \t]+)", re.MULTILINE)
_MD_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~|`)")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


@lru_cache(maxsize=1)
def _levenshtein() -> Any:
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError as exc:
        raise BackendUnavailableError("edit distances (rapidfuzz)", "eval") from exc
    return Levenshtein


def edit_distance(a: Sequence[Hashable] | str, b: Sequence[Hashable] | str) -> int:
    """Unit-cost Levenshtein distance (insertions, deletions, substitutions)."""
    return int(_levenshtein().distance(a, b))


def ned(a: Sequence[Hashable] | str, b: Sequence[Hashable] | str) -> float:
    """``edit_distance(a, b) / max(len(a), len(b))``; 0.0 when both are empty."""
    longest = max(len(a), len(b))
    return edit_distance(a, b) / longest if longest else 0.0


def n_gld(a: Sequence[Hashable] | str, b: Sequence[Hashable] | str) -> float:
    """Yujian & Bo's normalized GLD with unit costs: ``2d / (|a| + |b| + d)``; 0.0 for two empty inputs."""
    d = edit_distance(a, b)
    den = len(a) + len(b) + d
    return 2 * d / den if den else 0.0


def strip_markdown(text: str) -> str:
    """Remove Markdown/HTML syntax (images, link targets, heading/list/quote markers, emphasis, tags)."""
    text = _MD_IMAGE.sub(" ", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _HTML_TAG.sub(" ", text)
    text = _MD_LINE_MARKERS.sub("", text)
    return _MD_EMPHASIS.sub("", text)


def normalize_text(text: str) -> str:
    """NFKC, markup stripped, then only letters and digits kept (case kept)."""
    text = unicodedata.normalize("NFKC", text)
    return _NON_WORD.sub("", strip_markdown(text))


def hungarian() -> Any:
    """scipy's ``linear_sum_assignment`` (cost matrix -> matched row and column indices)."""
    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError as exc:
        raise BackendUnavailableError("content matching (scipy)", "eval") from exc
    return linear_sum_assignment
