"""The in-memory cluster: a virtual clock, simulated kubelets, and the real scheduling core.

Deterministic: the same manifests and configuration give the same events.
A session runs whenever something changed (coalescing everything that
happened at one instant) and, while sessions keep deciding, once more every
schedule period, as Volcano's loop does.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from asyncsched.api import GROUP_NAME_ANNOTATION, Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim.kubelet import GroupProgress, PodRun
from asyncsched.backends.sim.manifests import (
    DURATION_ANNOTATION,
    NEEDS_WHOLE_GROUP_ANNOTATION,
    Manifest,
    annotation_seconds,
)
from asyncsched.backends.sim.usage import UsageMeter
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES, ClusterCache
from asyncsched.cache.cluster_cache import QUEUE_NAME_ANNOTATION
from asyncsched.framework import SessionResult, run_session
from asyncsched.model.node import node_allocatable
from asyncsched.model.task import pod_requests
from asyncsched.model.timestamps import format_timestamp

__all__ = ["Outcome", "SimEvent", "Simulation"]

log = logging.getLogger(__name__)

SimEvent = dict[str, Any]
_EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: virtual time 0 in object timestamps


@dataclass
class Outcome:
    """How the run ended."""

    end: float
    reason: str
    """'done' (every pod finished), 'settled' (the rest run with no end), 'until',
    'deadlock' (running pods wait for their groups forever) or 'stuck' (pods pending
    that nothing will ever free room for)."""
    message: str
    sessions: int
    config_errors: list[str] = field(default_factory=list)


class Simulation:
    """Runs manifests through the scheduling core on a virtual clock."""

    def __init__(
        self,
        manifests: list[Manifest],
        config: ConfigSource,
        *,
        scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES,
        period: float = 1.0,
        on_event: Callable[[SimEvent], None] | None = None,
    ) -> None:
        self.config = config
        self.period = period
        self.cache = ClusterCache(scheduler_names)
        self.now = 0.0
        self.events: list[SimEvent] = []
        self._on_event = on_event
        self._queue: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self._session_due: float | None = None
        self._dirty = False
        self.sessions = 0
        self.config_errors: list[str] = []
        self.pods: dict[str, Pod] = {}
        self.podgroups: dict[str, PodGroup] = {}
        self.nodes: dict[str, Node] = {}
        self.queues: dict[str, Queue] = {}
        self.submitted_at: dict[str, float] = {}
        self.progress = GroupProgress()
        self.usage = UsageMeter()
        self._last_reason: dict[str, str] = {}
        self.bound_at: dict[str, float] = {}
        self.finished_at: dict[str, float] = {}
        for manifest in manifests:
            self._push(manifest.submit_at, "submit", manifest.obj)

    # -- clock ---------------------------------------------------------------

    def _push(self, at: float, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, payload))

    def _emit(self, event: str, kind: str, namespace: str, name: str, **extra: Any) -> None:
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

    def run(self, until: float | None = None) -> Outcome:
        """Advance until nothing more can happen, or until virtual time ``until``."""
        while True:
            candidates = [t for t in (self._next_event_time(), self._session_due) if t is not None]
            if not candidates:
                return self._finish()
            at = min(candidates)
            if until is not None and at > until:
                self._advance(until)
                return Outcome(
                    until,
                    "until",
                    f"stopped at t={until:g}s",
                    self.sessions,
                    list(self.config_errors),
                )
            self._advance(at)
            while self._queue and self._queue[0][0] <= self.now:
                _, _, kind, payload = heapq.heappop(self._queue)
                self._handle(kind, payload)
            if self._dirty or (self._session_due is not None and self._session_due <= self.now):
                self._session()

    def _next_event_time(self) -> float | None:
        return self._queue[0][0] if self._queue else None

    def _advance(self, at: float) -> None:
        self.usage.advance(at)
        self.now = at

    # -- events --------------------------------------------------------------

    def _handle(self, kind: str, payload: Any) -> None:
        if kind == "submit":
            self._submit(payload)
        elif kind == "complete":
            key, version = payload
            run = self.progress.runs.get(key)
            if run is not None and run.version == version and run.progressing_since is not None:
                self._complete(key)

    def _stamp(self, obj: Any) -> Any:
        meta = obj.metadata
        uid = meta.uid or f"sim-{type(obj).__name__.lower()}-{self._seq}"
        return msgspec.structs.replace(
            obj,
            metadata=msgspec.structs.replace(
                meta, uid=uid, creation_timestamp=format_timestamp(_EPOCH + self.now)
            ),
        )

    def _submit(self, obj: Any) -> None:
        obj = self._stamp(obj)
        meta = obj.metadata
        key = f"{meta.namespace}/{meta.name}"
        kind = type(obj).__name__
        self._dirty = True
        if isinstance(obj, Node):
            self.nodes[meta.name] = obj
            self.cache.upsert_node(obj)
            self.usage.add_capacity(node_allocatable(obj)[0])
        elif isinstance(obj, Queue):
            self.queues[meta.name] = obj
            self.cache.upsert_queue(obj)
        elif isinstance(obj, PriorityClass):
            self.cache.upsert_priority_class(obj)
        elif isinstance(obj, PodGroup):
            if not obj.status.phase:
                obj = msgspec.structs.replace(obj, status=PodGroupStatus(phase="Pending"))
            self.podgroups[key] = obj
            self.progress.min_members[key] = obj.spec.min_member
            self.submitted_at[key] = self.now
            self.cache.upsert_podgroup(obj)
        elif isinstance(obj, Pod):
            self.pods[key] = obj
            self.submitted_at[key] = self.now
            self.progress.add(
                PodRun(
                    key=key,
                    group=_group_of(obj),
                    duration=annotation_seconds(obj, DURATION_ANNOTATION, key),
                    needs_group=obj.metadata.annotations.get(NEEDS_WHOLE_GROUP_ANNOTATION)
                    == "true",
                )
            )
            self.cache.upsert_pod(obj)
        self._emit("submitted", kind, meta.namespace, meta.name, job=_job_name(obj))

    def _set_pod(self, key: str, pod: Pod) -> None:
        self.pods[key] = pod
        self.cache.upsert_pod(pod)

    def _complete(self, key: str) -> None:
        pod = self.pods[key]
        self._set_pod(
            key,
            msgspec.structs.replace(
                pod, status=msgspec.structs.replace(pod.status, phase="Succeeded")
            ),
        )
        self.finished_at[key] = self.now
        self.usage.stop(key)
        self._emit(
            "completed",
            "Pod",
            pod.metadata.namespace,
            pod.metadata.name,
            node=pod.spec.node_name,
            job=_job_name(pod),
        )
        self._schedule_completions(self.progress.finish(key, self.now))
        self._dirty = True

    def _schedule_completions(self, runs: list[PodRun]) -> None:
        for run in runs:
            if run.remaining is not None and run.progressing_since is not None:
                self._push(
                    run.progressing_since + run.remaining, "complete", (run.key, run.version)
                )

    # -- sessions --------------------------------------------------------------

    def _session(self) -> None:
        self._dirty = False
        self._session_due = None
        reload = self.config.poll()
        if reload.error:
            self.config_errors.append(reload.error)
        self.sessions += 1
        snapshot = self.cache.snapshot(now=self.now)
        result, _ = run_session(snapshot, self.config.current, uid=f"session-{self.sessions}")
        if self._apply(result):
            self._session_due = self.now + self.period

    def _apply(self, result: SessionResult) -> bool:
        """Carry out a session's decisions; True if anything changed."""
        changed = False
        for failure in result.failures:
            log.error(
                "t=%gs plugin %s failed in %s: %s",
                self.now,
                failure.plugin,
                failure.hook,
                failure.error,
            )
        for update in result.podgroups:
            changed |= self._update_podgroup(update.job, update.phase, update)
        for bind in result.binds:
            changed |= self._bind(bind.uid, bind.node)
        for eviction in result.evictions:
            changed |= self._evict(eviction.uid, eviction.reason)
        for note in result.unschedulable:
            if self._last_reason.get(note.uid) != note.message and note.uid in self.pods:
                self._last_reason[note.uid] = note.message
                pod = self.pods[note.uid]
                self._emit(
                    "unschedulable",
                    "Pod",
                    pod.metadata.namespace,
                    pod.metadata.name,
                    job=_job_name(pod),
                    reason=note.message,
                )
        return changed

    def _update_podgroup(self, key: str, phase: str, update: Any) -> bool:
        pg = self.podgroups.get(key)
        if pg is None:
            return False
        status = PodGroupStatus(
            phase=phase,
            conditions=list(update.conditions),
            running=update.running,
            succeeded=update.succeeded,
            failed=update.failed,
        )
        if status == pg.status:
            return False
        moved = status.phase != pg.status.phase
        pg = msgspec.structs.replace(pg, status=status)
        self.podgroups[key] = pg
        self.cache.upsert_podgroup(pg)
        if moved:
            self._emit(
                "phase",
                "PodGroup",
                pg.metadata.namespace,
                pg.metadata.name,
                job=pg.metadata.name,
                phase=phase,
            )
        return moved

    def _bind(self, key: str, node: str) -> bool:
        pod = self.pods.get(key)
        if pod is None or pod.spec.node_name or node not in self.nodes:
            self.cache.bind_failed(key)
            return False
        self.cache.mark_binding(key, node)
        bound = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
        self._set_pod(key, bound)
        self.bound_at[key] = self.now
        job = _job_name(pod)
        self.usage.start(key, pod_requests(pod)[0], self.queue_of(pod))
        self._emit("bound", "Pod", pod.metadata.namespace, pod.metadata.name, node=node, job=job)
        running = msgspec.structs.replace(
            bound,
            status=msgspec.structs.replace(
                bound.status, phase="Running", start_time=format_timestamp(_EPOCH + self.now)
            ),
        )
        self._set_pod(key, running)
        self._emit("started", "Pod", pod.metadata.namespace, pod.metadata.name, node=node, job=job)
        self._schedule_completions(self.progress.start(key, self.now))
        return True

    def _evict(self, key: str, reason: str) -> bool:
        pod = self.pods.pop(key, None)
        if pod is None:
            return False
        self.cache.delete_pod(pod.metadata.namespace, pod.metadata.name)
        self.usage.stop(key)
        self._emit(
            "evicted",
            "Pod",
            pod.metadata.namespace,
            pod.metadata.name,
            node=pod.spec.node_name,
            job=_job_name(pod),
            reason=reason,
        )
        self._schedule_completions(self.progress.remove(key, self.now))
        return True

    def queue_of(self, pod: Pod) -> str:
        group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
        if group:
            pg = self.podgroups.get(f"{pod.metadata.namespace}/{group}")
            return pg.spec.queue if pg is not None else "default"
        return pod.metadata.annotations.get(QUEUE_NAME_ANNOTATION, "default")

    # -- the end -----------------------------------------------------------------

    def _finish(self) -> Outcome:
        blocked = self.progress.blocked()
        pending = [
            k for k, p in self.pods.items() if not p.spec.node_name and self.cache.is_ours(p)
        ]
        if blocked:
            groups = sorted({r.group.split("/", 1)[1] for r in blocked})
            shown = ", ".join(groups[:5]) + (", ..." if len(groups) > 5 else "")
            message = (
                f"deadlock at t={self.now:g}s: {len(blocked)} running pods wait for the "
                f"rest of their groups ({shown}) and {len(pending)} pods are pending; "
                f"nothing can progress"
            )
            return Outcome(self.now, "deadlock", message, self.sessions, list(self.config_errors))
        if pending:
            message = (
                f"stuck at t={self.now:g}s: {len(pending)} pods can never be scheduled "
                f"with what is running now"
            )
            return Outcome(self.now, "stuck", message, self.sessions, list(self.config_errors))
        endless = sum(1 for r in self.progress.runs.values() if r.running and r.remaining is None)
        if endless:
            message = (
                f"settled at t={self.now:g}s: {endless} pods keep running "
                f"(no duration set), none pending"
            )
            return Outcome(self.now, "settled", message, self.sessions, list(self.config_errors))
        return Outcome(
            self.now,
            "done",
            f"all work done at t={self.now:g}s",
            self.sessions,
            list(self.config_errors),
        )


def _group_of(pod: Pod) -> str:
    group = pod.metadata.annotations.get(GROUP_NAME_ANNOTATION) or pod.metadata.name
    return f"{pod.metadata.namespace}/{group}"


def _job_name(obj: Any) -> str | None:
    if isinstance(obj, Pod):
        return obj.metadata.annotations.get(GROUP_NAME_ANNOTATION) or obj.metadata.name
    if isinstance(obj, PodGroup):
        return str(obj.metadata.name)
    return None
