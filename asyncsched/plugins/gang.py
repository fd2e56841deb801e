"""gang: a job runs only when at least minAvailable of its tasks (and minTaskMember
of each role) can run together.

Besides Volcano's checks, gang writes the PodGroup condition at session close.
An unschedulable gang gets a message that says how far the gang got and why
the rest did not fit ("3/8 tasks in gang fit: Insufficient nvidia.com/gpu on 5
node(s)"), so users and autoscalers can act on it.
"""

from __future__ import annotations

from typing import ClassVar

from asyncsched.api import Condition
from asyncsched.framework import Arguments, FitErrors, Session
from asyncsched.framework.hooks import (
    JOB_ORDER,
    JOB_PIPELINED,
    JOB_READY,
    JOB_STARVING,
    JOB_VALID,
    PREEMPTABLE,
    RECLAIMABLE,
    JobOrderFn,
    ValidateResult,
)
from asyncsched.framework.orderkeys import KeyOrder
from asyncsched.framework.orders import task_fallback
from asyncsched.framework.reasons import queue_refusal, resources_text
from asyncsched.model import JobInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.status import READY
from asyncsched.model.timestamps import format_timestamp

__all__ = [
    "NOT_ENOUGH_PODS_OF_TASK",
    "NOT_ENOUGH_RESOURCES",
    "NOT_ENOUGH_TASKS",
    "SCHEDULED_REASON",
    "GangPlugin",
]

NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
SCHEDULED_REASON = "tasks in gang are ready to be scheduled"

_VALID = READY | {TaskStatus.PENDING, TaskStatus.PIPELINED}
_PIPELINED = READY | {TaskStatus.PIPELINED}


def _pending_best_effort(job: JobInfo) -> list[TaskInfo]:
    return [t for t in job.tasks_in(TaskStatus.PENDING) if t.best_effort]


def is_ready(job: JobInfo) -> bool:
    """Enough tasks hold resources; best-effort pods need none, so they count too."""
    return job.n_ready + job.n_pending_best_effort >= job.min_available


def is_ready_by_role(job: JobInfo) -> bool:
    """Ready, and no role short of its minTaskMember: what JOB_READY answers. The PodGroup
    condition asks ``is_ready`` alone, as Volcano's gang does at session close: a gang
    whose count is met while one role is short (a pod of it failed and waits) stays
    Scheduled, so its PodGroup stays Running, not Unknown (the Job's Unknown event)."""
    return is_ready(job) and not _roles_short(job, READY, best_effort=True)


def is_pipelined(job: JobInfo) -> bool:
    waiting = job.waiting_task_num() + job.ready_task_num()
    return waiting + job.pending_best_effort_num() >= job.min_available


def _roles_short(job: JobInfo, statuses: frozenset[TaskStatus], best_effort: bool) -> list[str]:
    """Roles with fewer tasks in ``statuses`` than their minTaskMember, as "role (have/need)".

    When minAvailable is below the sum of the per-role minimums, the per-role
    check is off, as in Volcano.
    """
    if not job.min_task_member or job.min_available < sum(job.min_task_member.values()):
        return []
    counts = job.role_counts(statuses)
    if best_effort:
        for task in _pending_best_effort(job):
            counts[task.role] = counts.get(task.role, 0) + 1
    return [
        f"{role} ({counts.get(role, 0)}/{need})"
        for role, need in sorted(job.min_task_member.items())
        if need > 0 and counts.get(role, 0) < need
    ]


_EVICTABLE = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})


def _gang_victims(ssn: Session, preemptees: list[TaskInfo]) -> list[TaskInfo]:
    """Never a gang below its minAvailable, unless the whole gang goes.

    A job may lose the tasks it holds beyond minAvailable (the first ones
    offered, in the order given, as Volcano's gang does); and when every task
    it holds is offered, all of them: evicting a whole gang leaves no job
    broken, while one member too many kills the job and keeps its other pods
    holding nodes for nothing.
    """
    offered: dict[str, set[str]] = {}
    for task in preemptees:
        offered.setdefault(task.job, set()).add(task.uid)
    whole: set[str] = set()
    for uid, tasks in offered.items():
        job = ssn.jobs.get(uid)
        if job is None:
            continue
        held = [t for t in job.tasks.values() if t.status in READY]
        if held and all(t.uid in tasks and t.status in _EVICTABLE for t in held):
            whole.add(uid)
    occupied: dict[str, int] = {}
    victims = []
    for task in preemptees:
        job = ssn.jobs.get(task.job)
        if job is None:
            continue
        if job.uid in whole:
            victims.append(task)
            continue
        held_now = occupied.setdefault(job.uid, job.ready_task_num())
        if held_now > job.min_available:
            occupied[job.uid] = held_now - 1
            victims.append(task)
    return victims


class GangPlugin:
    name: ClassVar[str] = "gang"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.invalid: dict[str, ValidateResult] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.invalid = {}

        def valid(job: JobInfo) -> ValidateResult | None:
            result = self._validate(job)
            if result is not None:
                self.invalid[job.uid] = result
            return result

        def ready(job: JobInfo) -> bool:
            # is_ready, inlined: this runs for every job a walk orders. Not ready first.
            return job.n_ready + job.n_pending_best_effort >= job.min_available

        job_order: JobOrderFn = KeyOrder(ready)

        def pipelined(job: JobInfo) -> int:
            ok = is_pipelined(job) and not _roles_short(job, _PIPELINED, best_effort=True)
            return 1 if ok else -1

        def starving(job: JobInfo) -> bool:
            return job.waiting_task_num() + job.ready_task_num() < job.min_available

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
            return _gang_victims(ssn, preemptees)

        ssn.add(JOB_VALID, self.name, valid)
        ssn.add(JOB_ORDER, self.name, job_order)
        ssn.add(JOB_READY, self.name, is_ready_by_role)
        ssn.add(JOB_PIPELINED, self.name, pipelined)
        ssn.add(JOB_STARVING, self.name, starving)
        ssn.add(PREEMPTABLE, self.name, victims)
        ssn.add(RECLAIMABLE, self.name, victims)

    @staticmethod
    def _validate(job: JobInfo) -> ValidateResult | None:
        short = _roles_short(job, _VALID, best_effort=False)
        if short:
            return ValidateResult(
                False,
                NOT_ENOUGH_PODS_OF_TASK,
                "Not enough valid pods of each task for gang-scheduling: "
                f"{', '.join(short)} valid/minTaskMember",
            )
        valid_tasks = job.valid_task_num()
        if valid_tasks < job.min_available:
            return ValidateResult(
                False,
                NOT_ENOUGH_TASKS,
                "Not enough valid tasks for gang-scheduling, "
                f"valid: {valid_tasks}, min: {job.min_available}",
            )
        return None

    def on_session_close(self, ssn: Session) -> None:
        when = format_timestamp(ssn.now) if ssn.now else None
        deferred = ssn.budget.deferred
        for job in ssn.active_jobs.values():
            if not job.tasks or job.uid in deferred:
                continue
            if is_ready(job):
                condition = Condition(
                    type="Scheduled",
                    status="True",
                    reason=SCHEDULED_REASON,
                    last_transition_time=when,
                    transition_id=ssn.uid,
                )
            elif _held_by_releasing(job):
                continue
            else:
                condition = Condition(
                    type="Unschedulable",
                    status="True",
                    reason=NOT_ENOUGH_RESOURCES,
                    message=self.pending_message(ssn, job),
                    last_transition_time=when,
                    transition_id=ssn.uid,
                )
            ssn.podgroup_conditions.record(job.uid, condition)

    def pending_message(self, ssn: Session, job: JobInfo) -> str:
        """Why the gang is not running, as specific as the session knows.

        In order: why validation refused it; that enqueue has not admitted it;
        that it waits for releasing resources; why its tasks fit no node (from
        allocate's attempt, else the tasks' own fit errors); that its queue had
        no room; Volcano's task-count summary.
        """
        attempt = ssn.undone_gangs.get(job.uid)
        invalid = self.invalid.get(job.uid)
        if attempt is None and invalid is not None:
            return invalid.message
        behind = ssn.queued_behind.reason(job.uid, job.queue)
        if attempt is None and behind:
            return behind
        if attempt is None and job.is_pending():
            return _not_admitted(job)
        waiting = job.waiting_task_num()
        if attempt is None and waiting and is_pipelined(job):
            return (
                f"{job.ready_task_num()}/{job.min_available} tasks in gang fit now; "
                f"{waiting} more wait for resources other pods are releasing"
            )
        where = ""
        if attempt is not None:
            fitted, needed, where = attempt.fitted, attempt.needed, attempt.where
        else:
            fitted, needed = job.ready_task_num(), job.min_available
        errors = attempt.fit_errors if attempt is not None else None
        if errors is None or not errors.reasons:
            errors = _task_fit_errors(ssn, job)
        why = errors.summary() if errors is not None else _queue_reason(ssn, job)
        if not why:
            gated = sum(1 for t in job.tasks_in(TaskStatus.PENDING) if t.gated)
            why = f"{gated} wait until their scheduling gates are removed" if gated else ""
        if why:
            return f"{fitted}/{needed} tasks in gang fit{where}: {why}"
        if attempt is not None:
            return f"{fitted}/{needed} tasks in gang fit{where}"
        return _volcano_message(job)


_NOT_ADMITTED: dict[tuple[str, Resource | None], str] = {}
"""(queue, minResources) -> the message; every pending job is told it at every session."""


def _not_admitted(job: JobInfo) -> str:
    key = (job.queue, job.min_resources)
    message = _NOT_ADMITTED.get(key)
    if message is not None:
        return message
    message = f"waiting to be admitted to queue {job.queue!r}"
    if job.min_resources is not None:
        message += (
            f": its minResources {resources_text(job.min_resources)} do not fit the queue's "
            "remaining capability or the cluster's idle resources yet"
        )
    if len(_NOT_ADMITTED) >= 4096:
        _NOT_ADMITTED.clear()
    _NOT_ADMITTED[key] = message
    return message


def _queue_reason(ssn: Session, job: JobInfo) -> str:
    """What the job's queue refuses, asked of the queue hooks without changing anything.

    The allocatable question is put for the gang's missing tasks together, as
    one probe task, since the queue must take all of them for the gang to run.
    """
    queue = ssn.queue_of(job)
    if queue is None:
        return ""
    pending = sorted(job.tasks_in(TaskStatus.PENDING), key=task_fallback)
    missing = pending[: max(job.min_available - job.ready_task_num(), 1)]
    if not missing:
        return queue_refusal(ssn, queue, None)
    wanted = Resource()
    for task in missing:
        wanted = wanted + task.resreq
    probe = TaskInfo(
        uid=f"{job.uid}/gang", name=job.name, namespace=job.namespace, job=job.uid, resreq=wanted
    )
    return queue_refusal(ssn, queue, probe, f"the gang's {len(missing)} missing task(s)")


def _task_fit_errors(ssn: Session, job: JobInfo) -> FitErrors | None:
    for task in sorted(job.tasks_in(TaskStatus.PENDING), key=task_fallback):
        errors = ssn.fit_failures.get(task.uid)
        if errors is not None and errors.reasons:
            return errors
    return None


def _held_by_releasing(job: JobInfo) -> bool:
    """Releasing pods still on nodes keep the gang whole; do not call it unschedulable."""
    releasing = [t for t in job.tasks_in(TaskStatus.RELEASING) if t.node_name]
    if not releasing or job.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED):
        return False
    scheduled = job.count(
        (TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    )
    return scheduled + len(releasing) >= job.min_available


def _volcano_message(job: JobInfo) -> str:
    counts = [f"{len(tasks)} {status.value}" for status, tasks in job.by_status.items() if tasks]
    counts = sorted([*counts, f"{job.min_available} minAvailable"])
    unready = job.min_available - job.ready_task_num()
    return (
        f"{unready}/{len(job.tasks)} tasks in gang unschedulable: "
        f"pod group is not ready, {', '.join(counts)}"
    )
