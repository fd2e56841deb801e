"""A work queue of keys, as client-go's: coalescing, one worker per key, delays and backoff.

A key added many times before a worker takes it is handled once, with all the
requests that came with it, in order. A key being handled is never handed to a
second worker; adding it meanwhile queues it again for when the first is done.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["WorkQueue"]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


class WorkQueue(Generic[K, R]):
    def __init__(self, *, base_delay: float = 0.2, max_delay: float = 60.0) -> None:
        self._order: OrderedDict[K, None] = OrderedDict()
        """Keys ready for a worker, oldest first: an ordered set whose first key is taken
        in O(1) (a dict's first key is found past every slot emptied before it)."""
        self._requests: dict[K, list[R]] = {}
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._wakeup = asyncio.Event()
        self.base_delay = base_delay
        self.max_delay = max_delay

    def __len__(self) -> int:
        return len(self._order)

    def add(self, key: K, *requests: R) -> None:
        self._requests.setdefault(key, []).extend(requests)
        if key not in self._processing:
            self._order[key] = None
            self._wakeup.set()

    def add_at(self, key: K, at: float, *requests: R) -> None:
        """Add at wall-clock time ``at`` (seconds since the epoch); the earliest time wins
        for plain requeues, and a delayed request always gets its own timer."""
        delay = at - time.time()
        if delay <= 0:
            self.add(key, *requests)
            return
        loop = asyncio.get_running_loop()
        if requests:
            loop.call_later(delay, lambda: self.add(key, *requests))
            return
        current = self._timers.get(key)
        if current is not None:
            if current[0] <= at:
                return
            current[1].cancel()
        handle = loop.call_later(delay, self._fire, key)
        self._timers[key] = (at, handle)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def retry(self, key: K, *requests: R) -> float:
        """Add again after an exponential delay that grows with each failure of this key."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay: float = min(self.base_delay * 2.0**failures, self.max_delay)
        asyncio.get_running_loop().call_later(delay, lambda: self.add(key, *requests))
        return delay

    def retries(self, key: K) -> int:
        """Failures of this key since it was last handled (client-go's NumRequeues)."""
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        """The key was handled: its next failure starts the backoff afresh."""
        self._failures.pop(key, None)

    async def get(self) -> tuple[K, list[R]]:
        """The next key and the requests gathered for it; call ``done`` when finished."""
        while not self._order:
            self._wakeup.clear()
            await self._wakeup.wait()
        key, _ = self._order.popitem(last=False)
        self._processing.add(key)
        return key, self._requests.pop(key, [])

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._requests:
            self._order[key] = None
            self._wakeup.set()
