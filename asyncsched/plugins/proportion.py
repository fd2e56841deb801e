"""proportion: share the cluster between queues by weight, and reclaim what a queue
holds beyond its share when another queue needs it.

A queue over its deserved amount gives back a task when it keeps its deserved
amount of what that task used, or, where tasks do not divide the deserved
amounts evenly, when it keeps a larger share of its deserved amount than the
reclaiming queue holds of its own. Volcano takes from any queue over its
deserved amount, which can push it below, after which it reclaims back: two
busy queues then trade the same pods forever. Under this rule each reclaim
raises the smallest share of the two queues, so it cannot be undone by the
next one, and the queues settle.

A queue's *deserved* amount is found by water-filling: the remaining cluster
is split by weight among the queues still wanting more; a queue's portion is
capped by its capability and by what its jobs request, at least its
guarantee, and what a queue cannot use is split again among the others. So
weights 1 and 3 on a busy cluster give a 1:3 split, but a queue asking for
less than its portion leaves the rest to the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from asyncsched.framework import Arguments, EventHandler, Session
from asyncsched.framework.hooks import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    OVERUSED,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    SHARE_RECLAIMABLE,
    QueueOrderFn,
)
from asyncsched.framework.orderkeys import KeyOrder
from asyncsched.model import JobInfo, QueueInfo, Resource, TaskInfo
from asyncsched.model.queue_tree import bounding_capability, queue_books
from asyncsched.model.resource import CPU, MEMORY, PODS
from asyncsched.plugins._queue_metrics import report_queue
from asyncsched.plugins._resources import (
    cluster_total,
    deduct_gated,
    dominant_share,
    exceeded_part,
    job_min_resources,
)

__all__ = ["ProportionPlugin", "QueueAttr"]


@dataclass
class QueueAttr:
    """One queue's books for the session."""

    name: str
    weight: int
    real_capability: dict[str, int]
    """Upper bound per resource: the cluster less others' guarantees, within capability.
    Explicit zeros matter here; a resource not listed is not bounded."""
    guarantee: Resource = field(default_factory=Resource)
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    cached_share: float = 0.0
    stale: bool = False
    """allocated changed since cached_share was computed."""

    @property
    def share(self) -> float:
        """The dominant share of deserved the queue holds (computed when read)."""
        if self.stale:
            self.update_share()
        return self.cached_share

    def update_share(self) -> None:
        self.cached_share = dominant_share(self.allocated, self.deserved)[1]
        self.stale = False


def _within(amount: Resource, bound: dict[str, int]) -> Resource:
    """Each resource cut to its bound; cpu and memory are always bounded (0 if not listed)."""
    return Resource(
        {
            name: min(value, bound.get(name, 0))
            if name in bound or name in (CPU, MEMORY)
            else value
            for name, value in amount.items()
        }
    )


def _real_capability(queue: QueueInfo, total: Resource, guarantees: Resource) -> dict[str, int]:
    """The cluster less the other queues' guarantees, within the capability. As in
    Volcano's proportion, cpu or memory at 0 (or below) in the capability bounds nothing,
    while an extended resource at 0 leaves the queue none of it."""
    guarantee = queue.guarantee or Resource()
    base = exceeded_part(total, guarantees)
    names = total.names() | guarantee.names()
    bound = {n: base.get(n) + guarantee.get(n) for n in names}
    for name, limit in queue.declared_capability.items():
        if name in bound and (limit > 0 or name not in (CPU, MEMORY, PODS)):
            bound[name] = min(bound[name], max(limit, 0))
    return bound


def water_fill(attrs: list[QueueAttr], total: Resource) -> None:
    """Set every queue's deserved amount (Volcano's proportion algorithm)."""
    remaining = total
    satisfied: set[str] = set()
    while True:
        hungry = [a for a in attrs if a.name not in satisfied]
        total_weight = sum(a.weight for a in hungry)
        if total_weight == 0:
            break
        before = remaining
        increased, decreased = Resource(), Resource()
        for attr in hungry:
            old = attr.deserved
            deserved = old + remaining.scale(attr.weight / total_weight)
            deserved = _within(deserved, attr.real_capability).minimum(attr.request)
            deserved = deserved.maximum(attr.guarantee)
            attr.deserved = deserved
            attr.update_share()
            if attr.request.fits_in(deserved) or deserved == old:
                satisfied.add(attr.name)
            increased = increased + exceeded_part(deserved, old)
            decreased = decreased + exceeded_part(old, deserved)
        remaining = exceeded_part(remaining + decreased, increased)
        if remaining.is_zero() or remaining == before:
            break


def _keeps_deserved(after: Resource, deserved: Resource, taken: Resource) -> bool:
    """The queue still holds its deserved amount of everything the taken task used."""
    return all(
        after.get(name) >= deserved.get(name)
        for name, amount in taken.items()
        if amount > 0 and name != PODS
    )


class ProportionPlugin:
    name: ClassVar[str] = "proportion"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.queues: dict[str, QueueAttr] = {}
        self._jobs: dict[str, JobInfo] = {}
        """The session's jobs, for the allocate and deallocate handlers."""

    def deserved(self, queue: str) -> Resource:
        attr = self.queues.get(queue)
        return attr.deserved if attr is not None else Resource()

    def _build(self, ssn: Session) -> None:
        total = cluster_total(ssn)
        guarantees = Resource()
        for info in ssn.queues.values():
            guarantees = guarantees + (info.guarantee or Resource())
        self.queues = {}
        books = queue_books(ssn.queues, ssn.active_jobs.values(), ssn.settled_totals)
        for name, held in books.items():
            queue = ssn.queues[name]
            self.queues[name] = QueueAttr(
                name=name,
                weight=queue.weight,
                real_capability=_real_capability(queue, total, guarantees),
                guarantee=queue.guarantee or Resource(),
                allocated=held.allocated,
                request=held.request,
                inqueue=held.inqueue,
                elastic=held.elastic,
            )
        water_fill(list(self.queues.values()), total)

    def on_session_open(self, ssn: Session) -> None:
        self._build(ssn)
        queue_order: QueueOrderFn = KeyOrder(self._queue_key)
        ssn.add(QUEUE_ORDER, self.name, queue_order)
        ssn.add(OVERUSED, self.name, self._overused)
        ssn.add(ALLOCATABLE, self.name, self._allocatable)
        ssn.add(PREEMPTIVE, self.name, self._preemptive)
        ssn.add(JOB_ENQUEUEABLE, self.name, lambda job: self._enqueueable(ssn, job))
        ssn.add(JOB_ENQUEUED, self.name, self._enqueued)

        def victims(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
            return self._reclaim_victims(ssn, reclaimer, reclaimees)

        ssn.add(RECLAIMABLE, self.name, victims)
        ssn.add(SHARE_RECLAIMABLE, self.name, victims)

        self._jobs = ssn.jobs
        ssn.add_event_handler(self.name, EventHandler(self._allocated, self._deallocated))

    def _allocated(self, task: TaskInfo) -> None:
        """A task allocated: its queue's allocated amount grows (the share is recomputed
        when next read)."""
        attr = self._attr_of(task)
        if attr is not None:
            attr.allocated = attr.allocated + task.resreq
            attr.stale = True

    def _deallocated(self, task: TaskInfo) -> None:
        """A task given back: its queue's allocated amount shrinks."""
        attr = self._attr_of(task)
        if attr is not None:
            attr.allocated = attr.allocated - task.resreq
            attr.stale = True

    def _attr_of(self, task: TaskInfo) -> QueueAttr | None:
        job = self._jobs.get(task.job)
        return self.queues.get(job.queue) if job is not None else None

    def _reclaim_victims(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> list[TaskInfo]:
        """The reclaimees whose queues may give them back (see the module's docstring).

        Registered for RECLAIMABLE, as Volcano's is, and for SHARE_RECLAIMABLE, so
        that it holds even when an earlier tier decides the victims alone (Volcano's
        issue #5896: proportion is then never asked).
        """
        own = ssn.jobs.get(reclaimer.job)
        mine = self.queues.get(own.queue) if own is not None else None
        floor = mine.share if mine is not None else 0.0
        left: dict[str, Resource] = {}
        victims = []
        for task in reclaimees:
            job = ssn.jobs.get(task.job)
            attr = self.queues.get(job.queue) if job is not None else None
            if attr is None:
                continue
            allocated = left.get(attr.name, attr.allocated)
            if allocated.fits_in(attr.deserved):
                continue  # not over its deserved: nothing to give back
            after = allocated - task.resreq
            if dominant_share(after, attr.deserved)[1] > floor or _keeps_deserved(
                after, attr.deserved, task.resreq
            ):
                left[attr.name] = after
                victims.append(task)
        return victims

    def _queue_key(self, queue: QueueInfo) -> tuple[int, float]:
        """Higher priority first, then the smaller share of deserved. A queue's share
        changes only with its own jobs' allocations, so the key depends only on the
        queue's own standing (``KeyOrder``'s condition)."""
        attr = self.queues.get(queue.name)
        return -queue.priority, attr.share if attr is not None else 0.0

    def _overused(self, queue: QueueInfo) -> bool:
        attr = self.queues.get(queue.name)
        return attr is not None and attr.deserved.fits_in(attr.allocated)

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._within_deserved(queue, task.resreq)

    def _preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        """A queue may reclaim for tasks it may take: within its deserved amount (Volcano's
        proportion answers Preemptive with its Allocatable over the tasks together)."""
        return self._within_deserved(queue, sum((t.resreq for t in tasks), Resource()))

    def _within_deserved(self, queue: QueueInfo, request: Resource) -> bool:
        if not queue.is_open():
            return False
        attr = self.queues.get(queue.name)
        if attr is None:
            return True
        # fits_where_requested(allocated + request, deserved, request) == [], without
        # building the sum: allocatable asks it once per task placed.
        return request.within(attr.allocated, attr.deserved, PODS)

    def _enqueueable(self, ssn: Session, job: JobInfo) -> int:
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.is_open():
            return -1
        attr = self.queues.get(queue.name)
        minimum = job_min_resources(job)
        if attr is None or minimum is None:
            return 1
        # fits_where_requested(minimum + allocated + inqueue - elastic, real_capability,
        # minimum) == [], without building the sums: this runs for every pending job.
        allocated, inqueue, elastic = attr.allocated, attr.inqueue, attr.elastic
        bound = attr.real_capability
        for name, amount in minimum.items():
            if amount > 0 and name != PODS:
                wanted = amount + allocated.get(name) + inqueue.get(name) - elastic.get(name)
                if wanted > bound.get(name, 0):
                    return -1
        return 1

    def _enqueued(self, job: JobInfo) -> None:
        attr = self.queues.get(job.queue)
        minimum = job_min_resources(job)
        if attr is not None and minimum is not None:
            attr.inqueue = attr.inqueue + deduct_gated(job, minimum)

    def on_session_close(self, ssn: Session) -> None:
        """Report each queue's deserved amount and Volcano's queue metrics; the books stay
        readable for other plugins."""
        for name, attr in sorted(self.queues.items()):  # the same order every time
            ssn.result.deserved[name] = attr.deserved.as_dict()
            queue = ssn.queues.get(name)
            capability = bounding_capability(queue) if queue is not None else {}
            report_queue(
                ssn,
                name,
                {
                    "allocated": attr.allocated.as_dict(),
                    "request": attr.request.as_dict(),
                    "deserved": attr.deserved.as_dict(),
                    "capacity": capability,
                    "real_capacity": attr.real_capability,
                    "inqueue": attr.inqueue.as_dict(),
                },
                share=attr.share,
                weight=attr.weight,
                overused=attr.deserved.fits_in(attr.allocated),
            )
