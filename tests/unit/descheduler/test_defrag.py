"""GangDefragmentation: the fewest pods moved for a gang that waits with room in total, and
only when a scheduling session confirms the gang then fits."""

from __future__ import annotations

from asyncsched.backends.config_source import ConfigSource
from asyncsched.cache import ClusterCache
from asyncsched.descheduler.defrag import gang_placed_without
from asyncsched.descheduler.passes import deschedule
from asyncsched.descheduler.plan import Plan
from asyncsched.descheduler.policy import parse_policy
from asyncsched.framework import Registry
from asyncsched.model.timestamps import parse_timestamp
from tests.builders import cache_of, node, pod, podgroup, priority_class
from tests.unit.descheduler.test_detect import owned

CREATED = "2026-01-01T00:00:00Z"
POLICY = parse_policy(
    """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: d
  pluginConfig:
  - {name: DefaultEvictor, args: {priorityThreshold: {value: 10000}}}
  - {name: GangDefragmentation, args: {waitingThreshold: 60s}}
  plugins: {balance: {enabled: [GangDefragmentation]}}
"""
)


def fragmented(filler_priority: int = 1000) -> ClusterCache:
    """Four 8-CPU nodes with three 2-CPU fillers each (2 CPUs free on each), and a gang of two
    4-CPU pods waiting."""
    objects = [priority_class("filler", filler_priority), priority_class("train", 100000)]
    objects += [node(f"n{i}") for i in range(4)]
    for i in range(12):
        objects.append(
            owned(
                pod(f"f{i}", cpu="2", node_name=f"n{i % 4}", phase="Running",
                    priority_class="filler")
            )
        )  # fmt: skip
    objects.append(podgroup("train", 2, phase="Inqueue", priority_class="train", created=CREATED))
    objects += [
        pod(f"t{i}", cpu="4", group="train", priority_class="train", created=CREATED)
        for i in range(2)
    ]
    return cache_of(*objects)


def plan_at(cache: ClusterCache, seconds: float) -> Plan:
    config = ConfigSource(Registry()).current
    now = parse_timestamp(CREATED) + seconds

    def verify(job: str, victims: list[str], needed: int) -> bool:
        return gang_placed_without(cache.trial_snapshot(now), job, victims, needed, config)

    return deschedule(cache.snapshot(now), None, POLICY, verify)


def test_two_moves_make_room_for_the_gang() -> None:
    plan = plan_at(fragmented(), 120)
    assert len(plan.evictions) == 2
    assert len({e.node for e in plan.evictions}) == 2  # one filler off each of two nodes
    for moved in plan.evictions:
        assert moved.destination and moved.destination != moved.node
        assert "makes room" in moved.reason and "default/train" in moved.reason


def test_not_before_the_gang_waited_long_enough() -> None:
    assert plan_at(fragmented(), 30).evictions == ()


def test_pods_at_or_above_the_priority_threshold_are_not_moved() -> None:
    plan = plan_at(fragmented(filler_priority=20000), 120)
    assert plan.evictions == ()
    assert any("no set of movable pods" in note for note in plan.notes)


def test_a_gang_bigger_than_all_free_room_is_left_alone() -> None:
    cache = fragmented()
    for i in range(2, 6):
        cache.upsert_pod(pod(f"t{i}", cpu="4", group="train", priority_class="train"))
    cache.upsert_podgroup(podgroup("train", 6, phase="Inqueue", priority_class="train",
                                   created=CREATED))  # fmt: skip
    plan = plan_at(cache, 120)
    assert plan.evictions == ()
    assert any("more than is free in the whole cluster" in note for note in plan.notes)


def test_nothing_moves_when_the_scheduler_would_not_place_the_gang() -> None:
    cache = fragmented()
    now = parse_timestamp(CREATED) + 120
    plan = deschedule(cache.snapshot(now), None, POLICY, lambda job, victims, needed: False)
    assert plan.evictions == ()
    assert any("would still not place it" in note for note in plan.notes)
