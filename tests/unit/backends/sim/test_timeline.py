"""The usage meter's timeline: one point per instant, and GPUs split into used, free on idle
nodes, and free but stranded on nodes partly in use."""

from __future__ import annotations

from asyncsched.backends.sim.timeline import GpuPoint, Timeline
from asyncsched.backends.sim.usage import GPU, UsageMeter
from asyncsched.model import Resource


def gpus(n: int) -> Resource:
    return Resource({GPU: n, "cpu": 1000 * n})


def test_gpu_fragmentation_follows_pods_on_nodes() -> None:
    meter = UsageMeter(timeline=Timeline())
    meter.add_capacity(gpus(8), "big")
    meter.add_capacity(gpus(4), "small")
    meter.advance(10)
    meter.start("a", gpus(2), "q", "big")
    meter.advance(20)
    meter.start("b", gpus(4), "q", "small")
    meter.advance(30)
    meter.stop("a")

    assert meter.timeline is not None
    points = meter.timeline.points
    assert [p.time for p in points] == [0, 10, 20, 30], "the two nodes at t=0 are one point"
    assert [p.gpus for p in points] == [
        GpuPoint(used=0, free_on_idle_nodes=12, free_stranded=0, largest_free=8),
        GpuPoint(used=2, free_on_idle_nodes=4, free_stranded=6, largest_free=6),
        GpuPoint(used=6, free_on_idle_nodes=0, free_stranded=6, largest_free=6),
        GpuPoint(used=4, free_on_idle_nodes=8, free_stranded=0, largest_free=8),
    ]
    assert points[2].queues == {"q": gpus(6)} and points[2].used == gpus(6)
    assert points[-1].capacity == gpus(12)


def test_without_a_timeline_nothing_is_kept() -> None:
    meter = UsageMeter()
    meter.add_capacity(gpus(8), "big")
    meter.start("a", gpus(2), "q", "big")

    assert meter.timeline is None and meter.allocated == gpus(2)
