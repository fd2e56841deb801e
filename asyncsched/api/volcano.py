"""Volcano's scheduling.volcano.sh/v1beta1 objects: PodGroup and Queue.

Field names and defaults follow Volcano's CRDs so users' YAML decodes as is.
"""

from __future__ import annotations

from typing import Any

import msgspec

from asyncsched.api.meta import Condition, Int32, ObjectMeta

__all__ = [
    "DEQUEUE_FIFO",
    "DEQUEUE_STRATEGIES",
    "DEQUEUE_TRAVERSE",
    "GANG_CONDITION_TYPES",
    "GANG_SCHEDULED",
    "GANG_UNSCHEDULABLE",
    "GROUP_NAME_ANNOTATION",
    "HIERARCHY_ANNOTATION",
    "HIERARCHY_WEIGHTS_ANNOTATION",
    "PodGroup",
    "PodGroupSpec",
    "PodGroupStatus",
    "Queue",
    "QueueSpec",
    "QueueStatus",
    "unschedulable_message",
]

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
"""The pod annotation that names the pod's PodGroup (Volcano's key)."""
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
"""A Queue's path in hierarchical DRF, such as ``root/eng/prod``."""
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
"""The weights along that path, such as ``1/2/8``."""

Quantity = str | int | float


class PodGroupSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    min_member: Int32 = 1
    min_task_member: dict[str, Int32] = {}
    queue: str = "default"
    priority_class_name: str = ""
    min_resources: dict[str, Quantity] | None = None
    network_topology: dict[str, Any] | None = None


class PodGroupStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    phase: str = ""
    conditions: list[Condition] = []
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroup(
    msgspec.Struct,
    rename="camel",
    omit_defaults=True,
    tag_field="kind",
    tag="PodGroup",
    gc=False,
):
    api_version: str = "scheduling.volcano.sh/v1beta1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class QueueSpec(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    weight: Int32 = 1
    capability: dict[str, Quantity] = {}
    deserved: dict[str, Quantity] = {}
    guarantee: dict[str, Any] = {}
    reclaimable: bool | None = None
    parent: str = ""
    priority: Int32 = 0
    dequeue_strategy: str = ""
    """``fifo`` or ``traverse`` (the default when empty): see DEQUEUE_STRATEGIES."""


GANG_SCHEDULED = "Scheduled"
GANG_UNSCHEDULABLE = "Unschedulable"
GANG_CONDITION_TYPES = frozenset({GANG_SCHEDULED, GANG_UNSCHEDULABLE})
"""The PodGroup condition types the scheduler's gang logic keeps (Volcano's two); any
other type on a PodGroup is a plugin's notice (``ssn.job_notices``)."""


def unschedulable_message(pg: PodGroup | None) -> str:
    """Why the gang waits: the message of the PodGroup's Unschedulable condition while it is
    True (the last such, if several), else ``""``."""
    if pg is None:
        return ""
    for condition in reversed(pg.status.conditions):
        if condition.type == GANG_UNSCHEDULABLE and condition.status == "True":
            return condition.message
    return ""


DEQUEUE_FIFO = "fifo"
"""The head job of the queue blocks the jobs behind it until it is placed."""
DEQUEUE_TRAVERSE = "traverse"
"""A job that cannot be placed is passed over; the jobs behind it are tried (the default)."""
DEQUEUE_STRATEGIES = (DEQUEUE_FIFO, DEQUEUE_TRAVERSE)


class QueueStatus(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    state: str = ""
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0


class Queue(
    msgspec.Struct, rename="camel", omit_defaults=True, tag_field="kind", tag="Queue", gc=False
):
    api_version: str = "scheduling.volcano.sh/v1beta1"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: QueueSpec = msgspec.field(default_factory=QueueSpec)
    status: QueueStatus = msgspec.field(default_factory=QueueStatus)
