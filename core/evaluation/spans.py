"""Half-open character ranges ``(start, end)`` and the set arithmetic the retrieval metrics need."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Span", "union", "total", "covered", "intersection", "subtract", "overlaps"]

Span = tuple[int, int]


def union(spans: Iterable[Span]) -> list[Span]:
    """Sorted, disjoint cover of ``spans``; overlapping or touching ranges merge, empty ones vanish."""
    out: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def total(spans: Iterable[Span]) -> int:
    """Sum of lengths, duplicates counted as often as they occur (a multiset cardinality)."""
    return sum(max(0, end - start) for start, end in spans)


def covered(spans: Iterable[Span]) -> int:
    """Number of distinct characters in ``spans`` (a set cardinality)."""
    return total(union(spans))


def intersection(a: Iterable[Span], b: Iterable[Span]) -> list[Span]:
    """Characters in both ``a`` and ``b`` (as a disjoint, sorted span list)."""
    ua, ub = union(a), union(b)
    out: list[Span] = []
    i = j = 0
    while i < len(ua) and j < len(ub):
        lo = max(ua[i][0], ub[j][0])
        hi = min(ua[i][1], ub[j][1])
        if lo < hi:
            out.append((lo, hi))
        if ua[i][1] < ub[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Iterable[Span], b: Iterable[Span]) -> list[Span]:
    """Characters of ``a`` not in ``b`` (as a disjoint, sorted span list)."""
    ub = union(b)
    out: list[Span] = []
    for start, end in union(a):
        cur = start
        for bs, be in ub:
            if be <= cur or bs >= end:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            if cur >= end:
                break
        if cur < end:
            out.append((cur, end))
    return out


def overlaps(a: Span, b: Span, *, touching: bool = False) -> bool:
    """True when ``a`` and ``b`` share a character; with ``touching`` also when they only abut."""
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return lo <= hi if touching else lo < hi
