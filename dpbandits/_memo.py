"""A memo keyed by object identity, for immutable objects too large to hash cheaply (a
ledger of ten thousand privacy events): its value is found by ``id`` instead of a digest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class IdentityMemo:
    """``compute(obj)`` remembered per object: ``get(obj, compute)`` computes it the first
    time it meets ``obj`` and returns the kept value for that very object afterwards (an equal
    but distinct object is computed again). Each entry keeps its object alive, so its ``id``
    is not reused while the entry exists; past ``maxsize`` entries the memo starts afresh.
    Only for objects nothing mutates."""

    def __init__(self, maxsize: int = 16) -> None:
        self.maxsize = maxsize
        self._entries: dict[int, tuple[Any, Any]] = {}

    def get(self, obj: Any, compute: Callable[[Any], Any]) -> Any:
        kept = self._entries.get(id(obj))
        if kept is None or kept[0] is not obj:
            if len(self._entries) >= self.maxsize:
                self._entries.clear()
            kept = self._entries[id(obj)] = (obj, compute(obj))
        return kept[1]

    def clear(self) -> None:
        self._entries.clear()
