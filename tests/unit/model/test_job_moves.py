"""``JobInfo.update_task_status`` moves a task in one pass, as the plain rule does in three.

The plain rule (Volcano's ``UpdateTaskStatus``): take the task out (``remove_task``), set its
status, put it back (``add_task``); between two allocated statuses ``allocated`` is left as it
is. The one pass must leave the job exactly as the plain rule does: the same task dict in the
same order, the same status buckets (and their order, empty ones kept), the same counts and
``allocated``, and the same objects in the journal in the same order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.api.core import PodSchedulingGate
from asyncsched.model import JobInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.journal import Journal
from asyncsched.model.status import ALLOCATED, READY
from tests.builders import pod

_STATUSES = list(TaskStatus)


def _plain_remove(job: JobInfo, task: TaskInfo) -> None:
    existing = job.tasks.pop(task.uid, None)
    if existing is None:
        return
    if not job.touched:
        job.touch()
    status = existing.status
    job.by_status.get(status, {}).pop(existing.uid, None)
    if status in READY:
        job.n_ready -= 1
        if status in ALLOCATED:
            job.n_allocated -= 1
            job.allocated = job.allocated - existing.resreq
    elif status is TaskStatus.PENDING and existing.best_effort:
        job.n_pending_best_effort -= 1
    elif status is TaskStatus.PENDING and existing.gated:
        job.n_pending_gated -= 1


def _plain_add(job: JobInfo, task: TaskInfo) -> None:
    if not job.touched:
        job.touch()
    job.tasks[task.uid] = task
    status = task.status
    job.by_status.setdefault(status, {})[task.uid] = task
    if status in READY:
        job.n_ready += 1
        if status in ALLOCATED:
            job.n_allocated += 1
            job.allocated = job.allocated + task.resreq
    elif status is TaskStatus.PENDING and task.best_effort:
        job.n_pending_best_effort += 1
    elif status is TaskStatus.PENDING and task.gated:
        job.n_pending_gated += 1


def _plain_move(job: JobInfo, task: TaskInfo, status: TaskStatus) -> None:
    """The rule as main wrote it before the one pass (remove, set, add; or the move between
    two allocated statuses)."""
    existing = job.tasks.get(task.uid)
    before = task.status
    if existing is not task or before not in ALLOCATED or status not in ALLOCATED:
        _plain_remove(job, task)
        task.set_status(status)
        _plain_add(job, task)
        return
    if not job.touched:
        job.touch()
    uid = task.uid
    del job.tasks[uid]
    job.by_status.get(before, {}).pop(uid, None)
    task.set_status(status)
    job.tasks[uid] = task
    job.by_status.setdefault(status, {})[uid] = task


def _world(
    specs: list[tuple[int, bool, int]],
) -> tuple[JobInfo, list[TaskInfo], Journal]:
    """A job and its tasks (some not in the job, some sharing a uid with another object):
    ``specs`` is (uid number, best effort, status index) per task."""
    journal: Journal = []
    job = JobInfo(uid="ns/j", name="j", namespace="ns")
    tasks = []
    for i, (uid, best_effort, status) in enumerate(specs):
        cpu, memory = ("", "") if best_effort else (str(1 + i % 3), f"{1 + i % 2}Gi")
        gates = [PodSchedulingGate(name="example.com/quota")] if uid % 3 == 0 else []
        source = pod(f"p{uid}", cpu=cpu, memory=memory, namespace="ns", scheduling_gates=gates)
        task = TaskInfo.from_pod(source, "ns/j", 0)
        task.status = _STATUSES[status]
        tasks.append(task)
        if i % 4 != 3:  # every fourth is not in the job (or stands beside one of its uid)
            job.add_task(task)
    job.touched = False
    job.journal = journal
    for task in tasks:
        task.touched = False
        task.journal = journal
    return job, tasks, journal


def _state(job: JobInfo, tasks: list[TaskInfo], journal: Journal) -> object:
    def which(task: object) -> object:  # the same object in both worlds: its place in tasks
        return next((i for i, t in enumerate(tasks) if t is task), "job" if task is job else None)

    return (
        [(k, which(t)) for k, t in job.tasks.items()],
        [(s, [(k, which(t)) for k, t in b.items()]) for s, b in job.by_status.items()],
        job.n_ready,
        job.n_allocated,
        job.n_pending_best_effort,
        job.n_pending_gated,
        job.allocated,
        job.allocated_at_open(),
        job.touched,
        [t.status for t in tasks],
        [t.touched for t in tasks],
        [which(o) for o in journal],
    )


_SPECS = st.lists(
    st.tuples(st.integers(0, 6), st.booleans(), st.integers(0, len(_STATUSES) - 1)),
    min_size=1,
    max_size=10,
)


@settings(max_examples=400, deadline=None)
@given(_SPECS, st.lists(st.tuples(st.integers(0, 9), st.integers(0, len(_STATUSES) - 1))))
def test_one_pass_moves_a_task_as_remove_set_add_do(
    specs: list[tuple[int, bool, int]], moves: list[tuple[int, int]]
) -> None:
    fast, plain = _world(specs), _world(specs)
    for pick, status in moves:
        i = pick % len(specs)
        fast[0].update_task_status(fast[1][i], _STATUSES[status])
        _plain_move(plain[0], plain[1][i], _STATUSES[status])
        assert _state(*fast) == _state(*plain)


def test_a_pending_task_placed_and_bound_counts_once() -> None:
    job, tasks, _ = _world([(0, False, 0), (1, False, 0), (2, True, 0)])
    job.update_task_status(tasks[0], TaskStatus.ALLOCATED)
    job.update_task_status(tasks[0], TaskStatus.BINDING)
    assert job.n_ready == job.n_allocated == 1
    assert job.allocated == tasks[0].resreq != Resource()
    assert list(job.tasks) == [tasks[1].uid, tasks[2].uid, tasks[0].uid]
    assert job.n_pending_best_effort == 1  # the third, still pending
