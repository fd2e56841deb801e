"""What the job controller asks its shell to do: plain data, carried out in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asyncsched.api.batch import JobStatus
from asyncsched.api.volcano import PodGroup

__all__ = [
    "Action",
    "CreateConfigMap",
    "CreateNetworkPolicy",
    "CreatePod",
    "CreatePodGroup",
    "CreateSecret",
    "CreateService",
    "Decision",
    "DeleteCommand",
    "DeleteJob",
    "DeleteObject",
    "DeletePod",
    "DeletePodGroup",
    "Event",
    "MarkPodOutOfSync",
    "Request",
    "UpdatePodGroup",
]


@dataclass(frozen=True)
class Request:
    """One thing that happened to a Job, as Volcano's controller queues it.

    ``event`` is a bus event name (PodFailed, TaskCompleted, OutOfSync...);
    ``action`` is set when a Command (or a delayed policy) already decided what to do.
    ``job_version`` is the ``volcano.sh/job-version`` of the pod that raised the
    event: events from pods of an older version only trigger a sync.
    """

    event: str = "OutOfSync"
    action: str = ""
    task: str = ""
    pod: str = ""
    exit_code: int = 0
    job_version: int | None = None
    job_uid: str = ""
    partition: str = ""
    """The pod's ``volcano.sh/partition-id`` label, which RestartPartition restarts."""


@dataclass(frozen=True)
class CreatePod:
    pod: dict[str, Any]


@dataclass(frozen=True)
class DeletePod:
    namespace: str
    name: str
    reason: str


@dataclass(frozen=True)
class MarkPodOutOfSync:
    """Annotate a pod the controller is about to delete (``keys.OUT_OF_SYNC``), as
    Volcano does: its update and its deletion then only resync the Job, rather than
    raise PodEvicted and fire the Job's policies at the controller's own deletion."""

    namespace: str
    name: str


@dataclass(frozen=True)
class CreatePodGroup:
    podgroup: PodGroup


@dataclass(frozen=True)
class UpdatePodGroup:
    """Replace the PodGroup's spec with this one (status untouched)."""

    podgroup: PodGroup


@dataclass(frozen=True)
class DeletePodGroup:
    namespace: str
    name: str


@dataclass(frozen=True)
class CreateService:
    """Create if absent; an existing Service of that name is left as is."""

    service: dict[str, Any]


@dataclass(frozen=True)
class CreateConfigMap:
    """Create, or replace the data of the existing ConfigMap of that name."""

    config_map: dict[str, Any]


@dataclass(frozen=True)
class CreateSecret:
    """Create if absent (``data`` is base64, ready for the API)."""

    secret: dict[str, Any]


@dataclass(frozen=True)
class CreateNetworkPolicy:
    """Create if absent."""

    network_policy: dict[str, Any]


@dataclass(frozen=True)
class DeleteObject:
    """Delete a plugin-owned object; not-found is fine."""

    api_version: str
    kind: str
    namespace: str
    name: str


@dataclass(frozen=True)
class DeleteCommand:
    namespace: str
    name: str


@dataclass(frozen=True)
class DeleteJob:
    """ttlSecondsAfterFinished ran out: delete the Job (pods go with it through ownerReferences)."""

    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record on the Job."""

    type: str
    reason: str
    message: str


Action = (
    CreatePod
    | MarkPodOutOfSync
    | DeletePod
    | CreatePodGroup
    | UpdatePodGroup
    | DeletePodGroup
    | CreateService
    | CreateConfigMap
    | CreateSecret
    | CreateNetworkPolicy
    | DeleteObject
    | DeleteCommand
    | DeleteJob
    | Event
)


@dataclass(frozen=True)
class Decision:
    """The outcome of one reconcile.

    ``status`` is the Job's new status (write it when ``status_changed``);
    ``delayed`` holds requests to hand back to reconcile at a virtual/real time
    (policy timeouts); ``requeue_at`` is when to look again without any event
    (the earliest delayed request or the ttlSecondsAfterFinished deadline).
    Carry out ``actions`` in order, then write the status.
    """

    status: JobStatus
    status_changed: bool
    actions: list[Action] = field(default_factory=list)
    delayed: list[tuple[float, Request]] = field(default_factory=list)
    requeue_at: float | None = None
    resync: bool = False
    """The phase moved: reconcile again (Volcano requeues a Job whose phase changed)."""
