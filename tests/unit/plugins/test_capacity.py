"""capacity: declared deserved, guarantee and capability; queues as a tree."""

from __future__ import annotations

from typing import Any

from asyncsched.api import Pod, PodGroup
from asyncsched.framework import Arguments, Session, parse_configuration
from asyncsched.model import ClusterSnapshot, QueueInfo, Resource, TaskInfo
from asyncsched.plugins.capacity import CapacityPlugin
from tests.builders import node, pod, podgroup, queue, snapshot

FLAT = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: capacity
"""
HIERARCHY = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: capacity
    enableHierarchy: true
    arguments:
      ancestorReclaimLevel: LEVEL
"""


def open_session(
    snap: ClusterSnapshot, hierarchy: bool = False, level: int = 0
) -> tuple[Session, CapacityPlugin]:
    text = HIERARCHY.replace("LEVEL", str(level)) if hierarchy else FLAT
    conf = parse_configuration(text)
    plugin = CapacityPlugin(Arguments(conf.tiers[0].plugins[0].arguments))
    ssn = Session(snap, conf, {"capacity": plugin})
    plugin.on_session_open(ssn)
    return ssn, plugin


def work(
    name: str, queue_name: str, *, running: int = 0, pending: int = 0, **size: Any
) -> list[Pod | PodGroup]:
    objs: list[Pod | PodGroup] = [
        podgroup(name, 1, queue=queue_name, phase=size.pop("phase", "Inqueue"), **size)
    ]
    cpu = "1"
    for i in range(running):
        objs.append(pod(f"{name}-r{i}", cpu, "1Gi", group=name, node_name="n1", phase="Running"))
    for i in range(pending):
        objs.append(pod(f"{name}-p{i}", cpu, "1Gi", group=name))
    return objs


def first_pending(ssn: Session, job: str) -> TaskInfo:
    return next(j for j in ssn.jobs.values() if j.name == job).pending_tasks()[0]


def test_a_queue_borrows_idle_resources_up_to_its_capability_not_beyond() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("team", deserved={"cpu": "2"}, capability={"cpu": "4"}),
        *work("held", "team", running=3),
        *work("more", "team", pending=1),
    )
    ssn, _ = open_session(snap)
    team = ssn.queues["team"]
    assert ssn.allocatable(team, first_pending(ssn, "more"))  # 3 + 1 <= 4, above deserved 2
    ssn.fire_allocate(first_pending(ssn, "more"))
    assert not ssn.allocatable(team, first_pending(ssn, "more"))  # 4 + 1 > 4


def test_others_guarantees_are_kept_out_of_a_queues_reach() -> None:
    snap = snapshot(
        node("n1", cpu="4", memory="64Gi"),
        queue("owner", guarantee={"cpu": "3"}, deserved={"cpu": "3"}),
        queue("other"),
        *work("held", "other", running=1),
        *work("more", "other", pending=1),
    )
    ssn, _ = open_session(snap)
    assert not ssn.allocatable(ssn.queues["other"], first_pending(ssn, "more"))


def test_enqueue_refuses_a_job_whose_minimum_goes_beyond_the_reach_with_what_waits() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("team", capability={"cpu": "4"}),
        *work("admitted", "team", pending=2, min_resources={"cpu": "3"}),
        *work("next", "team", pending=1, phase="Pending", min_resources={"cpu": "2"}),
    )
    ssn, _ = open_session(snap)
    job = next(j for j in ssn.jobs.values() if j.name == "next")
    assert not ssn.job_enqueueable(job)  # 3 in reserve + 2 > 4


def test_lower_share_first_and_a_queue_that_deserves_something_before_best_effort() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("busy", deserved={"cpu": "2"}),
        queue("idle", deserved={"cpu": "4"}),
        queue("best-effort"),
        *work("a", "busy", running=2),
        *work("b", "idle", running=1),
    )
    ssn, _ = open_session(snap)
    ordered = sorted((ssn.queues[n] for n in ("best-effort", "busy", "idle")), key=ssn.queue_key())
    # idle holds 1/4, busy 2/2 (share 1, as best-effort's): the one with a deserved wins.
    assert [q.name for q in ordered] == ["idle", "busy", "best-effort"]


def test_only_leaf_queues_take_jobs_and_the_reason_says_so() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("group"),
        queue("project", parent="group"),
        *work("misplaced", "group", pending=1),
        *work("fine", "project", pending=1),
    )
    ssn, plugin = open_session(snap, hierarchy=True)
    assert not ssn.allocatable(ssn.queues["group"], first_pending(ssn, "misplaced"))
    assert ssn.allocatable(ssn.queues["project"], first_pending(ssn, "fine"))
    assert "only leaf queues hold jobs" in plugin.refusal(ssn.queues["group"])


def test_a_project_stays_within_its_groups_capability() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("group", capability={"cpu": "3"}),
        queue("p1", parent="group"),
        queue("p2", parent="group"),
        *work("a", "p1", running=2),
        *work("b", "p2", running=1),
        *work("c", "p2", pending=1),
    )
    ssn, _ = open_session(snap, hierarchy=True)
    assert not ssn.allocatable(ssn.queues["p2"], first_pending(ssn, "c"))


def test_a_broken_parent_link_refuses_that_queue_only() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("lost", parent="nowhere"),
        queue("fine"),
        *work("a", "lost", pending=1),
        *work("b", "fine", pending=1),
    )
    ssn, plugin = open_session(snap, hierarchy=True)
    assert not ssn.allocatable(ssn.queues["lost"], first_pending(ssn, "a"))
    assert ssn.allocatable(ssn.queues["fine"], first_pending(ssn, "b"))
    assert "'nowhere' does not exist" in plugin.refusal(ssn.queues["lost"])


def reclaim_cluster(victim_deserved: str, guarantee: str | None = None) -> ClusterSnapshot:
    snap = snapshot(
        node("n1", cpu="4", memory="64Gi"),
        queue("lender", deserved={"cpu": victim_deserved}),
        queue("owner", deserved={"cpu": "2"}),
        *work("lent", "lender", running=4),
        *work("wants", "owner", pending=1),
    )
    if guarantee:
        # A guarantee above deserved is refused at admission; a queue built in code can
        # still carry one, and reclaim must never go below it.
        snap.queues["lender"] = QueueInfo(
            name="lender",
            deserved=Resource({"cpu": int(victim_deserved) * 1000}),
            guarantee=Resource({"cpu": int(guarantee) * 1000}),
        )
    return snap


def running_of(ssn: Session, job: str) -> list[TaskInfo]:
    found = next(j for j in ssn.jobs.values() if j.name == job)
    return sorted(found.tasks.values(), key=lambda t: t.name)


def test_a_queue_over_its_deserved_gives_back_only_what_it_is_over_by() -> None:
    ssn, _ = open_session(reclaim_cluster("2"))
    wants = first_pending(ssn, "wants")
    assert ssn.preemptive(ssn.queues["owner"], [wants])
    victims = ssn.reclaimable(wants, running_of(ssn, "lent"))
    assert len(victims) == 2  # 4 held, 2 deserved: never below deserved
    # the same rule narrows victims that another tier chose (share_reclaimable)
    narrowed = ssn.share_reclaimable(wants, running_of(ssn, "lent"))
    assert {t.uid for t in narrowed} == {t.uid for t in victims}


def test_a_queue_within_its_deserved_or_its_guarantee_gives_nothing() -> None:
    ssn, _ = open_session(reclaim_cluster("4"))
    assert ssn.reclaimable(first_pending(ssn, "wants"), running_of(ssn, "lent")) == []
    ssn, _ = open_session(reclaim_cluster("1", guarantee="3"))
    victims = ssn.reclaimable(first_pending(ssn, "wants"), running_of(ssn, "lent"))
    assert len(victims) == 1  # over deserved by 3, but only 1 above the guarantee


def test_a_queue_at_its_deserved_may_not_reclaim() -> None:
    snap = snapshot(
        node("n1", cpu="4", memory="64Gi"),
        queue("owner", deserved={"cpu": "1", "memory": "1Gi"}),
        *work("has", "owner", running=1),
        *work("wants", "owner", pending=1),
    )
    ssn, _ = open_session(snap)
    owner, wants = ssn.queues["owner"], first_pending(ssn, "wants")
    assert not ssn.preemptive(owner, [wants])
    # Volcano's C5: within the deserved amount on one resource the tasks ask for is enough.
    more_memory = snapshot(
        node("n1", cpu="4", memory="64Gi"),
        queue("owner", deserved={"cpu": "1", "memory": "4Gi"}),
        *work("has", "owner", running=1),
        *work("wants", "owner", pending=1),
    )
    ssn, _ = open_session(more_memory)
    assert ssn.preemptive(ssn.queues["owner"], [first_pending(ssn, "wants")])


def test_a_queue_may_not_reclaim_beyond_its_capability_nor_when_it_deserves_nothing() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        # 3 cpu and 3Gi with what it wants: within its deserved memory, beyond its cpu
        queue("capped", deserved={"cpu": "2", "memory": "8Gi"}, capability={"cpu": "2"}),
        queue("best-effort"),
        *work("has", "capped", running=2),
        *work("wants", "capped", pending=1),
        *work("hopes", "best-effort", pending=1),
    )
    ssn, _ = open_session(snap)
    assert not ssn.preemptive(ssn.queues["capped"], [first_pending(ssn, "wants")])
    assert not ssn.preemptive(ssn.queues["best-effort"], [first_pending(ssn, "hopes")])


def test_in_a_tree_a_sibling_queue_gives_back_before_a_distant_one() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("group"),
        queue("mine", parent="group"),
        queue("sibling", parent="group"),
        queue("unrelated"),
        *work("a", "sibling", running=1),
        *work("b", "unrelated", running=1),
        *work("c", "mine", pending=1),
    )
    ssn, _ = open_session(snap, hierarchy=True)
    mine, sibling, unrelated = (ssn.queues[n] for n in ("mine", "sibling", "unrelated"))
    assert ssn.victim_queue_order(sibling, unrelated, mine)
    assert not ssn.victim_queue_order(unrelated, sibling, mine)
    # Flat, capacity has no opinion and the queue served last gives first: of two queues
    # with equal shares, unrelated (by name).
    ssn, _ = open_session(snap)
    mine, sibling, unrelated = (ssn.queues[n] for n in ("mine", "sibling", "unrelated"))
    assert ssn.victim_queue_order(unrelated, sibling, mine)


def test_each_queues_deserved_is_reported() -> None:
    snap = snapshot(node("n1"), queue("team", deserved={"cpu": "2"}), *work("a", "team"))
    ssn, plugin = open_session(snap)
    plugin.on_session_close(ssn)
    assert ssn.result.deserved["team"] == {"cpu": 2000}
