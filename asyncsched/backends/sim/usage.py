"""Time-integrated resource usage: how full the cluster was, and who used it."""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.model import Resource

__all__ = ["UsageMeter"]


@dataclass
class UsageMeter:
    """Integrates requested resources of running pods over virtual time."""

    capacity: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    integral: dict[str, float] = field(default_factory=dict)
    queue_integral: dict[str, dict[str, float]] = field(default_factory=dict)
    _queue_allocated: dict[str, Resource] = field(default_factory=dict)
    _running: dict[str, tuple[Resource, str]] = field(default_factory=dict)
    _last: float = 0.0

    def advance(self, now: float) -> None:
        span = now - self._last
        if span > 0:
            for name, value in self.allocated.items():
                self.integral[name] = self.integral.get(name, 0.0) + value * span
            for queue, used in self._queue_allocated.items():
                bucket = self.queue_integral.setdefault(queue, {})
                for name, value in used.items():
                    bucket[name] = bucket.get(name, 0.0) + value * span
        self._last = now

    def add_capacity(self, amount: Resource) -> None:
        self.capacity = self.capacity + amount

    def start(self, key: str, request: Resource, queue: str) -> None:
        self._running[key] = (request, queue)
        self.allocated = self.allocated + request
        self._queue_allocated[queue] = self._queue_allocated.get(queue, Resource()) + request

    def stop(self, key: str) -> None:
        entry = self._running.pop(key, None)
        if entry is None:
            return
        request, queue = entry
        self.allocated = self.allocated - request
        self._queue_allocated[queue] = self._queue_allocated[queue] - request

    def utilization(self, end: float) -> dict[str, float]:
        """Mean fraction of each resource's capacity in use over [0, end]."""
        if end <= 0:
            return {}
        return {
            name: self.integral.get(name, 0.0) / (total * end)
            for name, total in sorted(self.capacity.items())
            if total
        }
