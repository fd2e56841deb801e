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

from asyncsched.api import (
    Command,
    Job,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
)
from asyncsched.api.core import ConfigMap
from asyncsched.api.volcano import PodGroupStatus
from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim.cluster import SimCluster, SimEvent, job_name
from asyncsched.backends.sim.controllers import EPOCH
from asyncsched.backends.sim.manifests import Manifest
from asyncsched.backends.sim.objects import Deployment, Service
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.framework import SessionResult, run_session
from asyncsched.model.node import node_allocatable
from asyncsched.model.task import pod_requests
from asyncsched.model.timestamps import format_timestamp

__all__ = ["Outcome", "SimEvent", "Simulation"]

log = logging.getLogger(__name__)

_EPOCH = EPOCH
_SESSIONS_PER_INSTANT = 10
"""Sessions at one instant before the next waits a period (a controller that keeps
creating pods must not stall the clock)."""


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


class Simulation(SimCluster):
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
        super().__init__(scheduler_names, on_event)
        self.config = config
        self.period = period
        self._session_due: float | None = None
        self.sessions = 0
        self.config_errors: list[str] = []
        self._last_reason: dict[str, str] = {}
        self._instant = (-1.0, 0)
        for manifest in manifests:
            self.push(manifest.submit_at, "submit", manifest.obj)

    # -- clock ---------------------------------------------------------------

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
            self.controllers.settle()
            if self._dirty or (self._session_due is not None and self._session_due <= self.now):
                self._session()
                self.controllers.settle()
                if self._dirty:
                    self._again()

    def _again(self) -> None:
        """Controllers changed what the scheduler sees: another session, at once if we may."""
        at, count = self._instant
        count = count + 1 if at == self.now else 1
        self._instant = (self.now, count)
        due = self.now if count < _SESSIONS_PER_INSTANT else self.now + self.period
        self._session_due = due if self._session_due is None else min(self._session_due, due)

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
            key, serial, version = payload
            run = self.progress.runs.get(key)
            if (
                run is not None
                and run.serial == serial
                and run.version == version
                and run.progressing_since is not None
            ):
                if run.fails:
                    self._fail(key)
                else:
                    self._complete(key)
        else:
            self.controllers.fire(kind, payload)

    def _submit(self, obj: Any) -> None:
        if isinstance(obj, Pod):
            self.add_pod(obj)
            return
        if isinstance(obj, PodGroup):
            self.add_podgroup(obj)
            return
        if isinstance(obj, Deployment):
            self.controllers.replicasets.submit(obj)
            return
        obj = self._stamp(obj)
        meta = obj.metadata
        if isinstance(obj, Job):
            self.controllers.submit_job(obj)
            return
        if isinstance(obj, Command):
            self.controllers.add_command(obj)
            return
        if isinstance(obj, Service | ConfigMap):
            self.controllers.add_object(type(obj).__name__, msgspec.to_builtins(obj))
            return
        self._dirty = True
        if isinstance(obj, Node):
            self.nodes[meta.name] = obj
            self.cache.upsert_node(obj)
            self.usage.add_capacity(node_allocatable(obj)[0])
        elif isinstance(obj, Queue):
            self.queues[meta.name] = obj
            self.cache.upsert_queue(obj)
            self.controllers.podgroups_changed()
        elif isinstance(obj, PriorityClass):
            self.cache.upsert_priority_class(obj)
        self.emit("submitted", type(obj).__name__, meta.namespace, meta.name)

    def _complete(self, key: str) -> None:
        self._end_pod(key, "Succeeded", "completed", "")
        self.finished_at[key] = self.now

    def _end_pod(self, key: str, phase: str, event: str, reason: str, exit_code: int = 0) -> None:
        """The pod's container finished for good: its resources free, its group and Job told."""
        pod = self.pods[key]
        ended = msgspec.structs.replace(
            pod, status=msgspec.structs.replace(pod.status, phase=phase)
        )
        self._set_pod(key, ended)
        self.usage.stop(key)
        self.emit(
            event,
            "Pod",
            pod.metadata.namespace,
            pod.metadata.name,
            node=pod.spec.node_name,
            job=job_name(pod),
            reason=reason,
        )
        self._schedule_completions(self.progress.finish(key, self.now))
        self._dirty = True
        self.controllers.pod_changed(pod, ended, exit_code=exit_code)

    def _fail(self, key: str) -> None:
        """The container exits non-zero: Never fails the pod; OnFailure and Always restart
        the container in place, as the kubelet does (the pod stays Running)."""
        pod = self.pods[key]
        meta = pod.metadata
        code = self._exit_codes.get(key, 1)
        policy = pod.spec.restart_policy or "Always"
        if policy in ("OnFailure", "Always"):
            self.emit(
                "restarted",
                "Pod",
                meta.namespace,
                meta.name,
                node=pod.spec.node_name,
                job=job_name(pod),
                reason=f"container exited with code {code}; restartPolicy {policy}",
            )
            self._schedule_completions(self.progress.restart(key, self.now))
            return
        self._end_pod(key, "Failed", "failed", f"container exited with code {code}", code)
        self.failed_at[key] = self.now

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
                self.emit(
                    "unschedulable",
                    "Pod",
                    pod.metadata.namespace,
                    pod.metadata.name,
                    job=job_name(pod),
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
        self.controllers.podgroup_changed(pg)
        if moved:
            self.emit(
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
        job = job_name(pod)
        self.usage.start(key, pod_requests(pod)[0], self.queue_of(pod))
        self.emit("bound", "Pod", pod.metadata.namespace, pod.metadata.name, node=node, job=job)
        running = msgspec.structs.replace(
            bound,
            status=msgspec.structs.replace(
                bound.status, phase="Running", start_time=format_timestamp(_EPOCH + self.now)
            ),
        )
        self._set_pod(key, running)
        self.emit("started", "Pod", pod.metadata.namespace, pod.metadata.name, node=node, job=job)
        self._schedule_completions(self.progress.start(key, self.now))
        self.controllers.pod_changed(pod, running)
        return True

    def _evict(self, key: str, reason: str) -> bool:
        return self.remove_pod(key, "evicted", reason)

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
