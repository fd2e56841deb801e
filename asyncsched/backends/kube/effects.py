"""A session's effects on the API server (``framework.effects.Effects``): binds,
evictions, status writes and Events, sent in the background, and what their answers do
to the cache.

Each effect is marked in the cache at once (binding, releasing), so the next session
sees it while the request is in flight; a refusal takes the mark back and wakes a
session. A mixin of :class:`~asyncsched.backends.kube.scheduler.KubeScheduler`, which
owns the senders and the loop it wakes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from asyncsched.backends.kube.binder import Binder
from asyncsched.backends.kube.evictor import Evictor
from asyncsched.backends.kube.metrics import Metrics
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.cache import ClusterCache
from asyncsched.framework.effects import Effects
from asyncsched.framework.results import (
    Bind,
    Eviction,
    Nomination,
    PluginFailure,
    PodGroupUpdate,
    TaskUnschedulable,
)

__all__ = ["KubeEffects"]


class KubeEffects(Effects):
    """The effects of one scheduler replica's sessions."""

    cache: ClusterCache
    metrics: Metrics
    status: StatusWriter
    binder: Binder
    evictor: Evictor
    _preemptors: dict[str, str]
    _bind_sent: dict[str, float]

    if TYPE_CHECKING:  # the replica's (KubeScheduler)

        def _wake(self, cause: str) -> None: ...

    def plugin_failed(self, failure: PluginFailure) -> None:
        self.metrics.plugin_failures.labels(failure.plugin).inc()

    def podgroup_status(self, update: PodGroupUpdate) -> bool:
        entry = self.cache.jobs.get(update.job)
        if entry is None or entry.podgroup is None:
            return False
        podgroup = entry.podgroup
        written = self.status.podgroup(update, podgroup.status, podgroup.metadata.uid)
        if written is None:
            return False
        self.cache.set_podgroup_status(update.job, written)
        return True

    def evict(self, eviction: Eviction) -> bool:
        pod = self.cache.pods.get(eviction.uid)
        if pod is None or not self.cache.mark_releasing(eviction.uid):
            return False
        self.evictor.submit(eviction.namespace, eviction.name, pod.metadata.uid)
        self._preemptors[eviction.uid] = eviction.preemptor
        why = eviction.reason + (f" (for {eviction.preemptor})" if eviction.preemptor else "")
        meta = pod.metadata
        self.status.event("Pod", meta.namespace, meta.name, meta.uid, "Evict", why, "Warning")
        return True

    def bind(self, bind: Bind) -> bool:
        pod = self.cache.pods.get(bind.uid)
        if pod is None or not self.cache.mark_binding(bind.uid, bind.node, bind.gpu_claim):
            return False
        self.binder.submit(
            bind.namespace, bind.name, pod.metadata.uid, bind.node, dict(bind.annotations)
        )
        self._bind_sent[bind.uid] = time.perf_counter()
        return True

    def nominate(self, nomination: Nomination) -> bool:
        pod = self.cache.pods.get(nomination.uid)
        if pod is None:
            return False
        return self.status.nominate(nomination, pod.status.nominated_node_name)

    def unschedulable(self, note: TaskUnschedulable) -> None:
        pod = self.cache.pods.get(note.uid)
        if pod is not None:
            self.metrics.unschedulable.inc()
            self.status.unschedulable(note, pod.metadata.uid)

    def _bind_done(self, key: str, node: str, error: str | None) -> None:
        sent = self._bind_sent.pop(key, None)
        if error is None:
            self.metrics.binds.inc()
            task = self.cache.tasks.get(key)
            if task is not None and sent is not None:
                bind_ms = (time.perf_counter() - sent) * 1000.0
                self.metrics.volcano.task_bound(task.creation, time.time(), bind_ms)
            self.status.forget(key)
            pod = self.cache.pods.get(key)
            if pod is not None:  # what Volcano's cache and kube-scheduler tell of every bind
                meta = pod.metadata
                told = f"Successfully assigned {meta.namespace}/{meta.name} to {node}"
                self.status.event("Pod", meta.namespace, meta.name, meta.uid, "Scheduled", told)
            return
        self.metrics.bind_failures.inc()
        self.cache.bind_failed(key)
        self._wake("bind refused")

    def _eviction_done(self, key: str, error: str | None) -> None:
        preemptor = self._preemptors.pop(key, "")
        if error is None:
            return
        self.cache.eviction_failed(key)
        self._wake("eviction refused")
        told = (
            (key, f"eviction refused: {error}"),
            (preemptor, f"waits: the eviction of {key} to make room was refused: {error}"),
        )
        for told_key, why in told:
            pod = self.cache.pods.get(told_key)
            if pod is not None:
                meta = pod.metadata
                self.status.event("Pod", meta.namespace, meta.name, meta.uid, "EvictionRefused",
                                  why, "Warning")  # fmt: skip
