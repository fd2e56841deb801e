"""What happened, as users read it: the event stream and the facts the report is made of.

The recorder watches every kind in the store and turns each change into the
events ``asyncsched simulate --events`` writes (submitted, created, bound,
started, completed, failed, restarted, evicted, refused, deleted, unschedulable,
phase...). It changes nothing in the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from asyncsched.api import GROUP_NAME_ANNOTATION, Job, Node, Pod, PodGroup, Queue
from asyncsched.api.core import ContainerStatus
from asyncsched.backends.sim.fragmentation import FragMeter
from asyncsched.backends.sim.gpu_meter import GpuMeter
from asyncsched.backends.sim.objects import Deployment
from asyncsched.backends.sim.store import KINDS, Note, ObjectStore, WatchEvent
from asyncsched.backends.sim.usage import UsageMeter
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.cache.cluster_cache import QUEUE_NAME_ANNOTATION
from asyncsched.controllers.job import owning_job
from asyncsched.framework import SessionResult
from asyncsched.model import Resource
from asyncsched.model.node import node_allocatable
from asyncsched.model.task import pod_requests

__all__ = [
    "JobRecord",
    "PodRecord",
    "Recorder",
    "SimEvent",
    "job_name",
    "queue_of",
    "shown_as",
]

SimEvent = dict[str, Any]
USER = "user"
APISERVER = "apiserver"
"""The API server itself, making what every cluster has (the system PriorityClasses)."""
_NOTE_EVENTS = {
    "FailedScheduling": "unschedulable",
    "FailedCreate": "failed",
    "EvictionRefused": "refused",
}
"""Kubernetes Event reasons that appear in the event stream, and as what. Any other
Event of type Warning appears as ``warning``, its reason before its message."""
_EVICTORS = frozenset({"scheduler", "descheduler"})
"""Actors whose pod deletions are evictions (through the Eviction API)."""


@dataclass
class JobRecord:
    """A Volcano Job's story: when it came, the phases it went through, how it ended."""

    submitted: float
    phases: list[tuple[float, str]] = field(default_factory=list)
    refused: str = ""
    deleted: float | None = None
    last: Job | None = None


@dataclass
class PodRecord:
    """A pod's story (the latest pod of that name)."""

    submitted: float
    job: str
    """The PodGroup (or, until it has one, the pod's own name)."""
    owner: str = ""
    """``namespace/name`` of the Volcano Job that made it, if one did."""
    queue: str = ""
    bound: float | None = None
    node: str = ""
    finished: float | None = None
    failed: float | None = None
    deleted: float | None = None
    restarts: int = 0
    reason: str = ""
    """The last reason the scheduler gave for not placing it."""


def job_name(pod: Pod) -> str:
    return pod.metadata.annotations.get(GROUP_NAME_ANNOTATION) or pod.metadata.name


def shown_as(pg: PodGroup | None, group: str) -> tuple[str, str]:
    """How users know a group: one made for a lone pod, a ReplicaSet or a Volcano Job is
    shown as that pod, ReplicaSet or Job; others as the PodGroup (``group`` is
    its ``namespace/name``; a group with no PodGroup is a lone pod's own)."""
    if pg is None:
        return "Pod", group
    owner = next((r for r in pg.metadata.owner_references if r.controller), None)
    if owner is not None and owner.kind in ("Pod", "ReplicaSet", "Job"):
        return owner.kind, f"{pg.metadata.namespace}/{owner.name}"
    return "PodGroup", group


def queue_of(store: ObjectStore, pod: Pod) -> str:
    group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
    if group:
        pg = store.get(PodGroup, f"{pod.metadata.namespace}/{group}")
        return (pg.spec.queue if pg is not None else "") or "default"
    return pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")


class Recorder:
    """Turns watch events and Kubernetes Events into the event stream, and keeps the facts."""

    def __init__(
        self,
        store: ObjectStore,
        clock: Callable[[], float],
        on_event: Callable[[SimEvent], None] | None = None,
        scheduler_names: Container[str] = DEFAULT_SCHEDULER_NAMES,
        keep_events: bool = True,
    ) -> None:
        self.store = store
        self.clock = clock
        self.scheduler_names = scheduler_names
        self.waiting = 0
        """Pods of ours not bound yet."""
        self.ended = 0
        """Pods that succeeded or failed so far."""
        self.events: list[SimEvent] | None = [] if keep_events else None
        """Every event so far, unless the caller streams them (``on_event``) and the report,
        which reads the facts below, is all it needs: a long run's events run to hundreds
        of megabytes."""
        self.on_event = on_event
        self.pods: dict[str, PodRecord] = {}
        self.podgroups_submitted: dict[str, float] = {}
        self.jobs: dict[str, JobRecord] = {}
        self.usage = UsageMeter()
        self.gpus = GpuMeter()
        """What running pods held of each GPU card."""
        self.fragmentation = FragMeter(self.gpus)
        """GPU allocation, and the idle GPU the typical pods could not use, over time."""
        self._running: set[str] = set()
        store.watch(KINDS, self._changed)
        store.watch_notes(self._noted)

    def emit(self, event: str, kind: str, namespace: str, name: str, **extra: Any) -> None:
        record: SimEvent = {
            "time": round(self.clock(), 6),
            "event": event,
            "kind": kind,
            "namespace": namespace,
            "name": name,
        }
        record.update({k: v for k, v in extra.items() if v not in (None, "")})
        if self.events is not None:
            self.events.append(record)
        if self.on_event is not None:
            self.on_event(record)

    def session(self, result: SessionResult) -> None:
        """What a session settled on that the store does not show: each queue's deserved."""
        self.usage.advance(self.clock())
        self.usage.set_deserved({q: Resource(d) for q, d in result.deserved.items()})

    def _waiting(self, record: PodRecord, delta: int) -> None:
        self.waiting += delta
        self.usage.waiting(self.clock(), record.queue, delta)

    # -- Kubernetes Events -----------------------------------------------------------

    def refused(self, kind: str, namespace: str, name: str, reason: str) -> None:
        """A user's create the API server turned away (admission)."""
        if kind == "Job":
            self.jobs[f"{namespace}/{name}"] = JobRecord(submitted=self.clock(), refused=reason)
        self.emit("failed", kind, namespace, name, job=name if kind == "Job" else None,
                  reason=reason)  # fmt: skip

    def _noted(self, note: Note) -> None:
        event = _NOTE_EVENTS.get(note.reason)
        if event is None:
            if note.extra.get("type") == "Warning":
                extra = {k: v for k, v in note.extra.items() if k != "type"}
                self.emit("warning", note.kind, note.namespace, note.name, **extra,
                          reason=f"{note.reason}: {note.message}")  # fmt: skip
            return
        if note.kind == "Pod" and event == "unschedulable":
            record = self.pods.get(f"{note.namespace}/{note.name}")
            if record is not None:
                record.reason = note.message
        self.emit(event, note.kind, note.namespace, note.name, **note.extra, reason=note.message)

    # -- watch events --------------------------------------------------------------

    def _changed(self, change: WatchEvent) -> None:
        if change.actor == APISERVER:
            return
        kind = change.kind
        if kind is Pod:
            self._pod(change)
        elif kind is PodGroup:
            self._podgroup(change)
        elif kind is Job:
            self._job(change)
        elif kind is Queue:
            self._queue(change)
        else:
            self._other(change)

    def _pod(self, change: WatchEvent) -> None:
        pod: Pod = change.obj
        meta = pod.metadata
        key = change.key
        job = job_name(pod)
        ours = pod.spec.scheduler_name in self.scheduler_names
        node = pod.spec.node_name
        if change.event == "ADDED":
            owner = owning_job(pod)
            record = self.pods[key] = PodRecord(
                submitted=self.clock(),
                job=job,
                owner=f"{meta.namespace}/{owner[0]}" if owner is not None else "",
                queue=queue_of(self.store, pod),
            )
            if ours and not node:
                self._waiting(record, +1)
            if ours:
                self.fragmentation.arrived(pod, self.clock())
            event = "submitted" if change.actor == USER else "created"
            self.emit(event, "Pod", meta.namespace, meta.name, job=job)
            return
        record = self.pods[key]
        record.job = job
        if change.event == "DELETED":
            record.deleted = self.clock()
            if ours and not node:
                self._waiting(record, -1)
            self._stop(key)
            event = "evicted" if change.actor in _EVICTORS else "deleted"
            by = change.actor if change.actor != "scheduler" and event == "evicted" else None
            self.emit(event, "Pod", meta.namespace, meta.name, node=node, job=job,
                      reason=change.reason, preemptor=change.preemptor, by=by)  # fmt: skip
            return
        old: Pod = change.old
        if node and not old.spec.node_name:
            record.bound, record.node = self.clock(), node
            if ours:
                self._waiting(record, -1)
            self.emit("bound", "Pod", meta.namespace, meta.name, node=node, job=job)
        phase, before = pod.status.phase, old.status.phase
        restarts = _restarts(pod.status.container_statuses)
        if restarts > _restarts(old.status.container_statuses):
            record.restarts = restarts
            code = _exit_code(pod.status.container_statuses, last=True)
            self.emit("restarted", "Pod", meta.namespace, meta.name, node=node, job=job,
                      reason=f"container exited with code {code}; restartPolicy "
                      f"{pod.spec.restart_policy or 'Always'}")  # fmt: skip
        if phase == before:
            return
        if phase == "Running":
            self._start(key, pod)
            self.emit("started", "Pod", meta.namespace, meta.name, node=node, job=job)
        elif phase == "Succeeded":
            self.ended += 1
            record.finished = self.clock()
            self._stop(key)
            self.emit("completed", "Pod", meta.namespace, meta.name, node=node, job=job)
        elif phase == "Failed":
            self.ended += 1
            record.failed = self.clock()
            self._stop(key)
            code = _exit_code(pod.status.container_statuses, last=False)
            self.emit("failed", "Pod", meta.namespace, meta.name, node=node, job=job,
                      reason=f"container exited with code {code}")  # fmt: skip

    def _start(self, key: str, pod: Pod) -> None:
        record = self.pods[key]
        self._running.add(key)
        self.usage.advance(self.clock())
        self.usage.start(key, pod_requests(pod)[0], record.queue, pod.spec.node_name)
        self.gpus.start(key, pod, self.clock(), record.queue)
        self.fragmentation.start(key, pod, self.clock())

    def _stop(self, key: str) -> None:
        if key in self._running:
            self._running.discard(key)
            self.usage.advance(self.clock())
            self.usage.stop(key)
            self.gpus.stop(key, self.clock())
            self.fragmentation.stop(key, self.clock())

    def _podgroup(self, change: WatchEvent) -> None:
        pg: PodGroup = change.obj
        meta = pg.metadata
        if change.event == "ADDED":
            self.podgroups_submitted[change.key] = self.clock()
            event = "submitted" if change.actor == USER else "created"
            self.emit(event, "PodGroup", meta.namespace, meta.name, job=meta.name)
        elif change.event == "DELETED":
            self.emit("deleted", "PodGroup", meta.namespace, meta.name, job=meta.name)
        elif pg.status.phase != change.old.status.phase:
            self.emit("phase", "PodGroup", meta.namespace, meta.name, job=meta.name,
                      phase=pg.status.phase)  # fmt: skip

    def _job(self, change: WatchEvent) -> None:
        job: Job = change.obj
        meta = job.metadata
        if change.event == "ADDED":
            self.jobs[change.key] = JobRecord(submitted=self.clock(), last=job)
            event = "submitted" if change.actor == USER else "created"  # by a CronJob
            self.emit(event, "Job", meta.namespace, meta.name, job=meta.name)
            return
        record = self.jobs[change.key]
        record.last = job
        if change.event == "DELETED":
            record.deleted = self.clock()
            self.emit("deleted", "Job", meta.namespace, meta.name, job=meta.name,
                      reason=change.reason)  # fmt: skip
            return
        state = job.status.state
        if state.phase != change.old.status.state.phase:
            record.phases.append((self.clock(), state.phase))
            self.emit("phase", "Job", meta.namespace, meta.name, job=meta.name,
                      phase=state.phase, reason=state.reason,
                      retryCount=job.status.retry_count or None)  # fmt: skip

    def _queue(self, change: WatchEvent) -> None:
        queue: Queue = change.obj
        if change.event == "ADDED":
            self.emit("submitted", "Queue", "", queue.metadata.name)
        elif change.event == "MODIFIED":
            state = queue.status.state
            if (change.old.status.state or "Open") != state:
                self.emit("phase", "Queue", "", queue.metadata.name, phase=state)

    def _other(self, change: WatchEvent) -> None:
        kind = change.kind.__name__
        meta = change.obj.metadata
        if change.event == "ADDED":
            if kind == "Node":
                self.usage.advance(self.clock())
                self.usage.add_capacity(node_allocatable(change.obj)[0], meta.name)
                self.gpus.add_node(change.obj, self.clock())
                self.fragmentation.add_node(change.obj, self.clock())
            event = "submitted" if change.actor == USER else "created"
            extra = {"reason": change.obj.action} if kind == "Command" else {}
            self.emit(event, kind, meta.namespace, meta.name, **extra)
        elif change.event == "DELETED" and kind != "Command":
            self.emit("deleted", kind, meta.namespace, meta.name)
        elif change.kind in (Deployment, Node) and change.actor == USER:
            if kind == "Node" and change.old is not None:
                after, before = node_allocatable(change.obj)[0], node_allocatable(change.old)[0]
                if after != before:
                    self.usage.advance(self.clock())
                    self.usage.add_capacity(after, meta.name, before=before)
            self.emit("updated", kind, meta.namespace, meta.name)  # a later document of it


def _restarts(statuses: list[ContainerStatus]) -> int:
    return statuses[0].restart_count if statuses else 0


def _exit_code(statuses: list[ContainerStatus], *, last: bool) -> int:
    if not statuses:
        return 0
    state = statuses[0].last_state if last else statuses[0].state
    return state.terminated.exit_code if state.terminated is not None else 0
