"""A job's books against its queue, and the totals of settled jobs per queue.

What a job holds (``allocated``), what of its PodGroup's minResources it still
reserves, and what it holds beyond that minimum (the elastic part) are what
proportion and overcommit add up per queue. They live here, in the model, so
that the snapshot can keep the per-queue totals of *settled* jobs (see
``asyncsched.model.snapshot``) with the very functions the plugins use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asyncsched.model.job import JobInfo, PodGroupPhase
from asyncsched.model.resource import EMPTY, PODS, Resource

__all__ = [
    "SettledTotals",
    "deduct_gated",
    "elastic_part",
    "exceeded_part",
    "job_min_resources",
    "reserved_for_job",
]


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """What ``left`` has beyond ``right``, dimension by dimension, never negative."""
    return Resource({n: v - right.get(n) for n, v in left.items() if v > right.get(n)})


_WITHOUT_PODS: dict[Resource, Resource] = {}
"""minResources -> the same without ``pods``; jobs of one template share a few values."""
_BY_IDENTITY: dict[int, tuple[Resource, Resource]] = {}
"""id(minResources) -> (that object, the same without ``pods``): skips hashing and
comparing equal values; the object is held, so its id is not reused while it is here."""


def job_min_resources(job: JobInfo) -> Resource | None:
    """The PodGroup's minResources without ``pods`` (node totals carry no pod count here).

    Memoised by value (Resources are immutable): several plugins ask for every
    job at every session open.
    """
    minimum = job.min_resources
    if minimum is None:
        return None
    seen = _BY_IDENTITY.get(id(minimum))
    if seen is not None and seen[0] is minimum:
        return seen[1]
    found = _WITHOUT_PODS.get(minimum)
    if found is None:
        if len(_WITHOUT_PODS) >= 4096:
            _WITHOUT_PODS.clear()
        found = _WITHOUT_PODS[minimum] = Resource({n: v for n, v in minimum.items() if n != PODS})
    if len(_BY_IDENTITY) >= 65536:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(minimum)] = (minimum, found)
    return found


def reserved_for_job(job: JobInfo, whole_minimum_when_inqueue: bool) -> Resource:
    """What an admitted job still holds in reserve of its minResources (Volcano's inqueue).

    An Inqueue job reserves its minResources (proportion counts only the part
    not allocated yet; overcommit counts all of it); a Running job whose gang is
    complete keeps reserving the part of its minimum not allocated yet.
    """
    minimum = job_min_resources(job)
    if minimum is None:
        return EMPTY
    if job.phase == PodGroupPhase.INQUEUE:
        if whole_minimum_when_inqueue:
            return deduct_gated(job, minimum)
    elif not (job.phase == PodGroupPhase.RUNNING and job.n_allocated >= job.min_available):
        return EMPTY
    if minimum == job.allocated:
        return EMPTY  # the usual running job: it holds exactly its minimum
    return deduct_gated(job, exceeded_part(minimum, job.allocated))


def deduct_gated(job: JobInfo, reserve: Resource) -> Resource:
    """``reserve`` less what the job's pending tasks held back by an outside scheduling gate
    ask (``JobInfo.gated_request``), never below zero: what an admitted job holds in its
    queue's reserve, so that a job whose pods wait on another system's gate does not keep
    other jobs out meanwhile (Volcano's ``DeductSchGatedResources``). Admitting the job
    still asks room for its whole minimum."""
    if not job.n_pending_gated:
        return reserve
    gated = job.gated_request()
    if gated.is_zero():
        return reserve
    return exceeded_part(reserve, gated)


def elastic_part(job: JobInfo) -> Resource:
    """What the job holds beyond its minResources (all it holds when it declares none)."""
    minimum = job_min_resources(job)
    if minimum is None:
        return job.allocated
    if minimum == job.allocated:
        return EMPTY
    return exceeded_part(job.allocated, minimum)


def _add(into: dict[str, int], amount: Resource, sign: int) -> None:
    for name, value in amount.items():
        into[name] = into.get(name, 0) + sign * value


@dataclass
class SettledTotals:
    """One queue's sums over its settled jobs, kept as plain integers.

    Sums of integers do not depend on the order jobs join and leave, so the
    totals equal what adding the jobs one by one at session open would give.
    """

    jobs: int = 0
    allocated: dict[str, int] = field(default_factory=dict)
    elastic: dict[str, int] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)
    """reserved_for_job(job, whole_minimum_when_inqueue=False), summed."""
    reserved_whole: dict[str, int] = field(default_factory=dict)
    """reserved_for_job(job, whole_minimum_when_inqueue=True), summed."""

    def add(self, job: JobInfo, sign: int = 1) -> None:
        """Count a job in (sign 1) or out (sign -1)."""
        self.jobs += sign
        _add(self.allocated, job.allocated, sign)
        _add(self.elastic, elastic_part(job), sign)
        if job.min_resources is not None:
            _add(self.reserved, reserved_for_job(job, False), sign)
            _add(self.reserved_whole, reserved_for_job(job, True), sign)

    def merge(self, other: SettledTotals, sign: int = 1) -> None:
        """Count ``other``'s jobs in (sign 1) or out (sign -1)."""
        self.jobs += sign * other.jobs
        for into, part in (
            (self.allocated, other.allocated),
            (self.elastic, other.elastic),
            (self.reserved, other.reserved),
            (self.reserved_whole, other.reserved_whole),
        ):
            for name, value in part.items():
                into[name] = into.get(name, 0) + sign * value

    def copy(self) -> SettledTotals:
        return SettledTotals(
            self.jobs,
            dict(self.allocated),
            dict(self.elastic),
            dict(self.reserved),
            dict(self.reserved_whole),
        )
