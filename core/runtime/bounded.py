"""One bounded, thread-safe least-recently-used cache for the package's in-process memos (parse
trees of Documents, grounders, span boxers): at most ``size`` entries, the least recently used
dropped first. ``functools.lru_cache`` does not fit them: their keys are objects held by the
caller (trees by identity, references, configurations) and several callers share one cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["BoundedCache"]

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """``get``/``put``/``get_or_make`` over at most ``size`` entries (LRU order, lock-protected).
    ``get_or_make`` builds a missing value outside the lock (two threads may build the same value
    once each; the later one is kept), so a slow build never blocks other keys."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> V:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        value = self.get(key)
        return value if value is not None else self.put(key, make())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items
