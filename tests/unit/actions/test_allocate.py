"""allocate: gangs all-or-nothing, pipelining, queue turns, BestEffort left to backfill."""

from __future__ import annotations

from typing import ClassVar

from asyncsched.actions.allocate import AllocateAction
from asyncsched.api import Node, Pod, PodGroup
from asyncsched.framework import Arguments, Session
from asyncsched.framework.hooks import ALLOCATABLE, OVERUSED, QUEUE_ORDER, BoolArray
from asyncsched.model import PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from tests import builders as b
from tests.unit.actions.support import (
    Gang,
    MostIdleCpu,
    Schedulable,
    open_session,
    releasing,
    task_of,
)


def allocate(ssn: Session) -> None:
    AllocateAction(Arguments()).execute(ssn)


def gang_pods(group: str, count: int, cpu: str = "4") -> list[Pod]:
    return [b.pod(f"{group}-{i}", cpu=cpu, group=group) for i in range(count)]


def test_gang_that_does_not_fit_binds_nothing_and_says_why() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.node("b", cpu="4"),
        b.podgroup("job", 3),
        *gang_pods("job", 3),
    )
    ssn = open_session(snap, Gang(), Schedulable())
    allocate(ssn)
    assert ssn.result.binds == []
    job = ssn.jobs["default/job"]
    assert job.count([TaskStatus.PENDING]) == 3
    assert ssn.table.idle[:2, ssn.table.index["cpu"]].tolist() == [4000, 4000]
    attempt = ssn.undone_gangs.by_uid["default/job"]
    assert (attempt.fitted, attempt.needed) == (2, 3)
    assert attempt.fit_errors is not None
    assert attempt.fit_errors.message() == "0/2 nodes are unavailable: 2 Insufficient cpu."
    # where the two that fitted had gone (Volcano's last transaction), for their reason
    assert ssn.last_placements.by_uid == {"default/job-0": "a", "default/job-1": "b"}


def test_gang_that_fits_binds_every_member() -> None:
    snap = b.snapshot(
        *(b.node(n, cpu="4") for n in "abc"),
        b.podgroup("job", 3),
        *gang_pods("job", 3),
    )
    ssn = open_session(snap, Gang(), MostIdleCpu())
    allocate(ssn)
    assert sorted(bind.node for bind in ssn.result.binds) == ["a", "b", "c"]
    assert ssn.jobs["default/job"].count([TaskStatus.BINDING]) == 3
    assert ssn.undone_gangs.by_uid == {}


def test_gang_pipelines_onto_releasing_resources() -> None:
    old = releasing(b.pod("old", cpu="4", node_name="a", phase="Running"))
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.node("b", cpu="4"),
        old,
        b.podgroup("job", 2),
        *gang_pods("job", 2),
    )
    ssn = open_session(snap, Gang())
    allocate(ssn)
    job = ssn.jobs["default/job"]
    assert ssn.result.binds == []
    assert job.count([TaskStatus.PIPELINED]) == 1
    assert job.count([TaskStatus.ALLOCATED]) == 1
    pipelined = job.tasks_in(TaskStatus.PIPELINED)[0]
    assert pipelined.node_name == "a"
    assert "default/job" not in ssn.undone_gangs.by_uid


def test_members_above_min_are_placed_after_the_gang_is_ready() -> None:
    snap = b.snapshot(
        b.node("a", cpu="8"),
        b.podgroup("job", 1),
        *gang_pods("job", 3),
    )
    ssn = open_session(snap, Gang())
    allocate(ssn)
    assert len(ssn.result.binds) == 2
    assert ssn.jobs["default/job"].count([TaskStatus.PENDING]) == 1
    assert "default/job" not in ssn.undone_gangs.by_uid


def test_best_effort_tasks_are_left_to_backfill() -> None:
    snap = b.snapshot(b.node("a"), b.pod("be", cpu="", memory=""), b.pod("p"))
    ssn = open_session(snap, Gang())
    allocate(ssn)
    assert [bind.name for bind in ssn.result.binds] == ["p"]
    assert task_of(ssn, "default/be").status is TaskStatus.PENDING


def test_pending_jobs_wait_for_enqueue_unless_it_is_not_configured() -> None:
    objects: list[Node | Pod | PodGroup] = [
        b.node("a"),
        b.podgroup("job", 1, phase="Pending"),
        *gang_pods("job", 1, cpu="1"),
    ]
    ssn = open_session(b.snapshot(*objects), Gang())
    allocate(ssn)
    assert ssn.result.binds == []

    ssn = open_session(b.snapshot(*objects), Gang(), actions="allocate, backfill")
    allocate(ssn)
    assert len(ssn.result.binds) == 1
    assert ssn.jobs["default/job"].phase == PodGroupPhase.INQUEUE


def test_invalid_jobs_are_skipped() -> None:
    snap = b.snapshot(
        b.node("a", cpu="16"),
        b.podgroup("job", 3),
        *gang_pods("job", 2),
    )
    ssn = open_session(snap, Gang())
    allocate(ssn)
    assert ssn.result.binds == []
    assert ssn.undone_gangs.by_uid == {}


def test_job_stops_at_the_first_failure_when_every_task_is_needed() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.podgroup("job", 3),
        b.pod("job-0", cpu="8", group="job", created="2024-01-01T00:00:00Z"),
        b.pod("job-1", cpu="1", group="job", created="2024-01-01T00:00:01Z"),
        b.pod("job-2", cpu="1", group="job", created="2024-01-01T00:00:02Z"),
    )
    ssn = open_session(snap, Gang())
    allocate(ssn)
    assert ssn.result.binds == []
    assert set(ssn.fit_failures.by_uid) == {"default/job-0"}
    assert ssn.undone_gangs.by_uid["default/job"].fitted == 0


def test_job_goes_on_past_a_failure_while_its_gang_can_still_form() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.podgroup("job", 2),
        b.pod("job-0", cpu="8", group="job", created="2024-01-01T00:00:00Z"),
        b.pod("job-1", cpu="1", group="job", created="2024-01-01T00:00:01Z"),
        b.pod("job-2", cpu="1", group="job", created="2024-01-01T00:00:02Z"),
    )
    ssn = open_session(snap, Gang())
    allocate(ssn)
    assert sorted(bind.name for bind in ssn.result.binds) == ["job-1", "job-2"]


def test_failed_role_is_not_tried_again() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.podgroup("job", 1),
        *(b.pod(f"w-{i}", cpu="8", group="job", role="worker") for i in range(3)),
    )
    calls: list[str] = []
    plugin = Schedulable(per_node=True)
    ssn = open_session(snap, Gang(), plugin)
    batch = ssn.batch_predicate

    def counted(task: TaskInfo) -> list[tuple[str, BoolArray]]:
        calls.append(task.name)
        return batch(task)

    ssn.batch_predicate = counted  # type: ignore[method-assign]
    allocate(ssn)
    assert len(calls) == 1
    assert len(ssn.fit_failures.by_uid) == 3
    assert len({id(e) for e in ssn.fit_failures.by_uid.values()}) == 1


def test_queues_take_turns() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.queue("q1", created="2024-01-01T00:00:00Z"),
        b.queue("q2", created="2024-01-01T00:00:01Z"),
        b.podgroup("j1", 1, queue="q1"),
        b.podgroup("j2", 1, queue="q2"),
        *gang_pods("j1", 4, cpu="1"),
        *gang_pods("j2", 4, cpu="1"),
    )
    ssn = open_session(snap, Gang(), _LeastAllocatedQueue())
    allocate(ssn)
    assert sorted(bind.name for bind in ssn.result.binds) == ["j1-0", "j1-1", "j2-0", "j2-1"]


def test_overused_queue_is_skipped_and_allocatable_gates_tasks() -> None:
    snap = b.snapshot(
        b.node("a", cpu="8"),
        b.queue("full"),
        b.queue("capped"),
        b.podgroup("j1", 1, queue="full"),
        b.podgroup("j2", 1, queue="capped"),
        *gang_pods("j1", 1, cpu="1"),
        *gang_pods("j2", 3, cpu="1"),
    )
    ssn = open_session(snap, Gang(), _Limits())
    allocate(ssn)
    assert sorted(bind.name for bind in ssn.result.binds) == ["j2-0", "j2-1"]


def test_without_gang_every_task_is_its_own_decision() -> None:
    snap = b.snapshot(
        b.node("a", cpu="4"),
        b.podgroup("job", 3),
        *gang_pods("job", 3, cpu="2"),
    )
    ssn = open_session(snap)
    allocate(ssn)
    assert len(ssn.result.binds) == 2


class _LeastAllocatedQueue:
    """Queue order: the queue with fewer allocated tasks first (a stand-in for proportion)."""

    name: ClassVar[str] = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        def allocated(queue: QueueInfo) -> int:
            return sum(j.ready_task_num() for j in ssn.jobs.values() if j.queue == queue.name)

        ssn.add(QUEUE_ORDER, self.name, lambda left, right: allocated(left) - allocated(right))

    def on_session_close(self, ssn: Session) -> None:
        pass


class _Limits:
    """Queue ``full`` is overused; queue ``capped`` takes at most two tasks."""

    name: ClassVar[str] = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        def used(queue: QueueInfo) -> int:
            return sum(j.ready_task_num() for j in ssn.jobs.values() if j.queue == queue.name)

        ssn.add(OVERUSED, self.name, lambda queue: queue.name == "full")
        ssn.add(ALLOCATABLE, self.name, lambda queue, task: used(queue) < 2)

    def on_session_close(self, ssn: Session) -> None:
        pass


class _TwoTasksPerQueue:
    name: ClassVar[str] = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        def used(queue: QueueInfo) -> int:
            return sum(j.ready_task_num() for j in ssn.jobs.values() if j.queue == queue.name)

        ssn.add(ALLOCATABLE, self.name, lambda queue, task: used(queue) < 2)

    def on_session_close(self, ssn: Session) -> None:
        pass


def test_queue_refusal_on_a_full_cluster_reports_the_missing_resource() -> None:
    snap = b.snapshot(b.node("a", cpu="8"), b.podgroup("job", 3), *gang_pods("job", 3))
    ssn = open_session(snap, Gang(), _TwoTasksPerQueue())
    allocate(ssn)
    attempt = ssn.undone_gangs.by_uid["default/job"]
    assert attempt.fitted == 2
    assert attempt.fit_errors is not None
    assert attempt.fit_errors.message() == "0/1 nodes are unavailable: 1 Insufficient cpu."


def test_queue_refusal_with_room_on_the_nodes_has_no_fit_error() -> None:
    snap = b.snapshot(b.node("a", cpu="16"), b.podgroup("job", 3), *gang_pods("job", 3))
    ssn = open_session(snap, Gang(), _TwoTasksPerQueue())
    allocate(ssn)
    attempt = ssn.undone_gangs.by_uid["default/job"]
    assert (attempt.fitted, attempt.fit_errors) == (2, None)
    assert ssn.fit_failures.by_uid == {}
