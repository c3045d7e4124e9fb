"""A least-recently-used cache bounded twice: by its number of entries and by their total
size (a weight the caller gives, e.g. the characters of a command line and the simple
commands its analysis holds), so 20,000 distinct command lines, or a few 200,000-character
ones, never grow memory past the bound.

Only pure text work is cached here (an analysis of a command line, the findings that do
not depend on the file system): what a symlink resolves to is never kept across decisions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLRU(Generic[K, V]):
    """At most ``max_entries`` entries of at most ``max_weight`` in all; the entry just put
    is always kept (one decision reuses what it made, however big), the least recently used
    ones are dropped first. Thread-safe."""

    def __init__(self, max_entries: int, max_weight: int) -> None:
        if max_entries < 1 or max_weight < 1:
            raise ValueError("a cache needs room for one entry")
        self.max_entries = max_entries
        self.max_weight = max_weight
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._data.get(key)
            if found is None:
                return None
            self._data.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V, weight: int) -> None:
        weight = max(1, weight)
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._data[key] = (value, weight)
            self._weight += weight
            data = self._data
            while len(data) > 1 and (
                len(data) > self.max_entries or self._weight > self.max_weight
            ):
                _, (_, dropped) = data.popitem(last=False)
                self._weight -= dropped

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._data)

    @property
    def weight(self) -> int:
        """The total weight of the entries held."""
        return self._weight
