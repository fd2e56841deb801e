"""drf: jobs with the smaller dominant share are served first, and shares follow allocations."""

from __future__ import annotations

import pytest

from asyncsched.api import Pod, PodGroup
from asyncsched.framework import Arguments, Session, Statement, parse_configuration
from asyncsched.model import ClusterSnapshot
from asyncsched.plugins.drf import DrfPlugin
from tests.builders import node, pod, podgroup, snapshot

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
