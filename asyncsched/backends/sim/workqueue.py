"""The keys a simulated controller has to look at again: its work queue.

Kubernetes' controllers keep one such queue each: a key goes in once however many events
name it, and the controller reconciles it later. The simulator's controllers take the
whole queue at each sync and, unless they ask otherwise, reconcile in key order, so a
run does not depend on the order in which one instant's events arrived.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["WorkQueue"]


class WorkQueue:
    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[str, None] = {}

    def add(self, key: str) -> None:
        self._keys[key] = None

    def discard(self, key: str) -> None:
        self._keys.pop(key, None)

    def __bool__(self) -> bool:
        return bool(self._keys)

    def take(self, *, sort: bool = True) -> list[str]:
        """Every key queued, emptying the queue: sorted, or in the order they came."""
        keys = sorted(self._keys) if sort else list(self._keys)
        self._keys.clear()
        return keys

    def drain(self, reconcile: Callable[[str], object], *, sort: bool = True) -> bool:
        """Reconcile every key queued (keys queued meanwhile wait for the next sync);
        True if there was any."""
        if not self._keys:
            return False
        for key in self.take(sort=sort):
            reconcile(key)
        return True
