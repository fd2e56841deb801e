"""Preempt: a starving job takes room from lower-priority jobs of its own queue.

Within each queue (queue order), each job that is admitted, valid and starving
(``job_starving``: gang says it is below minMember, priority that it has tasks
not running) tries its pending tasks in task order. For a task, the nodes that
pass its static predicates are tried best score first; on a node, running
tasks of *other jobs of the same queue* that are preemptable (the
``volcano.sh/preemptable`` rule) are offered to the PREEMPTABLE plugins
(priority: lower priority only; gang: never below minMember unless the whole
gang; conformance: no critical pods; drf), and victims are chosen as
``asyncsched.actions.eviction`` describes. The task is pipelined onto the node
and its pod nominated there. The job's evictions are committed only if the job
is then pipelined (``job_pipelined``) and the BestEffort members gang counts
toward that have a node, as allocate requires; otherwise they are all undone.
Volcano counts them unchecked, so a gang whose BestEffort member fits no node
evicts for room it can never use.

Victims are taken only when, with them gone, the starving job still comes
before each victim's job in job order: allocate serves a queue's jobs in that
order, and would hand the room back to a victim's job served first, whose
controller makes the evicted pods again, every session. Volcano has no such
rule; when the priority plugin decides job order it changes nothing, as priority
only lets jobs of lower priority go.

A second pass lets a job's higher-priority pending tasks take the place of its
own lower-priority running ones, task by task, as Volcano does. Pods with
``preemptionPolicy: Never`` never preempt. Cross-queue eviction is reclaim's.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from asyncsched.actions.eviction import RoomMaker, never_preempts
from asyncsched.actions.node_masks import first_failures
from asyncsched.actions.placement import place_best_effort_members
from asyncsched.actions.walk import Walk, admitted_queue, ordered_tasks
from asyncsched.framework import Arguments, Session, Statement
from asyncsched.model import JobInfo, NodeInfo, QueueInfo, TaskInfo

__all__ = ["PreemptAction", "candidate_nodes"]

log = logging.getLogger(__name__)

REASON = "preempt"


class PreemptAction:
    name: ClassVar[str] = "preempt"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        maker = RoomMaker(ssn, ssn.preemptable, REASON, check_allocatable=True, served_first=True)
        walk = Walk(ssn, frozen=False)
        tasks: dict[str, list[TaskInfo]] = {}
        for candidate in ssn.active_jobs.values():
            pending = candidate.ungated_pending_tasks()
            if not pending:
                continue
            queue = admitted_queue(ssn, candidate)
            if queue is None or not ssn.job_starving(candidate):
                continue
            if candidate.network_topology is not None:
                # As in Volcano, a job placed by network topology does not preempt
                # (its issue #4374): victims freed here may lie outside its HyperNode.
                log.debug("job %s has a networkTopology: it does not preempt", candidate.uid)
                continue
            tasks[candidate.uid] = ordered_tasks(ssn, pending)
            walk.add(queue, candidate)
        while walk:
            queue = walk.pop_queue()
            starving: list[JobInfo] = []
            while (job := walk.pop_job(queue)) is not None:
                starving.append(job)
                self._between_jobs(ssn, maker, queue, job, deque(tasks[job.uid]))
            for job in starving:
                self._within_job(ssn, maker, queue, job)
        if maker.offered_last is not None:
            ssn.result.preemption_victims = maker.offered_last
        ssn.result.preemption_attempts += maker.attempts

    def _between_jobs(
        self, ssn: Session, maker: RoomMaker, queue: QueueInfo, job: JobInfo, tasks: deque[TaskInfo]
    ) -> None:
        stmt = Statement(ssn)

        def accept(victim: TaskInfo) -> bool:
            other = ssn.jobs[victim.job]
            return other.queue == job.queue and other.uid != job.uid

        while tasks and ssn.job_starving(job):
            task = tasks.popleft()
            if not never_preempts(task):
                place(ssn, maker, stmt, queue, task, accept)
        if pipelined(ssn, job, stmt):
            commit(ssn, stmt, self.name)
        else:
            stmt.discard()

    def _within_job(self, ssn: Session, maker: RoomMaker, queue: QueueInfo, job: JobInfo) -> None:
        def accept(victim: TaskInfo) -> bool:
            return victim.job == job.uid

        for task in ordered_tasks(ssn, job.ungated_pending_tasks()):
            if never_preempts(task):
                continue
            stmt = Statement(ssn)
            if not place(ssn, maker, stmt, queue, task, accept):
                stmt.discard()
                return
            commit(ssn, stmt, self.name)


def place(
    ssn: Session,
    maker: RoomMaker,
    stmt: Statement,
    queue: QueueInfo,
    task: TaskInfo,
    accept: Callable[[TaskInfo], bool],
    scored: bool = True,
) -> bool:
    """Try the task's candidate nodes in turn until room is made on one."""

    def usable(victim: TaskInfo) -> bool:
        if not victim.preemptable or victim.job not in ssn.jobs:
            return False
        if task.best_effort and not victim.best_effort:
            return False
        return accept(victim)

    maker.new_task()
    for node in candidate_nodes(ssn, task, scored):
        if maker.on_node(stmt, task, queue, node, usable):
            return True
    return False


def pipelined(ssn: Session, job: JobInfo, stmt: Statement) -> bool:
    """Whether the job is pipelined with the statement's evictions (``job_pipelined``), and
    the pending BestEffort members gang counts toward that can be placed: allocate keeps a
    gang only once they are (``place_best_effort_members``). One that fits no node leaves
    the gang never whole; the room its evictions made would go back to the victims' jobs,
    whose controllers make their pods again, to be evicted again, every session."""
    if not ssn.job_pipelined(job):
        return False
    mark = stmt.mark()
    missing = place_best_effort_members(ssn, job, stmt, pipeline=True)
    stmt.undo_to(mark)
    return missing is None


def commit(ssn: Session, stmt: Statement, action: str) -> None:
    """Commit a decision that evicts, counting it (``volcano_eviction_transactions_total``).

    One that evicts no one is undone: its tasks fit in room already free, which is
    allocate's and backfill's to use; pipelined, no session would ever place them."""
    if not stmt.evictions():
        stmt.discard()
        return
    counts = ssn.result.eviction_transactions
    counts[action] = counts.get(action, 0) + 1
    stmt.commit()


def candidate_nodes(ssn: Session, task: TaskInfo, scored: bool) -> list[NodeInfo]:
    """Nodes the task's static predicates (selectors, affinity, taints) allow; best score
    first when ``scored`` (ties by node order), else in node order."""
    nodes = ssn.node_list
    blocked, _ = first_failures(ssn.batch_predicate(task), len(nodes))
    rows = np.flatnonzero(~blocked)
    if scored and rows.size > 1:
        scores = ssn.node_scores(task, rows)
        rows = rows[np.argsort(-scores, kind="stable")]
    return [nodes[int(i)] for i in rows]
