"""The order victims give way in: across queues as victim_queue_order says (else the queue
served last first), within a queue the job ordered last, within a job the task placed
last, and a task whose job has left the session before all."""

from __future__ import annotations

from typing import ClassVar

from asyncsched.framework import Session, parse_configuration
from asyncsched.framework.hooks import VICTIM_QUEUE_ORDER
from asyncsched.framework.victim_order import victim_key
from asyncsched.model import QueueInfo, TaskInfo
from tests.builders import node, pod, podgroup, queue, snapshot

CONF = """
actions: "reclaim"
tiers:
- plugins:
  - name: favourite
"""


class Favourite:
    """Says the tasks of one queue give way before any other queue's."""

    name: ClassVar[str] = "favourite"

    def __init__(self, first: str) -> None:
        self.first = first
        self.asked: list[tuple[str, str, str]] = []

    def on_session_open(self, ssn: Session) -> None:
        def order(left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
            self.asked.append((left.name, right.name, preemptor.name))
            if self.first in (left.name, right.name) and left.name != right.name:
                return -1 if left.name == self.first else 1
            return 0

        ssn.add(VICTIM_QUEUE_ORDER, self.name, order)

    def on_session_close(self, ssn: Session) -> None:
        pass


def _session(first: str = "") -> tuple[Session, Favourite]:
    running = {"node_name": "n1", "phase": "Running"}
    snap = snapshot(
        node("n1", cpu="16"),
        queue("mine"),
        queue("alpha", created="2030-01-01T00:00:00Z"),
        queue("beta", created="2030-01-02T00:00:00Z"),
        podgroup("wants", queue="mine"),
        pod("wants-0", group="wants"),
        podgroup("old", queue="alpha", created="2030-01-01T00:00:00Z"),
        pod("old-0", group="old", created="2030-01-01T00:00:00Z", **running),
        pod("old-1", group="old", created="2030-01-02T00:00:00Z", **running),
        podgroup("new", queue="alpha", created="2030-01-02T00:00:00Z"),
        pod("new-0", group="new", **running),
        podgroup("other", queue="beta"),
        pod("other-0", group="other", **running),
    )
    plugin = Favourite(first)
    ssn = Session(snap, parse_configuration(CONF), {"favourite": plugin})  # type: ignore[dict-item]
    plugin.on_session_open(ssn)
    return ssn, plugin


def _task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def _order(ssn: Session, victims: list[str]) -> list[str]:
    tasks = [_task(ssn, n) for n in victims]
    return [t.name for t in sorted(tasks, key=victim_key(ssn, _task(ssn, "wants-0")))]


def test_without_an_opinion_the_queue_served_last_gives_first() -> None:
    ssn, _ = _session()
    # beta is younger, so served after alpha: its task goes first; then, within alpha,
    # the younger job, and within the older job the task placed last.
    order = _order(ssn, ["old-0", "old-1", "new-0", "other-0"])
    assert order == ["other-0", "new-0", "old-1", "old-0"]


def test_victim_queue_order_decides_across_queues() -> None:
    ssn, plugin = _session(first="alpha")
    order = _order(ssn, ["old-0", "other-0", "new-0", "old-1"])
    assert order == ["new-0", "old-1", "old-0", "other-0"]
    assert plugin.asked and all(p == "mine" for _, _, p in plugin.asked)
    assert {frozenset(pair[:2]) for pair in plugin.asked} == {frozenset({"alpha", "beta"})}


def test_a_task_whose_job_left_the_session_goes_first() -> None:
    ssn, _ = _session()
    orphan = _task(ssn, "old-0")
    del ssn.jobs[orphan.job]
    order = [
        t.name
        for t in sorted([_task(ssn, "other-0"), orphan], key=victim_key(ssn, _task(ssn, "wants-0")))
    ]
    assert order == ["old-0", "other-0"]


def test_the_order_does_not_depend_on_the_order_offered() -> None:
    ssn, _ = _session()
    names = ["old-0", "old-1", "new-0", "other-0"]
    assert _order(ssn, names) == _order(ssn, list(reversed(names)))
