"""priority: who goes first and who may be preempted, by priority class."""

from __future__ import annotations

from asyncsched.api import PriorityClass
from asyncsched.framework import Arguments, Session, parse_configuration
from asyncsched.model import ClusterSnapshot
from asyncsched.plugins.priority import PriorityPlugin
from tests.builders import node, pod, podgroup, priority_class, snapshot

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
"""


def open_session(snap: ClusterSnapshot) -> Session:
    plugin = PriorityPlugin(Arguments())
    ssn = Session(snap, parse_configuration(CONF), {"priority": plugin})
    plugin.on_session_open(ssn)
    return ssn


def classes() -> list[PriorityClass]:
    return [priority_class("high", 1000), priority_class("low", 10)]


def test_high_priority_job_goes_first_even_if_created_later() -> None:
    snap = snapshot(
        *classes(),
        node("n1"),
        podgroup("old-low", priority_class="low", created="2024-01-01T00:00:00Z"),
        podgroup("new-high", priority_class="high", created="2024-01-02T00:00:00Z"),
        pod("l", group="old-low"),
        pod("h", group="new-high"),
    )
    ssn = open_session(snap)
    ordered = sorted(ssn.jobs.values(), key=ssn.job_key())
    assert [j.name for j in ordered] == ["new-high", "old-low"]


def test_higher_priority_task_is_placed_first() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("pg", 2),
        pod("a", group="pg", priority=1, created="2024-01-01T00:00:00Z"),
        pod("b", group="pg", priority=5, created="2024-01-02T00:00:00Z"),
    )
    ssn = open_session(snap)
    tasks = sorted(ssn.jobs["default/pg"].tasks.values(), key=ssn.task_key())
    assert [t.name for t in tasks] == ["b", "a"]


def test_only_lower_priority_jobs_are_preemptable() -> None:
    snap = snapshot(
        *classes(),
        node("n1"),
        podgroup("hi", priority_class="high"),
        podgroup("peer", priority_class="high"),
        podgroup("lo", priority_class="low"),
        pod("preemptor", group="hi"),
        pod("same", group="peer", node_name="n1", phase="Running"),
        pod("victim", group="lo", node_name="n1", phase="Running"),
    )
    ssn = open_session(snap)
    preemptor = ssn.jobs["default/hi"].tasks["default/preemptor"]
    running = [
        ssn.jobs["default/peer"].tasks["default/same"],
        ssn.jobs["default/lo"].tasks["default/victim"],
    ]
    assert [t.name for t in ssn.preemptable(preemptor, running)] == ["victim"]


def test_within_one_job_task_priority_decides() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("pg", 1),
        pod("boss", group="pg", priority=10),
        pod("minor", group="pg", priority=1, node_name="n1", phase="Running"),
        pod("equal", group="pg", priority=10, node_name="n1", phase="Running"),
    )
    ssn = open_session(snap)
    job = ssn.jobs["default/pg"]
    victims = ssn.preemptable(
        job.tasks["default/boss"], [job.tasks["default/minor"], job.tasks["default/equal"]]
    )
    assert [t.name for t in victims] == ["minor"]


def test_job_starves_while_any_task_lacks_resources() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("partial", 1),
        pod("p0", group="partial", node_name="n1", phase="Running"),
        pod("p1", group="partial"),
        podgroup("full", 1),
        pod("f0", group="full", node_name="n1", phase="Running"),
    )
    ssn = open_session(snap)
    assert ssn.job_starving(ssn.jobs["default/partial"])
    assert not ssn.job_starving(ssn.jobs["default/full"])
