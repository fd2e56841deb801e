"""The virtual clock: what is due when, in a fixed order.

Timers due at the same instant fire in the order they were set, so a run is
the same every time; a timer carries the callable to run, so the agenda needs
to know nothing about who set it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Agenda"]


@dataclass
class Agenda:
    now: float = 0.0
    _timers: list[tuple[float, int, Callable[[], None]]] = field(default_factory=list)
    _serial: int = 0
    _cancelled: set[int] = field(default_factory=set)

    def at(self, when: float, action: Callable[[], None]) -> int:
        """Run ``action`` at virtual time ``when`` (now, if ``when`` has passed); the timer's
        number, for ``cancel``."""
        self._serial += 1
        heapq.heappush(self._timers, (max(when, self.now), self._serial, action))
        return self._serial

    def cancel(self, timer: int) -> None:
        """The timer will not run, nor keep the run going until its time."""
        self._cancelled.add(timer)

    def next_time(self) -> float | None:
        self._drop_cancelled()
        return self._timers[0][0] if self._timers else None

    def _drop_cancelled(self) -> None:
        timers, cancelled = self._timers, self._cancelled
        while timers and cancelled and timers[0][1] in cancelled:
            cancelled.discard(heapq.heappop(timers)[1])

    def advance(self, to: float) -> None:
        self.now = to

    def fire_due(self) -> int:
        """Run every timer due by now (including ones they set for now); how many ran."""
        fired = 0
        timers = self._timers
        while timers and timers[0][0] <= self.now:
            _, serial, action = heapq.heappop(timers)
            if serial in self._cancelled:
                self._cancelled.discard(serial)
                continue
            action()
            fired += 1
        return fired
