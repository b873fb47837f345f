"""The fusions of ``hybrid`` search: normalised-score fusion (the default, :func:`normalized_score_fusion`)
and reciprocal-rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) of ranked lists of ids.

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

__all__ = ["RRF_K", "TEXT_WEIGHT", "reciprocal_rank_fusion", "normalized_score_fusion"]

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


#: the weight of the full-text list in :func:`normalized_score_fusion` for ``hybrid`` search (the
#: vector list gets ``1 - TEXT_WEIGHT``): chosen by leave-one-corpus-out cross-validation over 11
#: corpora -- Chroma's 5 and the 6 PDFs of the development question set -- where every fold chose
#: 0.7 (``docs/results/search_fusion.md``; 0.8, chosen on Chroma alone, lost on the question set)
TEXT_WEIGHT = 0.7


def normalized_score_fusion(
    lists: Sequence[Sequence[tuple[str, float]]], weights: Sequence[float]
) -> list[tuple[str, float]]:
    """``(id, fused score)`` pairs, best first, of ``lists`` of ``(id, score)`` (each best first, higher
    scores better): each list's scores min-max normalised to 0..1 (a list whose scores are all equal
    gives 1.0), weighted by ``weights`` and summed over the lists holding the id (an id a list does
    not hold adds 0 from it; a repeated id counts at its first place). Unlike rank fusion, a list
    whose best hit stands far above its others keeps that lead. Ties: best rank reached, then list
    order (deterministic)."""
    if len(weights) != len(lists) or any(w < 0 for w in weights):
        raise ValueError(f"one weight >= 0 per list is needed, got {list(weights)} for {len(lists)} lists")
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}
    for which, (ranking, weight) in enumerate(zip(lists, weights)):
        if not ranking:
            continue
        values = [float(s) for _, s in ranking]
        low, high = min(values), max(values)
        seen: set[str] = set()
        for rank, (item, value) in enumerate(ranking, 1):
            if item in seen:
                continue
            seen.add(item)
            share = (value - low) / (high - low) if high > low else 1.0
            scores[item] = scores.get(item, 0.0) + weight * share
            best[item] = min(best.get(item, (rank, which)), (rank, which))
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]]))
