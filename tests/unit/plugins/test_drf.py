"""drf: jobs with the smaller dominant share are served first, and shares follow allocations."""

from __future__ import annotations

import pytest

from asyncsched.api import Node, Pod, PodGroup, Queue
from asyncsched.framework import Arguments, Session, Statement, parse_configuration
from asyncsched.model import ClusterSnapshot
from asyncsched.plugins.drf import DrfPlugin
from tests.builders import cache_of, node, pod, podgroup, queue, snapshot

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: drf
"""


def open_session(snap: ClusterSnapshot) -> tuple[Session, DrfPlugin]:
    plugin = DrfPlugin(Arguments())
    ssn = Session(snap, parse_configuration(CONF), {"drf": plugin})
    plugin.on_session_open(ssn)
    return ssn, plugin


def job(
    name: str, running: int, pending: int, cpu: str = "1", memory: str = "1Gi"
) -> list[Pod | PodGroup]:
    objs: list[Pod | PodGroup] = [podgroup(name, 1)]
    for i in range(running):
        objs.append(pod(f"{name}-r{i}", cpu, memory, group=name, node_name="n1", phase="Running"))
    for i in range(pending):
        objs.append(pod(f"{name}-p{i}", cpu, memory, group=name))
    return objs


def order(ssn: Session) -> list[str]:
    return [j.name for j in sorted(ssn.jobs.values(), key=ssn.job_key())]


def test_job_with_smaller_dominant_share_goes_first() -> None:
    # 10 cpu, 100Gi: "mem-heavy" holds 50% of memory, "cpu-heavy" 30% of cpu.
    snap = snapshot(
        node("n1", cpu="10", memory="100Gi"),
        *job("mem-heavy", 1, 1, cpu="1", memory="50Gi"),
        *job("cpu-heavy", 1, 1, cpu="3", memory="1Gi"),
    )
    ssn, plugin = open_session(snap)
    assert plugin.share_of("default/mem-heavy") == pytest.approx(0.5)
    assert plugin.share_of("default/cpu-heavy") == pytest.approx(0.3)
    assert order(ssn) == ["cpu-heavy", "mem-heavy"]


def test_order_follows_allocations_made_in_the_session() -> None:
    snap = snapshot(
        node("n1", cpu="10", memory="100Gi"),
        *job("a", 2, 3),
        *job("b", 3, 1),
    )
    ssn, plugin = open_session(snap)
    assert order(ssn) == ["a", "b"]
    stmt = Statement(ssn)
    a = ssn.jobs["default/a"]
    stmt.allocate(a.tasks["default/a-p0"], ssn.nodes["n1"])
    stmt.allocate(a.tasks["default/a-p1"], ssn.nodes["n1"])
    assert plugin.share_of("default/a") == pytest.approx(0.4)
    assert order(ssn) == ["b", "a"]
    stmt.discard()
    assert plugin.share_of("default/a") == pytest.approx(0.2)
    assert order(ssn) == ["a", "b"]


def test_a_job_holding_nothing_shows_no_share_whatever_was_shown_for_it_before() -> None:
    """A job placed and undone within a session is in drf's books holding nothing at its
    close, so its share (0) is shown; the next session, where it holds and asks nothing,
    shows none for it, as a session on a fresh snapshot does, though the copy it gets is
    the same object with that figure remembered."""
    cache = cache_of(node("n1", cpu="10", memory="100Gi"), *job("a", 1, 1), *job("idle", 0, 1))
    ssn, plugin = open_session(cache.snapshot())
    idle = ssn.jobs["default/idle"]
    stmt = Statement(ssn)
    stmt.allocate(idle.tasks["default/idle-p0"], ssn.nodes["n1"])
    stmt.discard()
    plugin.on_session_close(ssn)
    assert {dict(g.labels)["job_id"] for g in ssn.result.plugin_gauges} == {"a", "idle"}
    again = cache.snapshot()
    assert again.jobs["default/idle"] is idle and idle.share_memo is not None
    for snap in (again, cache.trial_snapshot()):
        ssn, plugin = open_session(snap)
        plugin.on_session_close(ssn)
        assert {dict(g.labels)["job_id"] for g in ssn.result.plugin_gauges} == {"a"}


def test_preempts_only_from_jobs_that_stay_at_or_above_the_preemptors_share() -> None:
    snap = snapshot(
        node("n1", cpu="10", memory="100Gi"),
        *job("poor", 0, 1),
        *job("rich", 4, 0),
        *job("modest", 1, 0),
    )
    ssn, _ = open_session(snap)
    preemptor = ssn.jobs["default/poor"].tasks["default/poor-p0"]
    rich = sorted(ssn.jobs["default/rich"].tasks.values(), key=lambda t: t.name)
    modest = list(ssn.jobs["default/modest"].tasks.values())
    # poor would hold 10%; rich keeps >= 10% for its first three victims only.
    victims = ssn.preemptable(preemptor, rich + modest)
    assert [t.name for t in victims] == ["rich-r0", "rich-r1", "rich-r2"]


HDRF = """
actions: "allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
"""


def hdrf_queue(name: str, path: str, weights: str) -> Queue:
    made = queue(name)
    made.metadata.annotations = {
        "volcano.sh/hierarchy": path,
        "volcano.sh/hierarchy-weights": weights,
    }
    return made


def hdrf_session(*objects: Node | Pod | PodGroup | Queue) -> Session:
    plugin = DrfPlugin(Arguments())
    ssn = Session(snapshot(*objects), parse_configuration(HDRF), {"drf": plugin})
    plugin.on_session_open(ssn)
    return ssn


def queued(
    name: str, queue_name: str, running: int, pending: int = 1, cpu: str = "1"
) -> list[Pod | PodGroup]:
    objs: list[Pod | PodGroup] = [podgroup(name, 1, queue=queue_name)]
    for i in range(running):
        objs.append(pod(f"{name}-r{i}", cpu, "1Gi", group=name, node_name="n1", phase="Running"))
    for i in range(pending):
        objs.append(pod(f"{name}-p{i}", cpu, "1Gi", group=name))
    return objs


def queue_order(ssn: Session, *names: str) -> list[str]:
    return [q.name for q in sorted((ssn.queues[n] for n in names), key=ssn.queue_key())]


def test_hierarchical_drf_orders_queues_by_share_per_weight() -> None:
    ssn = hdrf_session(
        node("n1", cpu="10", memory="100Gi"),
        hdrf_queue("eng", "root/eng", "1/1"),
        hdrf_queue("sci", "root/sci", "1/3"),
        *queued("e", "eng", running=2),  # 0.2 of the cpu, weight 1: 0.2
        *queued("s", "sci", running=3),  # 0.3 of the cpu, weight 3: 0.1
    )
    assert queue_order(ssn, "eng", "sci") == ["sci", "eng"]


def test_hierarchical_drf_serves_a_saturated_branch_last() -> None:
    # "done" holds all it asks for (no pending pod): saturated, so it goes after "busy"
    # although its share is smaller.
    ssn = hdrf_session(
        node("n1", cpu="10", memory="100Gi"),
        hdrf_queue("done", "root/done", "1/1"),
        hdrf_queue("busy", "root/busy", "1/1"),
        *queued("d", "done", running=1, pending=0),
        *queued("b", "busy", running=4),
    )
    assert queue_order(ssn, "done", "busy") == ["busy", "done"]


def test_hierarchical_drf_compares_branches_before_leaves() -> None:
    # eng/web and eng/ml together hold 0.4; sci holds 0.3: sci goes before either.
    ssn = hdrf_session(
        node("n1", cpu="10", memory="100Gi"),
        hdrf_queue("web", "root/eng/web", "1/1/1"),
        hdrf_queue("ml", "root/eng/ml", "1/1/1"),
        hdrf_queue("sci", "root/sci", "1/1"),
        *queued("w", "web", running=2),
        *queued("m", "ml", running=2),
        *queued("s", "sci", running=3),
    )
    assert queue_order(ssn, "web", "sci")[0] == "sci"
    assert queue_order(ssn, "ml", "sci")[0] == "sci"


def test_hierarchical_drf_reclaims_only_while_the_reclaimer_stays_ahead() -> None:
    ssn = hdrf_session(
        node("n1", cpu="10", memory="100Gi"),
        hdrf_queue("poor", "root/poor", "1/1"),
        hdrf_queue("rich", "root/rich", "1/1"),
        hdrf_queue("even", "root/even", "1/1"),
        *queued("p", "poor", running=1, pending=2),
        *queued("r", "rich", running=5),
        *queued("e", "even", running=2),
    )
    # With one more task poor holds 0.2 of the cpu and still wants more (not saturated).
    reclaimer = next(t for t in ssn.jobs["default/p"].tasks.values() if t.node_name == "")
    rich = sorted(ssn.jobs["default/r"].tasks.values(), key=lambda t: t.name)
    even = sorted(ssn.jobs["default/e"].tasks.values(), key=lambda t: t.name)
    running = [t for t in rich + even if t.node_name]
    victims = ssn.reclaimable(reclaimer, running)
    # rich 5 -> 4 still ranks behind poor; even 2 -> 1 would rank ahead of it.
    assert {t.job for t in victims} == {"default/r"} and len(victims) == 5
