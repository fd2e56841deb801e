"""backfill: BestEffort pods go to any node with a pod slot that passes the predicates."""

from __future__ import annotations

from asyncsched.actions.allocate import AllocateAction
from asyncsched.actions.backfill import BackfillAction
from asyncsched.api import Pod
from asyncsched.framework import Arguments, Session
from asyncsched.model import TaskStatus
from tests import builders as b
from tests.unit.actions.support import Gang, Schedulable, open_session, task_of


def backfill(ssn: Session) -> None:
    BackfillAction(Arguments()).execute(ssn)


def best_effort(name: str, group: str | None = None) -> Pod:
    return b.pod(name, cpu="", memory="", group=group)


def test_best_effort_pod_is_placed_by_backfill_not_allocate() -> None:
    snap = b.snapshot(b.node("a", cpu="1"), b.pod("busy", cpu="1"), best_effort("be"))
    ssn = open_session(snap, Gang())
    AllocateAction(Arguments()).execute(ssn)
    assert [bind.name for bind in ssn.result.binds] == ["busy"]
    backfill(ssn)
    assert [bind.name for bind in ssn.result.binds] == ["busy", "be"]
    assert task_of(ssn, "default/be").status is TaskStatus.BINDING


def test_needs_a_pod_slot_and_passing_predicates() -> None:
    snap = b.snapshot(
        b.node("a", unschedulable=True),
        b.node("b", pods=0),
        best_effort("be"),
    )
    ssn = open_session(snap, Gang(), Schedulable())
    backfill(ssn)
    assert ssn.result.binds == []
    assert ssn.fit_failures.by_uid["default/be"].message() == (
        "0/2 nodes are unavailable: 1 Too many pods, 1 node(s) were unschedulable."
    )


def test_requests_do_not_matter_only_best_effort_is_handled() -> None:
    snap = b.snapshot(b.node("a", cpu="1"), b.pod("p", cpu="1"), best_effort("be"))
    ssn = open_session(snap)
    backfill(ssn)
    assert [bind.name for bind in ssn.result.binds] == ["be"]


def test_pending_and_invalid_jobs_are_skipped() -> None:
    snap = b.snapshot(
        b.node("a"),
        b.podgroup("waiting", 1, phase="Pending"),
        b.podgroup("short", 2),
        best_effort("w", group="waiting"),
        best_effort("s", group="short"),
    )
    ssn = open_session(snap, Gang())
    backfill(ssn)
    assert ssn.result.binds == []


def test_gang_of_best_effort_pods_binds_when_ready() -> None:
    snap = b.snapshot(
        b.node("a"),
        b.podgroup("job", 2),
        best_effort("x", group="job"),
        best_effort("y", group="job"),
    )
    ssn = open_session(snap, Gang())
    backfill(ssn)
    assert sorted(bind.name for bind in ssn.result.binds) == ["x", "y"]


def test_gang_not_ready_is_undone() -> None:
    snap = b.snapshot(
        b.node("a", pods=1),
        b.podgroup("job", 2),
        best_effort("x", group="job"),
        best_effort("y", group="job"),
    )
    ssn = open_session(snap, Gang())
    backfill(ssn)
    assert ssn.result.binds == []
    assert ssn.jobs["default/job"].count([TaskStatus.PENDING]) == 2
    assert int(ssn.table.idle[0, 0]) == 1
