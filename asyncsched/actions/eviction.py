"""Making room on one node by evicting: what preempt and reclaim share.

For a task that cannot run, the node's running tasks that the action's filter
accepts are offered to the plugins (PREEMPTABLE or RECLAIMABLE), together with
the other running tasks of their jobs, so a plugin can allow a whole gang to
go. From what the plugins allow, victims are chosen job by job:

1. Prefer taking only members a job holds beyond its minMember; a gang is
   evicted whole only when no such choice frees enough. One pod out of each
   of ten gangs kills all ten; one whole gang kills one.
2. Among the choices that free enough, disrupt the fewest jobs (greedily: the
   job that covers most of what is still missing first, victim order on ties).
3. Then every victim not actually needed is spared, last chosen first.
4. No choice leaves a queue below its ``spec.guarantee``.

Volcano instead pops victims one at a time in victim order until the task
fits, and never spares one; its gang plugin never lets a job at minMember go.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from asyncsched.framework import EventHandler, Session, Statement
from asyncsched.framework.state import Slot
from asyncsched.framework.victim_order import victim_key
from asyncsched.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from asyncsched.model.node_table import Vector
from asyncsched.model.resource import PODS
from asyncsched.model.status import READY

__all__ = ["EVICTABLE", "Guarantees", "RoomMaker", "never_preempts"]

EVICTABLE = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
"""Statuses a victim may have (Volcano's PreemptableStatus)."""

VictimsFn = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]
Filter = Callable[[TaskInfo], bool]


def never_preempts(task: TaskInfo) -> bool:
    """``preemptionPolicy: Never``: the pod waits rather than evicts anyone."""
    return task.pod.spec.preemption_policy == "Never"


class Guarantees:
    """What each queue with a ``spec.guarantee`` holds now, kept through the session's
    allocate and deallocate events, so no eviction takes a queue below its guarantee."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.guarantee = {
            name: q.guarantee
            for name, q in ssn.queues.items()
            if q.guarantee is not None and not q.guarantee.is_zero()
        }
        self.held: dict[str, Resource] = {name: Resource() for name in self.guarantee}
        if not self.guarantee:
            return
        for job in ssn.jobs.values():
            if job.queue in self.held:
                pipelined = job.tasks_in(TaskStatus.PIPELINED)
                extra = sum((t.resreq for t in pipelined), Resource())
                self.held[job.queue] = self.held[job.queue] + job.allocated + extra
        ssn.add_event_handler(
            "guarantees", EventHandler(lambda t: self._moved(t, 1), lambda t: self._moved(t, -1))
        )

    @classmethod
    def of(cls, ssn: Session) -> Guarantees:
        """The session's books (made once, by the first action that evicts)."""
        made = ssn.state(_GUARANTEES)
        if not made:
            made.append(cls(ssn))
        return made[0]

    def _moved(self, task: TaskInfo, sign: int) -> None:
        job = self.ssn.jobs.get(task.job)
        if job is not None and job.queue in self.held:
            held = self.held[job.queue]
            self.held[job.queue] = held + task.resreq if sign > 0 else held - task.resreq

    def allows(self, victims: list[TaskInfo], gainer: TaskInfo | None = None) -> bool:
        """Whether evicting ``victims`` (while ``gainer`` takes their place, when it is of
        the same queue) keeps every queue at its guarantee on what the victims used."""
        if not self.guarantee:
            return True
        taken: dict[str, Resource] = {}
        for task in victims:
            queue = self.ssn.jobs[task.job].queue
            if queue in self.guarantee:
                taken[queue] = taken.get(queue, Resource()) + task.resreq
        if gainer is not None:
            queue = self.ssn.jobs[gainer.job].queue
            if queue in taken:
                taken[queue] = taken[queue] - gainer.resreq
        for queue, amount in taken.items():
            after, floor = self.held[queue] - amount, self.guarantee[queue]
            for name, value in amount.items():
                if value > 0 and name != PODS and after.get(name) < floor.get(name):
                    return False
        return True


@dataclass
class _Unit:
    """Victims that go together: members beyond minMember, or a whole gang."""

    job: JobInfo
    tasks: list[TaskInfo]
    freed: Vector
    """What evicting them frees on the node being considered."""
    rank: int
    whole: bool


_GUARANTEES: Slot[list[Guarantees]] = Slot(
    __name__, list, "The session's guarantee books: made by the first action that evicts."
)


class RoomMaker:
    """Chooses and evicts victims on one node for one task, within a Statement."""

    def __init__(
        self,
        ssn: Session,
        victims_fn: VictimsFn,
        reason: str,
        check_allocatable: bool,
        served_first: bool = False,
    ) -> None:
        self.ssn = ssn
        self.served_first = served_first
        """The preemptor's job must come before every victim's job in job order once the
        victims are gone (preempt: allocate serves jobs of a queue in that order)."""
        self.victims_fn = victims_fn
        self.reason = reason
        self.check_allocatable = check_allocatable
        self.guarantees = Guarantees.of(ssn)
        self.offered_last: int | None = None
        """How many victims the plugins allowed on the last node examined."""
        self.attempts = 0
        """Nodes where victims could free enough and eviction was tried."""
        self.refused: list[Vector] = []
        """For the task being placed: amounts whose eviction its queue would still not
        take it after (see ``hopeless``); reset by ``new_task``."""
        self.admitted: bool | None = None
        """For the task being placed: whether its queue takes it as things stand."""

    # -- the task fits ------------------------------------------------------------

    def new_task(self) -> None:
        """A new task is being placed, or the session changed: forget what was learnt."""
        self.refused = []
        self.admitted = None

    def fits(self, task: TaskInfo, queue: QueueInfo, node: NodeInfo) -> bool:
        """The queue may take it, it fits the node's future idle, and the predicates pass."""
        if self.check_allocatable and not self.ssn.allocatable(queue, task):
            return False
        return self._fits_node(task, node)

    def _fits_node(self, task: TaskInfo, node: NodeInfo) -> bool:
        table = self.ssn.table
        if np.any(table.future_idle(node.row) < table.vector(task.init_resreq)):
            return False
        return self.ssn.predicate(task, node) is None

    # -- one node -----------------------------------------------------------------

    def on_node(
        self,
        stmt: Statement,
        task: TaskInfo,
        queue: QueueInfo,
        node: NodeInfo,
        accept: Filter,
    ) -> bool | None:
        """Make room for ``task`` on ``node`` and pipeline it there: True when placed, None
        when the node has no victims worth trying, False when trying failed (undone)."""
        table = self.ssn.table
        request = table.vector(task.init_resreq)
        future = table.future_idle(node.row)
        here = [t for t in node.tasks.values() if t.status in EVICTABLE and accept(t)]
        if self._admitted(task, queue) and self._fits_node(task, node):
            stmt.pipeline(task, node)
            return True
        if not here:
            return None
        offered_room = future + sum((table.vector(t.resreq) for t in here), np.zeros_like(future))
        if np.any(offered_room < request):
            return None
        offered = self._with_their_gangs(here, accept)
        if self.hopeless(stmt, task, queue, offered):
            return None
        allowed = self.victims_fn(task, offered)
        allowed_here = [t for t in allowed if t.node_name == node.name]
        self.offered_last = len(allowed_here)
        room = future + sum((table.vector(t.resreq) for t in allowed_here), np.zeros_like(future))
        if not allowed_here or np.any(room < request):
            return None
        self.attempts += 1
        mark = stmt.mark()
        shorts = [request - future]
        if not self._admitted(task, queue):
            # The queue wants room too: failing what the node lacks, free the task's size.
            shorts.append(np.maximum(request - future, request))
        for short in shorts:
            chosen = self._choose(task, node, allowed, short)
            if chosen and self._evict(stmt, task, node, queue, chosen):
                stmt.pipeline(task, node, nominate=True)
                return True
            stmt.undo_to(mark)
        return False

    def _admitted(self, task: TaskInfo, queue: QueueInfo) -> bool:
        """``allocatable`` as things stand, asked once per task: nothing changes between the
        nodes tried for one task (a failed try is undone; a success ends the search)."""
        if not self.check_allocatable:
            return True
        if self.admitted is None:
            self.admitted = self.ssn.allocatable(queue, task)
        return self.admitted

    def hopeless(
        self, stmt: Statement, task: TaskInfo, queue: QueueInfo, offered: list[TaskInfo]
    ) -> bool:
        """Whether the task's queue would refuse it even with every offered task gone, so
        no choice of victims among them can place it (preempt's victims are of the task's
        own queue, and proportion's ``allocatable`` only grows as its queue gives back).

        Asked once per distinct amount: evicting them all is tried and undone, and an
        amount refused answers for every later node that offers no more than it. Without
        this, preempt chose and evicted victims on every node in turn, to find the queue
        full each time (1,000 nodes for each waiting pod)."""
        if not self.check_allocatable or any(
            self.ssn.jobs[t.job].queue != queue.name for t in offered
        ):
            return False
        table = self.ssn.table
        amount = sum((table.vector(t.resreq) for t in offered), table.vector(task.resreq) * 0)
        if any(np.all(amount <= refused) for refused in self.refused):
            return True
        mark = stmt.mark()
        for victim in offered:
            stmt.evict(victim, self.reason, task)
        admitted = self.ssn.allocatable(queue, task)
        stmt.undo_to(mark)
        if not admitted:
            self.refused.append(amount)
        return not admitted

    def _with_their_gangs(self, here: list[TaskInfo], accept: Filter) -> list[TaskInfo]:
        """The node's candidates, then the other evictable tasks of their jobs, in victim
        order, so that a plugin can let a whole gang go."""
        seen = {t.uid for t in here}
        offered = list(here)
        for uid in dict.fromkeys(t.job for t in here):
            for other in self.ssn.jobs[uid].tasks.values():
                if other.uid not in seen and other.status in EVICTABLE and accept(other):
                    seen.add(other.uid)
                    offered.append(other)
        return offered

    # -- choosing -----------------------------------------------------------------

    def _units(self, task: TaskInfo, node: NodeInfo, allowed: list[TaskInfo]) -> list[_Unit]:
        """Per job, its member unit (what it holds beyond minMember, on this node) and, when
        the plugins let every task it holds go, its whole-gang unit (never the preemptor's
        own job: evicting a gang whole to run one of its own members gains nothing)."""
        table = self.ssn.table
        order = victim_key(self.ssn, task)
        by_job: dict[str, list[TaskInfo]] = {}
        for victim in sorted(allowed, key=order):
            by_job.setdefault(victim.job, []).append(victim)
        units = []
        zero = np.zeros(len(table.dimensions), dtype=np.int64)
        for rank, (uid, tasks) in enumerate(by_job.items()):
            job = self.ssn.jobs[uid]
            here = [t for t in tasks if t.node_name == node.name]
            spare = max(job.ready_task_num() - job.min_available, 0)
            members = here[:spare]
            if members:
                freed = sum((table.vector(t.resreq) for t in members), zero)
                units.append(_Unit(job, members, freed, rank, whole=False))
            held = [t for t in job.tasks.values() if t.status in READY]
            ids = {t.uid for t in tasks}
            whole = uid != task.job and all(t.uid in ids for t in held)
            if here and len(members) < len(here) and whole:
                freed = sum((table.vector(t.resreq) for t in here), zero)
                units.append(_Unit(job, tasks, freed, rank, whole=True))
        return [u for u in units if self.guarantees.allows(u.tasks, task)]

    def _choose(
        self, task: TaskInfo, node: NodeInfo, allowed: list[TaskInfo], short: Vector
    ) -> list[_Unit] | None:
        units = self._units(task, node, allowed)
        members = [u for u in units if not u.whole]
        chosen = _fewest_jobs(members, short)
        if chosen is None:
            wholes = {u.job.uid: u for u in units if u.whole}
            mixed = [wholes.get(u.job.uid, u) for u in members]
            mixed += [u for uid, u in wholes.items() if all(m.job.uid != uid for m in members)]
            chosen = _fewest_jobs(mixed, short)
        if chosen is None:
            return None
        chosen = _spare_unneeded(chosen, short, self.ssn)
        victims = [t for u in chosen for t in u.tasks]
        return chosen if self.guarantees.allows(victims, task) else None

    def _evict(
        self,
        stmt: Statement,
        task: TaskInfo,
        node: NodeInfo,
        queue: QueueInfo,
        chosen: list[_Unit],
    ) -> bool:
        for unit in chosen:
            for victim in unit.tasks:
                stmt.evict(victim, self.reason, task)
        return self.fits(task, queue, node) and self._served_first(task, chosen)

    def _served_first(self, task: TaskInfo, chosen: list[_Unit]) -> bool:
        """Whether allocate, next session, serves the preemptor's job before each victim's
        job as they stand after the evictions. When a victim's job would come first (the
        gang evicted whole now waits as the preemptor does, and is older), it would take
        the room straight back, its controller having made its pods again, and be evicted
        again: every session, for ever."""
        if not self.served_first:
            return True
        own = self.ssn.jobs[task.job]
        return all(u.job is own or self.ssn.job_order(own, u.job) for u in chosen)


def _coverage(freed: Vector, short: Vector) -> float:
    wanted = short > 0
    if not wanted.any():
        return 0.0
    return float(np.sum(np.minimum(freed[wanted], short[wanted]) / short[wanted]))


def _fewest_jobs(units: list[_Unit], short: Vector) -> list[_Unit] | None:
    """Units that together free at least ``short``, the one covering most of what is still
    missing first (earlier in victim order on ties); None when all of them cannot."""
    remaining = short.copy()
    pool = list(units)
    chosen: list[_Unit] = []
    while np.any(remaining > 0):
        if not pool:
            return None
        best = max(pool, key=lambda u: (_coverage(u.freed, remaining), -u.rank))
        if _coverage(best.freed, remaining) <= 0:
            return None
        pool.remove(best)
        chosen.append(best)
        remaining = remaining - best.freed
    return chosen


def _spare_unneeded(chosen: list[_Unit], short: Vector, ssn: Session) -> list[_Unit]:
    """Drop, last chosen first, each member (or whole gang) the rest still make do without."""
    table = ssn.table
    kept = [list(u.tasks) for u in chosen]
    total = sum((u.freed for u in chosen), np.zeros_like(short))
    for i in range(len(chosen) - 1, -1, -1):
        unit = chosen[i]
        if unit.whole:
            if np.all(total - unit.freed >= short):
                total = total - unit.freed
                kept[i] = []
            continue
        for victim in reversed(list(kept[i])):
            freed = table.vector(victim.resreq)
            if np.all(total - freed >= short):
                total = total - freed
                kept[i].remove(victim)
    return [
        _Unit(u.job, tasks, u.freed, u.rank, u.whole)
        for u, tasks in zip(chosen, kept, strict=True)
        if tasks
    ]
