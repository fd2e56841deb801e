"""Reclaim: a queue below its deserved share takes back what other queues borrowed.

Queues take turns in queue order; an Overused queue (``overused``: proportion
says it holds its deserved amount) never reclaims. A queue's turn serves one
starving job: each pending task its queue may reclaim for (``preemptive``:
proportion while the task keeps the queue within its deserved amount, capacity
while it keeps the queue within its real capability and below its deserved
amount on some resource the task asks for) is tried on the nodes its static
predicates allow, in node order. On a node, running tasks of *other* queues
whose ``spec.reclaimable`` is not false, and that are preemptable, are offered
to the RECLAIMABLE plugins (gang: whole gangs or members beyond minMember;
conformance; proportion, capacity), the first tier that answers deciding; then
every SHARE_RECLAIMABLE plugin narrows them, whatever its tier (proportion and
capacity: only from queues over their deserved amount; proportion: never so far
that the two queues would trade back). Victims are chosen as
``asyncsched.actions.eviction`` describes, in victim order
(``victim_queue_order`` across queues), never below a queue's
``spec.guarantee``, and the task is placed only if its queue may take it once
they are gone (``allocatable``: in a capacity tree, room a sibling queue gives
back is room in their parent). The job's evictions are committed only if it is
then pipelined and the BestEffort members gang counts toward that have a node
(as in preempt). The queue goes back into the ordering while it has starving
jobs, so queues alternate job by job.

Unlike Volcano, Bound pods are victims as well as Running ones, the predicates
are checked again after the evictions and ``allocatable`` is asked then too
(Volcano's reclaim asks only Preemptive, which checks the queue's own real
capability, not its parent's), and the queue-share rules hold whatever tier
they sit in: Volcano lets the first tier that answers
RECLAIMABLE decide alone, so with its documented layout (conformance in tier 1,
proportion or capacity in tier 2) reclaim ignores the shares (issue #5896). And
with no plugin that keeps queue shares (none answers ``overused``,
``preemptive`` or ``share_reclaimable``: no proportion, no capacity), reclaim
does nothing: Volcano's then takes from any other queue for any starving job,
and allocate, ordering queues without shares, may hand the room straight back
to the victims' queue, whose controllers recreate them, every session.
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from asyncsched.actions.eviction import RoomMaker, never_preempts
from asyncsched.actions.preempt import commit, pipelined, place
from asyncsched.actions.walk import Walk, admitted_queue, ordered_tasks
from asyncsched.framework import Arguments, Session, Statement
from asyncsched.framework.hooks import OVERUSED, PREEMPTIVE, SHARE_RECLAIMABLE
from asyncsched.model import TaskInfo

__all__ = ["ReclaimAction"]

REASON = "reclaim"

SHARE_HOOKS = (OVERUSED, PREEMPTIVE, SHARE_RECLAIMABLE)
"""The hooks of plugins that keep queue shares: reclaim runs when one of them is answered."""


class ReclaimAction:
    name: ClassVar[str] = "reclaim"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def execute(self, ssn: Session) -> None:
        if not any(ssn.has(hook) for hook in SHARE_HOOKS):
            return  # no plugin keeps queue shares: no queue is owed anything to take back

        def victims(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
            return ssn.share_reclaimable(reclaimer, ssn.reclaimable(reclaimer, reclaimees))

        maker = RoomMaker(ssn, victims, REASON, check_allocatable=True)
        walk = Walk(ssn, frozen=False)
        tasks: dict[str, deque[TaskInfo]] = {}
        for candidate in ssn.active_jobs.values():
            pending = candidate.ungated_pending_tasks()
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
                if never_preempts(task) or not ssn.preemptive(queue, [task]):
                    continue
                place(ssn, maker, stmt, queue, task, accept, scored=False)
            if pipelined(ssn, job, stmt):
                commit(ssn, stmt, self.name)
            else:
                stmt.discard()
            if walk.has_jobs(queue):
                walk.push_queue(queue)
