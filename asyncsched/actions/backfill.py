"""Backfill: place BestEffort pods (no requests) that allocate leaves alone.

A BestEffort pod needs no cpu or memory, only a pod slot and a node that
passes the predicates, so it can go wherever allocate's resource accounting
would not matter. Volcano's backfill handles only these pods (its own TODO
for other cases is still open), walking queues, then jobs, then tasks in
their plugin orders, and binds a job's pods once the job is ready. Ready here
means minMember pods placed: the gang counts pending BestEffort members as ready
(as Volcano's does), but those are the ones backfill is still placing, and one
that then fits no node would leave the gang running below its minMember.

A pod of a job with ``networkTopology`` goes only inside the HyperNodes its limit
allows, as allocate places the job's other pods (Volcano's backfill ignores topology).

Not yet here: Volcano also un-pipelines BestEffort tasks some earlier action
pipelined and retries them; allocate never pipelines BestEffort tasks, and
Statement has no un-pipeline yet.
"""

from __future__ import annotations

from typing import ClassVar

from asyncsched.actions.hypernode_search import confine, job_limit, nowhere, search
from asyncsched.actions.placement import Placement, find_node
from asyncsched.actions.walk import Walk, admitted_queue, ordered_tasks
from asyncsched.framework import Arguments, Session, Statement
from asyncsched.model import JobInfo, TaskInfo, TaskStatus

__all__ = ["BackfillAction"]

# Statuses as module names: cheaper to read compiled (asyncsched.model.status).
_PENDING = TaskStatus.PENDING


class BackfillAction:
    name: ClassVar[str] = "backfill"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        waiting: dict[str, Statement] = {}
        for job, task in _pending_best_effort(ssn):
            placement = _place(ssn, job, task)
            if placement is None:
                continue
            stmt = waiting.pop(job.uid, None) or Statement(ssn)
            stmt.allocate(task, placement.node)
            if ssn.job_ready(job) and job.ready_task_num() >= job.min_available:
                stmt.commit()
            else:
                waiting[job.uid] = stmt
        for stmt in waiting.values():
            stmt.discard()


def _place(ssn: Session, job: JobInfo, task: TaskInfo) -> Placement | None:
    """A node for the task; for a job with ``networkTopology``, within the HyperNodes its
    limit allows, lowest tier first, as allocate places its other pods."""
    limit = job_limit(ssn, job)
    if limit is None:
        return find_node(ssn, task, pipeline=False, resources=False)
    found = search(ssn, job, limit)
    if not found.gradients:  # recorded as the task's reason
        blocked = nowhere(ssn, found.why_none)
        find_node(ssn, task, pipeline=False, resources=False, extra_failures=blocked)
        return None
    for gradient in found.gradients:
        for hn in gradient:
            confined = confine(ssn, hn)
            placement = find_node(
                ssn, task, pipeline=False, resources=False, extra_failures=confined
            )
            if placement is not None:
                return placement
    return None


def _pending_best_effort(ssn: Session) -> list[tuple[JobInfo, TaskInfo]]:
    """Pending BestEffort tasks of admitted, valid jobs: by queue, then job, then task order."""
    walk = Walk(ssn)
    tasks: dict[str, list[TaskInfo]] = {}
    for job in ssn.active_jobs.values():
        pending = job.by_status.get(_PENDING)
        if not pending:
            continue  # most jobs, in a burst: asked nothing else
        best_effort = [t for t in pending.values() if t.best_effort and not t.gated]
        if not best_effort:
            continue
        queue = admitted_queue(ssn, job)
        if queue is not None:
            tasks[job.uid] = best_effort
            walk.add(queue, job)
    return [(job, task) for _, job in walk.ordered() for task in ordered_tasks(ssn, tasks[job.uid])]
