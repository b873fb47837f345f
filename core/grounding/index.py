"""A k-gram index over a letter/digit stream: every position's k-gram hash, grouped and sorted so
that the occurrences of a query's k-grams inside any window of the document are found with binary
searches (no scan of the document per query)."""

from __future__ import annotations

import numpy as np

__all__ = ["KgramIndex", "kgram_hashes"]

_MUL = np.uint64(0x9E3779B97F4A7C15)
_LOCAL = 1 << 16  # windows up to this many positions are matched on their own slice of hashes  # odd 64-bit multiplier (arithmetic wraps mod 2**64)


def kgram_hashes(codes: np.ndarray, k: int) -> np.ndarray:
    """64-bit polynomial hash of every k-gram of ``codes`` (``len(codes) - k + 1`` values)."""
    n = len(codes) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    c = codes.astype(np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):
            h = h * _MUL + c[j : j + n] + np.uint64(1)
    return h


class KgramIndex:
    """Occurrences of every k-gram of a stream of length ``n``.

    ``keys`` holds ``group * (n + 1) + position`` sorted, where ``group`` numbers the distinct
    k-gram hashes (``uniq``); the positions of one k-gram inside ``[lo, hi)`` are one
    ``searchsorted`` pair away. Memory: three int64/uint64 arrays of the stream's length.
    """

    def __init__(self, codes: np.ndarray, k: int):
        self.k = k
        self.n = len(codes)
        hashes = kgram_hashes(codes, k)
        self.hashes = hashes  # by position: a window's k-grams are a slice (local lookups)
        self.uniq, inverse = np.unique(hashes, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        self.keys = inverse[order].astype(np.int64) * (self.n + 1) + order.astype(np.int64)
        self.positions = order.astype(np.int64)

    def lookup(
        self, query_hashes: np.ndarray, lo: int, hi: int, cap: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Seeds ``(query_pos, doc_pos)`` of the query k-grams occurring at positions ``[lo, hi)``.
        A k-gram occurring more than ``cap`` times in the window is skipped (boilerplate)."""
        empty = np.zeros(0, dtype=np.int64)
        if not len(query_hashes) or not len(self.uniq) or hi <= lo:
            return empty, empty
        if hi - lo <= _LOCAL:
            return self._lookup_window(query_hashes, lo, hi, cap)
        g = np.searchsorted(self.uniq, query_hashes)
        g_clip = np.minimum(g, len(self.uniq) - 1)
        found = self.uniq[g_clip] == query_hashes
        q = np.nonzero(found)[0]
        q = q[np.argsort(g_clip[q], kind="stable")]  # sorted needles: cache-friendly binary searches
        if not len(q):
            return empty, empty
        base = g_clip[q].astype(np.int64) * (self.n + 1)
        a = np.searchsorted(self.keys, base + lo, side="left")
        b = np.searchsorted(self.keys, base + hi, side="left")
        counts = b - a
        keep = (counts > 0) & (counts <= cap)
        q, a, counts = q[keep], a[keep], counts[keep]
        total = int(counts.sum())
        if not total:
            return empty, empty
        first = np.cumsum(counts) - counts
        idx = np.repeat(a - first, counts) + np.arange(total, dtype=np.int64)
        return np.repeat(q.astype(np.int64), counts), self.positions[idx]

    def _lookup_window(self, query_hashes: np.ndarray, lo: int, hi: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
        """Like :meth:`lookup` for a small window: sort the window's own k-gram hashes (cost
        independent of the document length, and cache-friendly)."""
        empty = np.zeros(0, dtype=np.int64)
        window = self.hashes[lo:hi]
        if not len(window):
            return empty, empty
        order = np.argsort(window, kind="stable")
        sorted_window = window[order]
        a = np.searchsorted(sorted_window, query_hashes, side="left")
        b = np.searchsorted(sorted_window, query_hashes, side="right")
        counts = b - a
        keep = (counts > 0) & (counts <= cap)
        q = np.nonzero(keep)[0].astype(np.int64)
        a, counts = a[keep], counts[keep]
        total = int(counts.sum())
        if not total:
            return empty, empty
        first = np.cumsum(counts) - counts
        idx = np.repeat(a - first, counts) + np.arange(total, dtype=np.int64)
        return np.repeat(q, counts), order[idx].astype(np.int64) + lo
