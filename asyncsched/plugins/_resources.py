"""Resource arithmetic shared by drf, proportion and overcommit, kept to Volcano's meaning."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from asyncsched.model import JobInfo, PodGroupPhase, Resource
from asyncsched.model.resource import EMPTY, PODS

if TYPE_CHECKING:
    from asyncsched.framework import Session

__all__ = [
    "cluster_total",
    "cluster_used",
    "dominant_share",
    "exceeded_part",
    "fits_where_requested",
    "job_min_resources",
    "reserved_for_job",
    "share",
]


def cluster_total(ssn: Session) -> Resource:
    """Sum of the allocatable of the nodes a session schedules on (Volcano skips unready nodes).

    Summed over the node table's rows (the same integers as adding each node's
    allocatable) and kept for the session, since several plugins ask at open.
    """
    return _summed(ssn, "allocatable")


def cluster_used(ssn: Session) -> Resource:
    """Sum of what the ready nodes' tasks use, as of the first call in the session."""
    return _summed(ssn, "used")


def _summed(ssn: Session, what: str) -> Resource:
    key = f"_resources.cluster_{what}"
    table = ssn.table
    found = ssn.scratch.get(key)
    if found is not None and found[0] == table.version and found[1] == table.epoch:
        cached: Resource = found[2]
        return cached
    n = len(ssn.node_list)
    ready = np.fromiter((node.ready for node in ssn.node_list), dtype=np.bool_, count=n)
    rows = table.allocatable[:n][ready]
    if what == "used":
        rows = rows - table.idle[:n][ready]
    sums = rows.sum(axis=0, dtype=np.int64).tolist()
    total = Resource({name: sums[i] for i, name in enumerate(table.dimensions) if i and sums[i]})
    ssn.scratch[key] = (table.version, table.epoch, total)
    return total


def share(allocated: int, total: int) -> float:
    """allocated/total; a demand on a resource that does not exist counts as all of it."""
    if total == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / total


def dominant_share(allocated: Resource, total: Resource) -> tuple[str, float]:
    """The resource of ``total`` that ``allocated`` holds the most of, and that fraction."""
    best, name = 0.0, ""
    for resource, amount in total.items():
        if amount <= 0:
            continue
        fraction = share(allocated.get(resource), amount)
        if fraction > best:
            best, name = fraction, resource
    return name, best


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """What ``left`` has beyond ``right``, dimension by dimension, never negative."""
    return Resource({n: v - right.get(n) for n, v in left.items() if v > right.get(n)})


def fits_where_requested(used: Resource, limit: Resource, request: Resource) -> list[str]:
    """Dimensions the request asks for on which ``used`` exceeds ``limit`` (absent limit = 0).

    Only what the request mentions is compared, so a queue capped on GPUs
    still admits a CPU-only job. Empty list: it fits.
    """
    return sorted(
        name
        for name, amount in request.items()
        if amount > 0 and name != PODS and used.get(name) > limit.get(name)
    )


_WITHOUT_PODS: dict[Resource, Resource] = {}
"""minResources -> the same without ``pods``; jobs of one template share a few values."""


def job_min_resources(job: JobInfo) -> Resource | None:
    """The PodGroup's minResources without ``pods`` (node totals carry no pod count here).

    Memoised by value (Resources are immutable): several plugins ask for every
    job at every session open.
    """
    minimum = job.min_resources
    if minimum is None:
        return None
    found = _WITHOUT_PODS.get(minimum)
    if found is None:
        if len(_WITHOUT_PODS) >= 4096:
            _WITHOUT_PODS.clear()
        found = _WITHOUT_PODS[minimum] = Resource({n: v for n, v in minimum.items() if n != PODS})
    return found


def reserved_for_job(job: JobInfo, whole_minimum_when_inqueue: bool) -> Resource:
    """What an admitted job still holds in reserve of its minResources (Volcano's inqueue).

    An Inqueue job reserves its minResources (proportion counts only the part
    not allocated yet; overcommit counts all of it); a Running job whose gang is
    complete keeps reserving the part of its minimum not allocated yet.
    """
    minimum = job_min_resources(job)
    if minimum is None:
        return Resource()
    if job.phase == PodGroupPhase.INQUEUE:
        if whole_minimum_when_inqueue:
            return minimum
    elif not (job.phase == PodGroupPhase.RUNNING and job.n_allocated >= job.min_available):
        return Resource()
    if minimum == job.allocated:
        return EMPTY  # the usual running job: it holds exactly its minimum
    return exceeded_part(minimum, job.allocated)
    return Resource()
