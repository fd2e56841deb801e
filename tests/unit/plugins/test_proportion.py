"""proportion: queues share the cluster by weight, capped by capability and demand."""

from __future__ import annotations

from asyncsched.api import Pod, PodGroup
from asyncsched.framework import Arguments, Session, Statement, parse_configuration
from asyncsched.model import ClusterSnapshot, QueueInfo, QueueState, Resource, TaskStatus
from asyncsched.plugins.proportion import ProportionPlugin
from tests.builders import node, pod, podgroup, queue, snapshot

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: proportion
"""

GI = 1024**3


def open_session(snap: ClusterSnapshot) -> tuple[Session, ProportionPlugin]:
    plugin = ProportionPlugin(Arguments())
    ssn = Session(snap, parse_configuration(CONF), {"proportion": plugin})
    plugin.on_session_open(ssn)
    return ssn, plugin


def work(
    name: str,
    queue_name: str,
    pending: int,
    running: int = 0,
    cpu: str = "1",
    memory: str = "1Gi",
    min_resources: dict[str, str | int | float] | None = None,
    phase: str = "Inqueue",
) -> list[Pod | PodGroup]:
    objs: list[Pod | PodGroup] = [
        podgroup(name, 1, queue=queue_name, min_resources=min_resources, phase=phase)
    ]
    for i in range(running):
        objs.append(pod(f"{name}-r{i}", cpu, memory, group=name, node_name="n1", phase="Running"))
    for i in range(pending):
        objs.append(pod(f"{name}-p{i}", cpu, memory, group=name))
    return objs


def busy_cluster() -> ClusterSnapshot:
    return snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3),
        *work("l", "light", pending=20),
        *work("h", "heavy", pending=20),
    )


def test_weights_one_to_three_split_a_busy_cluster_one_to_three() -> None:
    _, plugin = open_session(busy_cluster())
    assert plugin.deserved("light").get("cpu") == 4000
    assert plugin.deserved("heavy").get("cpu") == 12000
    # Neither asks for more than 20Gi of memory, so both deserve all they ask.
    assert plugin.deserved("light").get("memory") == 20 * GI
    assert plugin.deserved("heavy").get("memory") == 20 * GI


def test_taking_turns_by_queue_order_fills_the_cluster_one_to_three() -> None:
    ssn, _ = open_session(busy_cluster())
    stmt = Statement(ssn)
    n1 = ssn.nodes["n1"]
    placed = {"light": 0, "heavy": 0}
    done: set[str] = set()
    while True:
        open_queues = [q for q in ssn.queues.values() if q.name in placed and q.name not in done]
        candidates = [q for q in open_queues if not ssn.overused(q)]
        if not candidates:
            break
        q = sorted(candidates, key=ssn.queue_key())[0]
        task = next(j for j in ssn.jobs.values() if j.queue == q.name).pending_tasks()[0]
        if not ssn.allocatable(q, task) or not task.resreq.fits_in(n1.idle):
            done.add(q.name)
            continue
        stmt.allocate(task, n1)
        placed[q.name] += 1
    assert placed == {"light": 4, "heavy": 12}


def test_queue_asking_for_little_leaves_the_rest_to_others() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3),
        *work("l", "light", pending=2),
        *work("h", "heavy", pending=100),
    )
    _, plugin = open_session(snap)
    assert plugin.deserved("light").get("cpu") == 2000
    assert plugin.deserved("heavy").get("cpu") == 14000


def test_capability_caps_deserved_and_the_rest_goes_elsewhere() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3, capability={"cpu": "6"}),
        *work("l", "light", pending=100),
        *work("h", "heavy", pending=100),
    )
    _, plugin = open_session(snap)
    assert plugin.deserved("heavy").get("cpu") == 6000
    assert plugin.deserved("light").get("cpu") == 10000


def test_guarantee_is_reserved_even_against_weight() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3),
        *work("l", "light", pending=100),
        *work("h", "heavy", pending=100),
    )
    snap.queues["light"] = QueueInfo(
        name="light", weight=1, guarantee=Resource.from_quantities({"cpu": "8"})
    )
    snap.queues["heavy"] = QueueInfo(name="heavy", weight=3)
    _, plugin = open_session(snap)
    assert plugin.deserved("light").get("cpu") == 8000
    assert plugin.deserved("heavy").get("cpu") == 8000


def test_queue_at_its_deserved_share_is_overused() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3),
        *work("l", "light", pending=10, running=5, memory=""),
        *work("h", "heavy", pending=20, running=2, memory=""),
    )
    ssn, plugin = open_session(snap)
    assert plugin.deserved("light") == Resource({"cpu": 4000})
    assert ssn.overused(snap.queues["light"])
    assert not ssn.overused(snap.queues["heavy"])


def test_overused_needs_every_resource_of_the_share_used_as_volcano_does() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3),
        *work("l", "light", pending=10, running=5),
        *work("h", "heavy", pending=20, running=2),
    )
    ssn, plugin = open_session(snap)
    assert plugin.deserved("light").get("cpu") == 4000
    assert plugin.deserved("light").get("memory") == 15 * GI
    assert not ssn.overused(snap.queues["light"])  # memory 5Gi of 15Gi used
    task = ssn.jobs["default/l"].pending_tasks()[0]
    assert not ssn.allocatable(snap.queues["light"], task)  # but no more cpu for it


def test_allocatable_only_within_deserved_and_only_for_open_queues() -> None:
    snap = busy_cluster()
    ssn, _ = open_session(snap)
    light, heavy = snap.queues["light"], snap.queues["heavy"]
    l_job, h_job = ssn.jobs["default/l"], ssn.jobs["default/h"]
    stmt = Statement(ssn)
    for task in l_job.pending_tasks()[:4]:
        assert ssn.allocatable(light, task)
        stmt.allocate(task, ssn.nodes["n1"])
    assert not ssn.allocatable(light, l_job.pending_tasks()[0])
    assert ssn.allocatable(heavy, h_job.pending_tasks()[0])
    heavy.state = QueueState.CLOSED
    assert not ssn.allocatable(heavy, h_job.pending_tasks()[0])


def test_a_queue_may_reclaim_for_tasks_that_together_stay_within_its_deserved() -> None:
    snap = busy_cluster()
    ssn, _ = open_session(snap)
    light, pending = snap.queues["light"], ssn.jobs["default/l"].pending_tasks()
    # light deserves 4 cpu and holds none: 4 tasks of 1 cpu together fit, 5 do not
    assert ssn.preemptive(light, pending[:4])
    assert not ssn.preemptive(light, pending[:5])
    light.state = QueueState.CLOSED
    assert not ssn.preemptive(light, pending[:1])


def test_queue_with_lower_share_is_served_first_unless_priority_says_otherwise() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1, created="2024-01-01T00:00:00Z"),
        queue("heavy", 3, created="2024-01-02T00:00:00Z"),
        *work("l", "light", pending=10, running=3),
        *work("h", "heavy", pending=10, running=3),
    )
    ssn, _ = open_session(snap)
    names = [
        q.name for q in sorted([snap.queues["light"], snap.queues["heavy"]], key=ssn.queue_key())
    ]
    assert names == ["heavy", "light"]  # 3/12 of its share used, against 3/4
    snap.queues["light"].priority = 10
    names = [
        q.name for q in sorted([snap.queues["light"], snap.queues["heavy"]], key=ssn.queue_key())
    ]
    assert names == ["light", "heavy"]


def test_enqueue_respects_queue_capability_and_counts_admitted_jobs() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("capped", 1, capability={"cpu": "6"}),
        *work("running", "capped", pending=0, running=2, phase="Running"),
        *work("first", "capped", pending=3, min_resources={"cpu": "3"}, phase="Pending"),
        *work("second", "capped", pending=3, min_resources={"cpu": "3"}, phase="Pending"),
        *work("third", "capped", pending=1, min_resources={"cpu": "1"}, phase="Pending"),
        *work("free", "capped", pending=3, phase="Pending"),
    )
    ssn, _ = open_session(snap)
    first, second = ssn.jobs["default/first"], ssn.jobs["default/second"]
    assert ssn.job_enqueueable(first)
    ssn.job_enqueued(first)
    # 2 running (no minResources, so elastic) are not held against it; 3 inqueue + 3 = 6 fits.
    assert ssn.job_enqueueable(second)
    ssn.job_enqueued(second)
    assert not ssn.job_enqueueable(ssn.jobs["default/third"])  # 6 of 6 cpu promised
    free = ssn.jobs["default/free"]
    assert ssn.job_enqueueable(free)  # no minResources: always admitted
    snap.queues["capped"].state = QueueState.CLOSED
    assert not ssn.job_enqueueable(free)


def test_enqueue_rejects_a_job_beyond_capability() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("capped", 1, capability={"cpu": "6"}),
        *work("admitted", "capped", pending=4, min_resources={"cpu": "4"}),
        *work("next", "capped", pending=3, min_resources={"cpu": "3"}, phase="Pending"),
    )
    ssn, _ = open_session(snap)
    assert not ssn.job_enqueueable(ssn.jobs["default/next"])


def test_reclaim_takes_only_what_a_queue_holds_beyond_its_deserved_share() -> None:
    snap = snapshot(
        node("n1", cpu="16", memory="64Gi"),
        queue("light", 1),
        queue("heavy", 3),
        *work("l", "light", pending=0, running=8),
        *work("h", "heavy", pending=20, running=0),
    )
    ssn, plugin = open_session(snap)
    assert plugin.deserved("light").get("cpu") == 4000
    reclaimer = ssn.jobs["default/h"].pending_tasks()[0]
    running = sorted(ssn.jobs["default/l"].tasks_in(TaskStatus.RUNNING), key=lambda t: t.name)
    assert len(ssn.reclaimable(reclaimer, running)) == 4
    # the same rule narrows victims another tier chose (share_reclaimable)
    assert ssn.share_reclaimable(reclaimer, running) == ssn.reclaimable(reclaimer, running)
