"""Time-integrated resource usage: how full the cluster was, and who held it when it counted.

A queue's share of the cluster is its dominant share (the largest fraction of
any resource's capacity it holds, as DRF measures it); what it deserved is
read in that same resource. Shares are integrated only while the cluster is
contended between queues: two or more queues have pods waiting for room.
Then the split between them is the scheduler's doing; when only one queue
wants more, the others hold what they asked for and the split is the
workload's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.backends.sim.timeline import Timeline
from asyncsched.model import Resource
from asyncsched.model.resource import PODS

__all__ = ["GPU", "UsageMeter", "dominant_resource"]

GPU = "nvidia.com/gpu"


def dominant_resource(amount: Resource, capacity: Resource) -> tuple[str, float]:
    """The resource of which ``amount`` is the largest fraction of capacity, and that
    fraction (pods not counted); ``("", 0.0)`` for nothing."""
    best, share = "", 0.0
    for name, value in sorted(amount.items()):
        total = capacity.get(name)
        if total > 0 and name != PODS and value / total > share:
            best, share = name, value / total
    return best, share


@dataclass
class UsageMeter:
    """Integrates requested resources of running pods over virtual time."""

    capacity: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    integral: dict[str, float] = field(default_factory=dict)
    capacity_integral: dict[str, float] = field(default_factory=dict)
    """Per resource, the capacity there was, integrated over time: a node submitted late
    counts from when it came."""
    queue_integral: dict[str, dict[str, float]] = field(default_factory=dict)
    contended_time: float = 0.0
    held: dict[str, float] = field(default_factory=dict)
    """Per queue, the integral of its dominant share of the cluster while contended."""
    held_gpu: dict[str, float] = field(default_factory=dict)
    """Per queue, the integral of its share of the cluster's GPUs while contended."""
    deserved: dict[str, float] = field(default_factory=dict)
    """Per queue, the integral of the share it deserved (in the resource of its held share)
    while contended."""
    deserved_gpu: dict[str, float] = field(default_factory=dict)
    """Per queue, the integral of its deserved share of the cluster's GPUs while contended."""
    _deserved_now: dict[str, Resource] = field(default_factory=dict)
    _waiting: dict[str, int] = field(default_factory=dict)
    _contended: bool = False
    _queue_allocated: dict[str, Resource] = field(default_factory=dict)
    _running: dict[str, tuple[Resource, str, str]] = field(default_factory=dict)
    _last: float = 0.0
    timeline: Timeline | None = None
    """Every change as a point in time, when a plotted report asks for it."""

    def _changed(self) -> None:
        if self.timeline is not None:
            self.timeline.record(
                self._last,
                self.capacity,
                self.allocated,
                self._queue_allocated,
                self._deserved_now,
                self.allocated.get(GPU),
            )

    def advance(self, now: float) -> None:
        span = now - self._last
        if span > 0:
            for name, value in self.allocated.items():
                self.integral[name] = self.integral.get(name, 0.0) + value * span
            for name, value in self.capacity.items():
                self.capacity_integral[name] = self.capacity_integral.get(name, 0.0) + value * span
            for queue, used in self._queue_allocated.items():
                bucket = self.queue_integral.setdefault(queue, {})
                for name, value in used.items():
                    bucket[name] = bucket.get(name, 0.0) + value * span
            if self._contended:
                self._contended_span(span)
        self._last = now

    def waiting(self, now: float, queue: str, delta: int) -> None:
        """``delta`` pods of ``queue`` started (+) or stopped (-) waiting for room."""
        self.advance(now)
        self._waiting[queue] = self._waiting.get(queue, 0) + delta
        self._contended = sum(1 for n in self._waiting.values() if n > 0) >= 2

    def _contended_span(self, span: float) -> None:
        self.contended_time += span
        capacity = self.capacity
        gpus = capacity.get(GPU)
        for queue in self._queue_allocated.keys() | self._deserved_now.keys():
            used = self._queue_allocated.get(queue, Resource())
            resource, share = dominant_resource(used, capacity)
            self.held[queue] = self.held.get(queue, 0.0) + share * span
            if gpus:
                self.held_gpu[queue] = self.held_gpu.get(queue, 0.0) + used.get(GPU) / gpus * span
            deserved = self._deserved_now.get(queue)
            if deserved is not None:
                if not resource:
                    resource, _ = dominant_resource(deserved, capacity)
                share = deserved.get(resource) / capacity.get(resource) if resource else 0.0
                self.deserved[queue] = self.deserved.get(queue, 0.0) + share * span
                if gpus:
                    gpu = deserved.get(GPU) / gpus * span
                    self.deserved_gpu[queue] = self.deserved_gpu.get(queue, 0.0) + gpu

    def set_deserved(self, deserved: dict[str, Resource]) -> None:
        """What each queue deserves from now on (the last session's word)."""
        changed = self.timeline is not None and deserved != self._deserved_now
        self._deserved_now = deserved
        if changed:
            self._changed()

    def add_capacity(
        self, amount: Resource, node: str = "", before: Resource | None = None
    ) -> None:
        """A node came with ``amount`` (or, with ``before``, its allocatable changed)."""
        self.capacity = self.capacity + amount - (before or Resource())
        if self.timeline is not None:
            self.timeline.node_gpus(node, total=amount.get(GPU))
        self._changed()

    def start(self, key: str, request: Resource, queue: str, node: str = "") -> None:
        self._running[key] = (request, queue, node)
        self.allocated = self.allocated + request
        self._queue_allocated[queue] = self._queue_allocated.get(queue, Resource()) + request
        if self.timeline is not None and request.get(GPU):
            self.timeline.node_gpus(node, delta=request.get(GPU))
        self._changed()

    def stop(self, key: str) -> None:
        entry = self._running.pop(key, None)
        if entry is None:
            return
        request, queue, node = entry
        self.allocated = self.allocated - request
        self._queue_allocated[queue] = self._queue_allocated[queue] - request
        if self.timeline is not None and request.get(GPU):
            self.timeline.node_gpus(node, delta=-request.get(GPU))
        self._changed()

    def utilization(self, end: float) -> dict[str, float]:
        """Mean fraction of each resource's capacity in use over [0, end] (integrated up to
        ``end`` by ``advance``): what was held against the capacity there was at the time."""
        if end <= 0:
            return {}
        return {
            name: self.integral.get(name, 0.0) / total
            for name, total in sorted(self.capacity_integral.items())
            if total > 0
        }
