"""What the usage meter saw, as step series over virtual time, for plotted reports.

Kept only when asked (``asyncsched simulate --report``): one point per instant at
which something the meter follows changed (a pod started or stopped, a node came,
a session settled each queue's deserved amount), the later change at one instant
replacing the earlier. GPUs are also followed per node, for fragmentation: free
GPUs on nodes with none in use (a whole-node job can have them) and free GPUs
stranded on nodes partly in use. GPU allocation and fragmentation in FGD's sense come
from the fragmentation meter, one point per instant (``fragmentation``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.backends.sim.fragmentation import FragPoint
from asyncsched.model import Resource

__all__ = ["GpuPoint", "Timeline", "TimelinePoint"]


@dataclass(frozen=True, slots=True)
class GpuPoint:
    used: int
    free_on_idle_nodes: int
    """Free GPUs on nodes where no GPU is in use."""
    free_stranded: int
    """Free GPUs on nodes where some GPU is in use."""
    largest_free: int
    """The most GPUs free on one node."""


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    time: float
    capacity: Resource
    used: Resource
    queues: dict[str, Resource]
    """Per queue, what its running pods request."""
    deserved: dict[str, Resource]
    """Per queue, what the last session said it deserves (empty without proportion)."""
    gpus: GpuPoint | None


@dataclass
class Timeline:
    """Points in time order; ``record`` replaces the last point when it is at the same time."""

    points: list[TimelinePoint] = field(default_factory=list)
    fragmentation: list[FragPoint] = field(default_factory=list)
    _node_gpus: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per node with GPUs: (total, used)."""
    _free_counts: dict[int, int] = field(default_factory=dict)
    """How many nodes have each number of free GPUs."""
    _idle_free: int = 0
    _stranded: int = 0

    def node_gpus(self, node: str, total: int = 0, delta: int = 0) -> None:
        """A node's GPU total (set once, when it comes), or ``delta`` GPUs taken (+) or
        given back (-) on it."""
        before = self._node_gpus.get(node)
        if before is None and not total:
            return
        old_total, old_used = before if before is not None else (0, 0)
        if before is not None:
            self._count(old_total, old_used, -1)
        new = (total or old_total, old_used + delta)
        self._node_gpus[node] = new
        self._count(*new, +1)

    def _count(self, total: int, used: int, sign: int) -> None:
        free = total - used
        self._free_counts[free] = self._free_counts.get(free, 0) + sign
        if used:
            self._stranded += sign * free
        else:
            self._idle_free += sign * free

    def record(
        self,
        time: float,
        capacity: Resource,
        used: Resource,
        queues: dict[str, Resource],
        deserved: dict[str, Resource],
        gpus_used: int,
    ) -> None:
        gpus = None
        if self._node_gpus:
            largest = max((f for f, n in self._free_counts.items() if n > 0), default=0)
            gpus = GpuPoint(gpus_used, self._idle_free, self._stranded, largest)
        point = TimelinePoint(time, capacity, used, dict(queues), deserved, gpus)
        if self.points and self.points[-1].time == time:
            self.points[-1] = point
        else:
            self.points.append(point)
