"""The viewer's cache of rendered pages and PDFs: a :class:`~grounded.runtime.bounded.BoundedCache`
of ``bytes`` values bounded in bytes (the sum of the cached values' lengths never exceeds
``max_bytes``; a value larger than the bound is not cached at all)."""

from __future__ import annotations

from ..runtime.bounded import BoundedCache

__all__ = ["BytesLRU"]


class BytesLRU(BoundedCache[bytes]):
    """``key -> bytes``, least recently used evicted first, at most ``max_bytes`` in total (0: off)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        super().__init__(max_bytes, weigh=len)

    @property
    def max_bytes(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        """Bytes held now (always ``<= max_bytes``)."""
        return self.total
