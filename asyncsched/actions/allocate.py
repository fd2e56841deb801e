"""Allocate: place the pending tasks of admitted jobs, whole gangs or nothing.

The walk is Volcano's: take the queue first in queue order, the job first in
job order within it, and that job's pending tasks in task order. Each task
goes to the best node where it fits now, else is pipelined onto a node whose
releasing resources will make room. The job's decisions live in a Statement
until the gang is complete (``job_ready``): then they are committed as binds;
a job that can only wait for releasing resources keeps its promises for this
session (``job_pipelined``); anything else is undone and remembered in
``ssn.undone_gangs`` so the pending reason can say how far it got. When
the queue refused the tasks that were missing (``allocatable``), the gang's
reason also says whether they would have fit any node, since a queue that
deserves the whole cluster is refused exactly when the cluster is full.

A job stops taking tasks once it is ready and goes back behind the other
jobs of its queue, and the queue goes back into the queue ordering: queues
and jobs take turns, so weighted queues share as their plugins order them.
A queue whose ``spec.dequeueStrategy`` is ``fifo`` has no more turns this
session once a job of it could not be placed, so no later job overtakes it;
unless a plugin holds room for that job (``job_reserved``, e.g. the
antistarvation package), whose predicates then keep the later jobs out of it.

A job with ``networkTopology`` is tried in HyperNodes, lowest tier first, each trial
undone, and placed in the best-scoring HyperNode that holds the whole gang
(``asyncsched.actions.hypernode_search``); ``find_node``'s ``extra_failures`` confine
its tasks there. Not yet here: sub-job policies (``partitionPolicy``).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any, ClassVar

from asyncsched.actions.hypernode_search import confine, job_limit, nowhere, search
from asyncsched.actions.placement import find_node, place_best_effort_members, share_failure
from asyncsched.actions.walk import Walk, ordered_tasks
from asyncsched.framework import Arguments, FitErrors, GangAttempt, Session, Statement
from asyncsched.framework.hooks import HYPERNODE_ORDER, BoolArray
from asyncsched.model import JobInfo, PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from asyncsched.model.hypernodes import TopologyLimit
from asyncsched.model.status import READY

__all__ = ["AllocateAction"]

# Statuses as module names: cheaper to read compiled (asyncsched.model.status).
_PENDING = TaskStatus.PENDING

log = logging.getLogger(__name__)


class AllocateAction:
    name: ClassVar[str] = "allocate"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        _Allocation(ssn).run()


class _Allocation:
    """The work list of one allocate run: queues, their jobs, each job's tasks."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.walk = Walk(ssn)
        self.tasks: dict[str, deque[TaskInfo]] = {}
        self.unordered: set[str] = set()
        """Jobs whose tasks are not gathered yet: with a fixed task order
        (``Session.fixed_task_order``) the tasks and order taken at a job's first turn are
        those it had when collected, so they are taken only for jobs that get a turn."""
        self.failed_roles: dict[str, dict[str, FitErrors | None]] = {}
        """Per job, the roles a task failed to fit this run, with that task's fit errors."""

    def run(self) -> None:
        self._collect()
        ssn, walk = self.ssn, self.walk
        budget = ssn.budget
        while walk:
            if budget.spent:
                budget.deferred.update(job.uid for job in walk.remaining_jobs())
                break
            queue = walk.pop_queue()
            if ssn.overused(queue):
                log.debug("queue %s is overused", queue.name)
                continue
            job = walk.pop_job(queue)
            if job is None:
                continue
            if job.uid in self.unordered:
                self.unordered.discard(job.uid)
                tasks = self.tasks[job.uid] = deque(ordered_tasks(ssn, _pending(job)))
                if not tasks:  # all it waits with is gated: as if never collected
                    walk.push_queue(queue)
                    continue
            else:
                tasks = self.tasks[job.uid]
            stmt = self._allocate_job(job, queue, tasks)
            if stmt is not None and ssn.job_ready(job):
                budget.spend(len(stmt))
                stmt.commit()
                if tasks:
                    walk.push_job(job)
            elif stmt is None and queue.is_fifo() and not ssn.job_reserved(job):
                behind = [j.uid for j in walk.waiting_jobs(queue)]
                ssn.queued_behind.hold(behind, job.shown_name())
                continue
            walk.push_queue(queue)

    def _collect(self) -> None:
        ssn = self.ssn
        enqueue_configured = "enqueue" in ssn.configuration.actions
        fixed = ssn.fixed_task_order() is not None
        for job in ssn.active_jobs.values():
            if job.is_pending():
                if enqueue_configured:
                    continue
                job.set_phase(PodGroupPhase.INQUEUE)
            verdict = ssn.job_valid(job)
            if verdict is not None and not verdict.passed:
                log.debug("job %s not valid: %s %s", job.uid, verdict.reason, verdict.message)
                continue
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            if fixed:
                # Gathered and ordered when the job's turn first comes (most wait, under a
                # budget): until then only its own turns change its tasks, so they are the
                # same tasks in the same order as now.
                waiting = job.by_status.get(_PENDING)
                if not waiting or len(waiting) <= job.n_pending_best_effort:
                    continue
                self.unordered.add(job.uid)
            else:
                pending = _pending(job)
                if not pending:
                    continue
                self.tasks[job.uid] = deque(ordered_tasks(ssn, pending))
            self.walk.add(queue, job)

    def _allocate_job(
        self, job: JobInfo, queue: QueueInfo, tasks: deque[TaskInfo]
    ) -> Statement | None:
        """Place tasks until the job is ready; the statement, or None once undone."""
        ssn = self.ssn
        limit = job_limit(ssn, job)
        if limit is not None:
            return self._allocate_by_topology(job, queue, tasks, limit)
        trial = self._try(job, queue, tasks, self.failed_roles.setdefault(job.uid, {}))
        return self._settle(job, trial)

    def _allocate_by_topology(
        self, job: JobInfo, queue: QueueInfo, tasks: deque[TaskInfo], limit: TopologyLimit
    ) -> Statement | None:
        """Place the gang in the best-scoring HyperNode of the lowest tier that holds it whole
        (``asyncsched.actions.hypernode_search``). Volcano tries every HyperNode of the
        tier and then takes the best-scoring success; the scores do not depend on the trials
        (each is undone), so trying them best first and keeping the first success is the
        same choice at a fraction of the work. A job already whole grows only where a trial
        places at least one more task."""
        ssn = self.ssn
        found = search(ssn, job, limit)
        extending = job.ready_task_num() >= job.min_available
        closest: _Trial | None = None
        for gradient in found.gradients:
            order: list[int] | range = range(len(gradient))
            if ssn.has(HYPERNODE_ORDER):  # without a scorer every score is 0: name order
                scores = [ssn.hypernode_score(job, hn) for hn in gradient]
                order = sorted(order, key=lambda i: (-scores[i], i))
            for i in order:
                left = deque(tasks)
                trial = self._try(job, queue, left, {}, confine(ssn, gradient[i]))
                if trial.kept and (trial.placed or not extending):
                    tasks.clear()
                    tasks.extend(left)
                    return self._settle(job, trial)
                trial.stmt.discard()
                if not trial.kept and (closest is None or trial.placed > closest.placed):
                    closest = trial
        if extending:
            if not found.gradients and tasks:  # the pods' reason: no gang message tells it
                find_node(ssn, tasks[0], extra_failures=nowhere(ssn, found.why_none))
            tasks.clear()  # nothing more fits within the limit this session
            return Statement(ssn)  # whole already: nothing to undo
        tasks.clear()
        if closest is not None:
            return self._settle(
                job, closest, f" within one HyperNode of tier {limit.tier} or lower"
            )
        why = f" ({found.why_none})"
        ssn.undone_gangs.record(
            job.uid, GangAttempt(job.ready_task_num(), job.min_available, None, why)
        )
        return None

    def _try(
        self,
        job: JobInfo,
        queue: QueueInfo,
        tasks: deque[TaskInfo],
        failed_roles: dict[str, FitErrors | None],
        confined: list[tuple[str, BoolArray]] | None = None,
    ) -> _Trial:
        """Place the job's tasks (on the ``confined`` nodes only) until it is ready."""
        ssn = self.ssn
        stmt = Statement(ssn)
        trial = _Trial(stmt, job.ready_task_num(), confined or [])
        while tasks:
            task = tasks.popleft()
            if not ssn.allocatable(queue, task):
                log.debug("queue %s may not take task %s now", queue.name, task.key)
                trial.refused = trial.refused or task
                continue
            if task.role and task.role in failed_roles:
                known = failed_roles[task.role]
                if known is not None:
                    share_failure(ssn, task, known)
                trial.first_errors = trial.first_errors or known
                continue
            placement = find_node(ssn, task, extra_failures=trial.confined)
            if placement is None:
                errors = ssn.fit_failures.get(task.uid)
                trial.first_errors = trial.first_errors or errors
                failed_roles.setdefault(task.role, errors)
                if _need_continue(job, failed_roles):
                    continue
                break
            if placement.fits_idle:
                stmt.allocate(task, placement.node)
            else:
                stmt.pipeline(task, placement.node)
            if ssn.job_ready(job):
                break

        trial.placed = len(stmt)
        if ssn.job_ready(job):
            missing = place_best_effort_members(ssn, job, stmt, trial.confined)
            trial.kept = missing is None
            trial.first_errors = trial.first_errors or missing
        else:
            trial.kept = ssn.job_pipelined(job)
        return trial

    def _settle(self, job: JobInfo, trial: _Trial, where: str = "") -> Statement | None:
        """The trial's statement if it holds the gang; else undo it and remember how far
        it got (the gang's pending reason)."""
        ssn = self.ssn
        if trial.kept:
            return trial.stmt
        first_errors = trial.first_errors
        refused = trial.refused
        if (
            first_errors is None
            and refused is not None
            and find_node(ssn, refused, extra_failures=trial.confined) is None
        ):
            first_errors = ssn.fit_failures.get(refused.uid)
        fitted = trial.ready_before + trial.placed
        attempt = GangAttempt(fitted, job.min_available, first_errors, where)
        ssn.undone_gangs.record(job.uid, attempt)
        trial.stmt.discard()
        return None


@dataclass
class _Trial:
    """One attempt at placing a job, kept or not."""

    stmt: Statement
    ready_before: int
    confined: list[tuple[str, BoolArray]]
    placed: int = 0
    """Tasks the trial placed (before any undo)."""
    kept: bool = False
    """The gang is whole (or waits only for resources being released): keep the statement."""
    first_errors: FitErrors | None = None
    refused: TaskInfo | None = None
    """The first task the queue would not take."""


def _pending(job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks allocate places (best-effort ones go in at the end, when the
    gang is whole: ``place_best_effort_members``; gated ones wait for their gates)."""
    return [t for t in job.ungated_pending_tasks() if not t.best_effort]


def _need_continue(job: JobInfo, failed_roles: dict[str, Any]) -> bool:
    """After a task found no node, may the job's other tasks still make the gang?

    Volcano's rule: never when every task is needed; otherwise the tasks of
    roles that did not fail must be able to reach minAvailable, or, with
    per-role minimums, no failed role may be short of its own minimum.
    """
    if job.min_available >= len(job.tasks):
        return False
    if job.min_available < sum(job.min_task_member.values()):
        left = sum(1 for t in job.pending_tasks() if t.role not in failed_roles)
        return job.ready_task_num() + left >= job.min_available
    held: dict[str, int] = {}
    for task in job.tasks.values():
        if task.status in READY or (task.best_effort and task.status is _PENDING):
            held[task.role] = held.get(task.role, 0) + 1
    return all(held.get(role, 0) >= job.min_task_member.get(role, 0) for role in failed_roles)
