"""Reclaim: a queue below its deserved share takes back what other queues borrowed.

Queues take turns in queue order; an Overused queue (``overused``: proportion
says it holds its deserved amount) never reclaims. A queue's turn serves one
starving job: each pending task its queue may take (``allocatable``) is tried
on the nodes its static predicates allow, in node order. On a node, running
tasks of *other* queues whose ``spec.reclaimable`` is not false, and that are
preemptable, are offered to the RECLAIMABLE plugins (proportion: only from
queues over their deserved amount, and never so far that the two queues would
trade back, applied whichever tier decides; gang: whole gangs or members
beyond minMember; conformance), and
victims are chosen as ``asyncsched.actions.eviction`` describes, never below a
queue's ``spec.guarantee``. The job's evictions are committed only if it is
then pipelined. The queue goes back into the ordering while it has starving
jobs, so queues alternate job by job.

Unlike Volcano, Bound pods are victims as well as Running ones, and the
predicates are checked again after the evictions. And with no plugin that keeps
queue shares (none answers ``overused``: no proportion, no capacity), reclaim
does nothing: Volcano's then takes from any other queue for any starving job,
and allocate, ordering queues without shares, may hand the room straight back
to the victims' queue, whose controllers recreate them, every session.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import ClassVar

from asyncsched.actions.eviction import RoomMaker, never_preempts
from asyncsched.actions.preempt import commit, place
from asyncsched.actions.walk import Walk, admitted_queue, ordered_tasks
from asyncsched.framework import Arguments, Session, Statement
from asyncsched.framework.hooks import OVERUSED
from asyncsched.model import TaskInfo

__all__ = ["ReclaimAction"]

REASON = "reclaim"


class ReclaimAction:
    name: ClassVar[str] = "reclaim"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        if not ssn.has(OVERUSED):
            return  # no plugin keeps queue shares: no queue is owed anything to take back
        maker = RoomMaker(ssn, _victims(ssn), REASON, check_allocatable=False)
        walk = Walk(ssn, frozen=False)
        tasks: dict[str, deque[TaskInfo]] = {}
        for candidate in ssn.active_jobs.values():
            pending = candidate.pending_tasks()
            if not pending:
                continue
            home = admitted_queue(ssn, candidate)
            if home is None or not ssn.job_starving(candidate):
                continue
            tasks[candidate.uid] = deque(ordered_tasks(ssn, pending))
            walk.add(home, candidate)
        while walk:
            queue = walk.pop_queue()
            if ssn.overused(queue):
                continue
            job = walk.pop_job(queue)
            if job is None:
                continue

            def accept(victim: TaskInfo, mine: str = queue.name) -> bool:
                theirs = ssn.queues.get(ssn.jobs[victim.job].queue)
                return theirs is not None and theirs.name != mine and theirs.reclaimable

            stmt = Statement(ssn)
            todo = tasks[job.uid]
            while todo and ssn.job_starving(job):
                task = todo.popleft()
                if never_preempts(task) or not ssn.allocatable(queue, task):
                    continue
                place(ssn, maker, stmt, queue, task, accept, scored=False)
            if ssn.job_pipelined(job):
                commit(ssn, stmt, self.name)
            else:
                stmt.discard()
            if walk.has_jobs(queue):
                walk.push_queue(queue)


SHARE_RULES = ("proportion",)
"""Plugins whose reclaim rule (a ``reclaim_victims(ssn, reclaimer, reclaimees)`` method)
applies whatever tier decides: the queue shares are what reclaim is for."""


def _victims(ssn: Session) -> Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]:
    """RECLAIMABLE's answer, narrowed by the queue-share rule of each such plugin present.

    Volcano lets the first tier that answers decide alone; with its documented
    layout (conformance in tier 1, proportion in tier 2) proportion is never
    asked and reclaim takes from queues at or below their share (issue #5896).
    """
    rules = []
    for name in SHARE_RULES:
        option = ssn.options.get(name)
        rule = getattr(ssn.plugins.get(name), "reclaim_victims", None)
        if option is not None and option.enabled("enableReclaimable") and callable(rule):
            rules.append(rule)

    def victims(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        found = ssn.reclaimable(reclaimer, reclaimees)
        for rule in rules:
            kept = {t.uid for t in rule(ssn, reclaimer, found)}
            found = [t for t in found if t.uid in kept]
        return found

    return victims
