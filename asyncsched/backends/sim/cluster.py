"""The simulated API server's objects, and the writes controllers and the scheduler make.

Every change goes through here so that the scheduler's cache, the kubelet
model, the controllers' watches and the event stream all see it at once.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, Queue
from asyncsched.api.volcano import PodGroupStatus, QueueStatus
from asyncsched.backends.sim.controllers import EPOCH, Controllers
from asyncsched.backends.sim.fields import (
    DURATION_ANNOTATION,
    FAIL_AFTER_ANNOTATION,
    NEEDS_WHOLE_GROUP_ANNOTATION,
    exit_code_in,
    seconds_in,
)
from asyncsched.backends.sim.inspect import list_objects
from asyncsched.backends.sim.kubelet import GroupProgress, PodRun
from asyncsched.backends.sim.usage import UsageMeter
from asyncsched.cache import ClusterCache
from asyncsched.cache.cluster_cache import QUEUE_NAME_ANNOTATION
from asyncsched.model.timestamps import format_timestamp

__all__ = ["SimCluster", "SimEvent", "group_of", "job_name"]

SimEvent = dict[str, Any]


class SimCluster:
    """Objects by kind, the clock's agenda and the event stream; no scheduling here."""

    def __init__(
        self, scheduler_names: tuple[str, ...], on_event: Callable[[SimEvent], None] | None
    ) -> None:
        self.cache = ClusterCache(scheduler_names)
        self.now = 0.0
        self.events: list[SimEvent] = []
        self._on_event = on_event
        self._queue: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self._dirty = False
        self.pods: dict[str, Pod] = {}
        self.podgroups: dict[str, PodGroup] = {}
        self.nodes: dict[str, Node] = {}
        self.queues: dict[str, Queue] = {}
        self.submitted_at: dict[str, float] = {}
        self.progress = GroupProgress()
        self.usage = UsageMeter()
        self.bound_at: dict[str, float] = {}
        self.finished_at: dict[str, float] = {}
        self.failed_at: dict[str, float] = {}
        self.pod_manifests: dict[str, dict[str, Any]] = {}
        """Full pod documents (env, volumes, hostname...) of pods the controllers made."""
        self._exit_codes: dict[str, int] = {}
        self.controllers = Controllers(self)

    def push(self, at: float, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, payload))

    def emit(self, event: str, kind: str, namespace: str, name: str, **extra: Any) -> None:
        record: SimEvent = {
            "time": round(self.now, 6),
            "event": event,
            "kind": kind,
            "namespace": namespace,
            "name": name,
        }
        record.update({k: v for k, v in extra.items() if v not in (None, "")})
        self.events.append(record)
        if self._on_event is not None:
            self._on_event(record)

    def _stamp(self, obj: Any) -> Any:
        meta = obj.metadata
        uid = meta.uid or f"sim-{type(obj).__name__.lower()}-{self._seq}"
        return msgspec.structs.replace(
            obj,
            metadata=msgspec.structs.replace(
                meta, uid=uid, creation_timestamp=format_timestamp(EPOCH + self.now)
            ),
        )

    # -- objects the controllers (and users) create and delete ----------------------

    def add_pod(
        self, pod: Pod, manifest: dict[str, Any] | None = None, *, created: bool = False
    ) -> None:
        """A pod comes into being: the PodGroup controller groups it, the kubelet tracks it."""
        pod = self.controllers.plain_podgroup(self._stamp(pod))
        meta = pod.metadata
        key = f"{meta.namespace}/{meta.name}"
        notes = meta.annotations
        self.pods[key] = pod
        if manifest is not None:
            self.pod_manifests[key] = manifest
        self.submitted_at[key] = self.now
        self.failed_at.pop(key, None)
        self.finished_at.pop(key, None)
        self.bound_at.pop(key, None)
        self._exit_codes[key] = exit_code_in(notes, key)
        self.progress.add(
            PodRun(
                key=key,
                group=group_of(pod),
                duration=seconds_in(notes, DURATION_ANNOTATION, key),
                needs_group=notes.get(NEEDS_WHOLE_GROUP_ANNOTATION) == "true",
                fail_after=seconds_in(notes, FAIL_AFTER_ANNOTATION, key),
            )
        )
        self.cache.upsert_pod(pod)
        self._dirty = True
        event = "created" if created else "submitted"
        self.emit(event, "Pod", meta.namespace, meta.name, job=job_name(pod))
        self.controllers.pod_changed(None, pod)

    def remove_pod(self, key: str, event: str, reason: str) -> bool:
        """A pod is deleted (or evicted) at once: no graceful termination in the simulator."""
        pod = self.pods.pop(key, None)
        if pod is None:
            return False
        self.cache.delete_pod(pod.metadata.namespace, pod.metadata.name)
        self.usage.stop(key)
        self._dirty = True
        self.emit(
            event,
            "Pod",
            pod.metadata.namespace,
            pod.metadata.name,
            node=pod.spec.node_name,
            job=job_name(pod),
            reason=reason,
        )
        self._schedule_completions(self.progress.remove(key, self.now))
        self.controllers.pod_changed(pod, None)
        return True

    def add_podgroup(self, pg: PodGroup, *, created: bool = False) -> None:
        pg = self._stamp(pg)
        if not pg.status.phase:
            pg = msgspec.structs.replace(pg, status=PodGroupStatus(phase="Pending"))
        meta = pg.metadata
        key = f"{meta.namespace}/{meta.name}"
        self.podgroups[key] = pg
        self.progress.min_members[key] = pg.spec.min_member
        self.submitted_at[key] = self.now
        self.cache.upsert_podgroup(pg)
        self._dirty = True
        self.controllers.podgroups_changed()
        event = "created" if created else "submitted"
        self.emit(event, "PodGroup", meta.namespace, meta.name, job=meta.name)

    def update_podgroup_spec(self, new: PodGroup) -> None:
        key = f"{new.metadata.namespace}/{new.metadata.name}"
        pg = self.podgroups.get(key)
        if pg is None:
            return
        pg = msgspec.structs.replace(pg, spec=new.spec)
        self.podgroups[key] = pg
        self.progress.min_members[key] = pg.spec.min_member
        self.cache.upsert_podgroup(pg)
        self._dirty = True

    def remove_podgroup(self, key: str) -> None:
        pg = self.podgroups.pop(key, None)
        if pg is None:
            return
        self.cache.delete_podgroup(pg.metadata.namespace, pg.metadata.name)
        self._dirty = True
        self.controllers.podgroups_changed()
        self.emit(
            "deleted", "PodGroup", pg.metadata.namespace, pg.metadata.name, job=pg.metadata.name
        )

    def set_queue_status(self, name: str, status: QueueStatus) -> None:
        queue = self.queues[name]
        moved = (queue.status.state or "Open") != status.state
        queue = msgspec.structs.replace(queue, status=status)
        self.queues[name] = queue
        self.cache.upsert_queue(queue)
        if moved:
            self._dirty = True
            self.emit("phase", "Queue", "", name, phase=status.state)

    def objects(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every live object of ``kind`` as the API would show it, by ``namespace/name``
        (cluster-scoped kinds by name): Pod, PodGroup, Queue, Job, Command, Service,
        ConfigMap, Secret, NetworkPolicy, Deployment, ReplicaSet, Node."""
        return list_objects(self, kind)

    def _set_pod(self, key: str, pod: Pod) -> None:
        self.pods[key] = pod
        self.cache.upsert_pod(pod)

    def _schedule_completions(self, runs: list[PodRun]) -> None:
        for run in runs:
            if run.remaining is not None and run.progressing_since is not None:
                self.push(
                    run.progressing_since + run.remaining,
                    "complete",
                    (run.key, run.serial, run.version),
                )

    def queue_of(self, pod: Pod) -> str:
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        if group:
            pg = self.podgroups.get(f"{pod.metadata.namespace}/{group}")
            return pg.spec.queue if pg is not None else "default"
        return pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")


def group_of(pod: Pod) -> str:
    group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION) or pod.metadata.name
    return f"{pod.metadata.namespace}/{group}"


def job_name(obj: Any) -> str | None:
    if isinstance(obj, Pod):
        return obj.metadata.annotations.get(GROUP_NAME_ANNOTATION) or obj.metadata.name
    if isinstance(obj, PodGroup):
        return str(obj.metadata.name)
    return None
