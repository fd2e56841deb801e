"""The collector's settings for a scheduler's long-lived object graph (``gcpause``)."""

from __future__ import annotations

import gc
import weakref

from asyncsched.model.gcpause import (
    MIDDLE_GENERATION_THRESHOLD,
    YOUNG_GENERATION_THRESHOLD,
    freeze_long_lived,
)


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_after_the_freeze_passes_are_rarer_and_new_cycles_are_still_collected() -> None:
    before = gc.get_threshold()
    try:
        freeze_long_lived()
        young, middle, old = gc.get_threshold()
        assert young == max(before[0], YOUNG_GENERATION_THRESHOLD) >= 50 * 700
        assert middle == max(before[1], MIDDLE_GENERATION_THRESHOLD)
        assert old == before[2]
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None  # made after the freeze: a cycle is freed as before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_snapshot_taken_with_freeze_is_out_of_the_collectors_reach() -> None:
    """The scheduler's first snapshot (its copies of every task) is frozen before the
    collector walks it; a snapshot taken without it is not."""
    from asyncsched.cache import ClusterCache
    from tests.builders import node, pod

    cache = ClusterCache()
    cache.upsert_node(node("n0"))
    for i in range(3):
        cache.upsert_pod(pod(f"p{i}"))
    try:
        plain = cache.trial_snapshot()
        young = {id(o) for o in gc.get_objects()}  # frozen objects are in no generation
        assert all(id(job) in young for job in plain.jobs.values())
        frozen = cache.snapshot(freeze=True)
        young = {id(o) for o in gc.get_objects()}
        tasks = [t for job in frozen.jobs.values() for t in job.tasks.values()]
        assert len(tasks) == 3 and not any(id(t) in young for t in tasks)
        assert not any(id(job) in young for job in frozen.jobs.values())
    finally:
        gc.unfreeze()
