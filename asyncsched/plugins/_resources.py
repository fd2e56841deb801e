"""Resource arithmetic shared by drf, proportion and overcommit, kept to Volcano's meaning."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from asyncsched.framework.state import Slot
from asyncsched.model import Resource
from asyncsched.model.books import (
    deduct_gated,
    exceeded_part,
    job_min_resources,
    reserved_for_job,
)
from asyncsched.model.resource import PODS

if TYPE_CHECKING:
    from asyncsched.framework import Session

__all__ = [
    "cluster_total",
    "cluster_used",
    "deduct_gated",
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


_SUMS: Slot[dict[str, tuple[int, int, Resource]]] = Slot(
    __name__,
    dict,
    "Cluster sums (allocatable, used) with the node-table version and epoch they match.",
)


def _summed(ssn: Session, what: str) -> Resource:
    table = ssn.table
    kept = ssn.state(_SUMS)
    found = kept.get(what)
    if found is not None and found[0] == table.version and found[1] == table.epoch:
        return found[2]
    n = len(ssn.node_list)
    ready = ssn.node_flags.ready
    rows = table.allocatable[:n][ready]
    if what == "used":
        rows = rows - table.idle[:n][ready]
    sums = rows.sum(axis=0, dtype=np.int64).tolist()
    total = Resource({name: sums[i] for i, name in enumerate(table.dimensions) if i and sums[i]})
    kept[what] = (table.version, table.epoch, total)
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
