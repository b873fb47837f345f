"""One bounded, thread-safe least-recently-used cache for the package's in-process memos (parse
trees of Documents, grounders, span boxers, the viewer's rendered pages): at most ``size`` entries (or weight), the least recently used
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
    """``get``/``put``/``get_or_make`` over at most ``size`` entries (LRU order, lock-protected) -
    or, with ``weigh``, entries whose weights (e.g. ``len`` of ``bytes``) sum to at most ``size``
    (a value heavier than ``size`` is not kept; ``size`` 0 keeps nothing). ``get_or_make`` builds a
    missing value outside the lock (two threads may build the same value once each; the later one
    is kept), so a slow build never blocks other keys. ``hits``/``misses`` count ``get``s."""

    def __init__(self, size: int, *, weigh: Callable[[V], int] | None = None) -> None:
        if size < (0 if weigh is not None else 1):
            raise ValueError(f"size must be >= {0 if weigh is not None else 1}, got {size}")
        self.size = size
        self._weigh = weigh
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: V) -> V:
        weight = self._weigh(value) if self._weigh is not None else 1
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= old[1]
            if weight > self.size:
                return value
            self._items[key] = (value, weight)
            self._total += weight
            while self._total > self.size:
                _, (_, evicted) = self._items.popitem(last=False)
                self._total -= evicted
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        value = self.get(key)
        return value if value is not None else self.put(key, make())

    @property
    def total(self) -> int:
        """The summed weight held now (the entry count without ``weigh``); always ``<= size``."""
        return self._total

    def discard(self, key: Hashable) -> None:
        """Forget ``key`` (nothing when it is not held)."""
        with self._lock:
            item = self._items.pop(key, None)
            if item is not None:
                self._total -= item[1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items
