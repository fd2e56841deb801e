"""enqueue: Pending PodGroups become Inqueue when admitted; minResources asks the plugins."""

from __future__ import annotations

import msgspec

from asyncsched.actions.enqueue import EnqueueAction
from asyncsched.api import Queue
from asyncsched.framework import Arguments, Session
from asyncsched.model import PodGroupPhase
from tests import builders as b
from tests.unit.actions.support import Admit, open_session


def enqueue(ssn: Session) -> None:
    EnqueueAction(Arguments()).execute(ssn)


def closed(queue: Queue) -> Queue:
    return msgspec.structs.replace(
        queue, status=msgspec.structs.replace(queue.status, state="Closed")
    )


def test_job_without_min_resources_is_admitted() -> None:
    snap = b.snapshot(b.podgroup("job", 1, phase="Pending"), b.pod("p", group="job"))
    ssn = open_session(snap, Admit(limit=0))
    enqueue(ssn)
    assert ssn.jobs["default/job"].phase == PodGroupPhase.INQUEUE
    assert ssn.result.enqueued == ["default/job"]


def test_min_resources_are_put_to_the_plugins() -> None:
    admit = Admit(limit=4000)
    snap = b.snapshot(
        b.podgroup("small", 1, phase="Pending", min_resources={"cpu": "2"}),
        b.podgroup("big", 1, phase="Pending", min_resources={"cpu": "8"}),
        b.pod("s", group="small"),
        b.pod("g", group="big"),
    )
    ssn = open_session(snap, admit)
    enqueue(ssn)
    assert ssn.jobs["default/small"].phase == PodGroupPhase.INQUEUE
    assert ssn.jobs["default/big"].phase == PodGroupPhase.PENDING
    assert ssn.result.enqueued == ["default/small"]
    assert admit.enqueued == ["default/small"]


def test_jobs_already_past_pending_are_left_alone() -> None:
    snap = b.snapshot(b.podgroup("job", 1, phase="Running"), b.pod("p", group="job"))
    ssn = open_session(snap)
    enqueue(ssn)
    assert ssn.result.enqueued == []
    assert ssn.jobs["default/job"].phase == "Running"


def test_closed_queue_admits_nothing() -> None:
    snap = b.snapshot(
        closed(b.queue("shut")),
        b.podgroup("job", 1, phase="Pending", queue="shut"),
        b.pod("p", group="job"),
    )
    ssn = open_session(snap)
    enqueue(ssn)
    assert ssn.jobs["default/job"].phase == PodGroupPhase.PENDING


def test_queue_order_is_asked_again_after_each_job() -> None:
    """With a fixed queue order (creation time) the first queue drains first."""
    snap = b.snapshot(
        b.queue("q1", created="2024-01-01T00:00:00Z"),
        b.queue("q2", created="2024-01-01T00:00:01Z"),
        b.podgroup("a2", 1, phase="Pending", queue="q1", created="2024-01-01T00:00:02Z"),
        b.podgroup("a1", 1, phase="Pending", queue="q1", created="2024-01-01T00:00:01Z"),
        b.podgroup("b1", 1, phase="Pending", queue="q2", created="2024-01-01T00:00:01Z"),
        *(b.pod(f"p-{g}", group=g) for g in ("a1", "a2", "b1")),
    )
    ssn = open_session(snap)
    enqueue(ssn)
    assert ssn.result.enqueued == ["default/a1", "default/a2", "default/b1"]
