"""A thread-safe least-recently-used cache of ``bytes`` values bounded in bytes (the viewer's rendered
pages and PDFs): the sum of the cached values' lengths never exceeds ``max_bytes``; a value larger
than the bound is not cached at all."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["BytesLRU"]


class BytesLRU:
    """``key -> bytes``, least recently used evicted first, at most ``max_bytes`` in total (0: off)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> bytes | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: bytes) -> None:
        size = len(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old)
            if size > self.max_bytes:
                return
            self._items[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= len(evicted)

    @property
    def nbytes(self) -> int:
        """Bytes held now (always ``<= max_bytes``)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
