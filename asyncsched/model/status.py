"""Task statuses, as Volcano defines them, and the groupings the scheduler counts by.

Modules on the per-pod path read members through module names of their own
(``_PENDING = TaskStatus.PENDING``). On CPython 3.11 reading ``TaskStatus.PENDING``
goes through the ``__getattr__`` slot of Enum's metaclass: about 850 instructions, a
few times for every task placed (counted by callgrind). A compiled module reads a
module name from a cache.
"""

from __future__ import annotations

import enum

__all__ = ["ALIVE_ON_NODE", "ALLOCATED", "OCCUPYING_NODE", "READY", "TaskStatus", "status_of_pod"]


class TaskStatus(enum.Enum):
    PENDING = "Pending"
    ALLOCATED = "Allocated"
    """Placed in this session; lives only inside a session."""
    PIPELINED = "Pipelined"
    """Promised resources that are being released; lives only inside a session."""
    BINDING = "Binding"
    """Bind sent, answer not yet seen; held in the cache so no node is double-booked."""
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    # Members are singletons compared by identity; hashing by identity keeps the
    # by-status dicts and status sets (looked up several times per placed task)
    # off Enum's Python-level __hash__.
    __hash__ = object.__hash__


ALLOCATED = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING}
)
"""Statuses whose resources count against the job's queue (Volcano's AllocatedStatus)."""

READY = ALLOCATED | {TaskStatus.SUCCEEDED}
"""Statuses that count toward a gang's minMember (Volcano's ReadyTaskNum)."""

OCCUPYING_NODE = ALLOCATED | {TaskStatus.RELEASING, TaskStatus.PIPELINED, TaskStatus.UNKNOWN}
"""Statuses of tasks that sit on a node's books."""

ALIVE_ON_NODE = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
"""Placed and alive: moves between these (a bind coming back, the kubelet's reports) change
nothing a session decides on."""


def status_of_pod(phase: str, node_name: str, deleting: bool) -> TaskStatus:
    """Map a pod's phase to a task status the way Volcano's cache does."""
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN
