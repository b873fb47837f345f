"""Reciprocal-rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) of ranked lists of ids.

``score(d) = Σ_lists 1 / (K + rank_list(d))`` with 1-based ranks, summed over the lists that
contain ``d`` (a list that does not contain it adds nothing). ``K = 60``, the paper's constant:
it damps the weight of the very first ranks, so a chunk ranked well by both the full-text and the
vector list beats one ranked first by a single list. Scores only use ranks, so BM25 scores and
cosine similarities never need to be put on one scale.

Ties (equal fused score) are broken by the best rank the id reached in any list, then by the order
of the lists given, so the fused order is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RRF_K", "reciprocal_rank_fusion"]

#: the RRF constant (Cormack et al. 2009)
RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """``(id, fused score)`` pairs, best first, of the ids in ``rankings`` (each list best first;
    an id repeated within one list counts at its first rank)."""
    if k < 0:
        raise ValueError(f"the RRF constant must be >= 0, got {k}")
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}
    for which, ranking in enumerate(rankings):
        seen: set[str] = set()
        for rank, item in enumerate(ranking, 1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, (rank, which)), (rank, which))
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]]))
