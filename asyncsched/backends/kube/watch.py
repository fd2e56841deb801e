"""What the scheduler's watch events do: each object into the cache, and whether the
change wakes a session.

Most events change nothing a session decides on (our own binds coming back, the
kubelet's status reports, node heartbeats, the echoes of our status writes); they are
taken without a wake-up, so a burst does not run session after session over every pod.
A mixin of :class:`~asyncsched.backends.kube.scheduler.KubeScheduler`, which owns the
state it reads and the loop it wakes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from asyncsched.api import Node, Pod, PodGroup
from asyncsched.api.core import ConfigMap
from asyncsched.backends.config_source import CONFIG_KEYS, ConfigSource
from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.informer import Informer, ResourceKind
from asyncsched.backends.kube.kinds import (
    DISRUPTION_BUDGETS,
    HYPERNODES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
)
from asyncsched.backends.kube.metrics import Metrics
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.backends.kube.warned import Warned
from asyncsched.cache import ClusterCache
from asyncsched.model.job import PodGroupPhase

if TYPE_CHECKING:
    from asyncsched.backends.kube.scheduler import SchedulerOptions

__all__ = ["WatchHandlers"]

log = logging.getLogger("asyncsched.backends.kube.scheduler")  # the replica's lines, as before


class WatchHandlers:
    """The informers' handlers of one scheduler replica."""

    client: KubeClient
    config: ConfigSource
    options: SchedulerOptions
    cache: ClusterCache
    metrics: Metrics
    status: StatusWriter
    warned: Warned

    if TYPE_CHECKING:  # the replica's (KubeScheduler)

        def is_leader(self) -> bool: ...

        def _wake(self, cause: str) -> None: ...

    def _watch(self) -> list[Informer[Any]]:
        """The informers, each handing its events to the handlers here."""
        client = self.client
        informers: list[Informer[Any]] = [
            Informer(client, PODS, self._pod_upserted, self._pod_deleted, self._bad_object),
            Informer(client, NODES, self._node_upserted, self._node_deleted, self._bad_object),
            Informer(
                client,
                PODGROUPS,
                self._podgroup_upserted,
                self._podgroup_deleted,
                self._bad_object,
            ),
            self._informer(
                QUEUES, self.cache.upsert_queue, lambda ns, n: self.cache.delete_queue(n)
            ),
            self._informer(
                PRIORITY_CLASSES,
                self.cache.upsert_priority_class,
                lambda ns, n: self.cache.delete_priority_class(n),
            ),
            self._informer(
                HYPERNODES,
                self.cache.upsert_hypernode,
                lambda ns, n: self.cache.delete_hypernode(n),
            ),
            self._informer(
                DISRUPTION_BUDGETS,
                self.cache.upsert_disruption_budget,
                self.cache.delete_disruption_budget,
            ),
        ]
        if self.options.config_map:
            informers.append(self._config_map_informer(self.options.config_map))
        return informers

    def _informer(self, kind: ResourceKind[Any], upsert: Any, delete: Any) -> Informer[Any]:
        def on_upsert(obj: Any) -> None:
            upsert(obj)
            self._wake(kind.kind)

        def on_delete(namespace: str, name: str) -> None:
            delete(namespace, name)
            self._wake(kind.kind)

        return Informer(self.client, kind, on_upsert, on_delete, self._bad_object)

    def _config_map_informer(self, reference: str) -> Informer[Any]:
        """Follow the configuration in a ConfigMap: each change is validated, then swapped in."""
        where, _, key = reference.partition(":")
        namespace, _, name = where.partition("/")
        kind = ResourceKind(
            "ConfigMap",
            f"/api/v1/namespaces/{namespace}/configmaps",
            ConfigMap,
            field_selector=f"metadata.name={name}",
        )

        def on_upsert(config_map: ConfigMap) -> None:
            chosen = key or next((k for k in CONFIG_KEYS if k in config_map.data), "")
            if chosen not in config_map.data:
                self._config_rejected(config_map, f"ConfigMap {where} has no key {chosen!r}")
                return
            outcome = self.config.offer(config_map.data[chosen], f"ConfigMap {where}[{chosen}]")
            if outcome.changed:
                self.metrics.config_reloads.inc()
                self._wake("ConfigMap")
            elif outcome.error:
                self._config_rejected(config_map, outcome.error)

        return Informer(self.client, kind, on_upsert, lambda ns, n: None, self._bad_object)

    def _config_rejected(self, config_map: ConfigMap, message: str) -> None:
        self.metrics.config_rejections.inc()
        log.error("configuration rejected, keeping the previous one: %s", message)
        if self.is_leader():
            meta = config_map.metadata
            self.status.event(
                "ConfigMap",
                meta.namespace,
                meta.name,
                meta.uid,
                "InvalidConfiguration",
                f"configuration rejected, the previous one stays in force: {message}",
                "Warning",
            )

    def _pod_upserted(self, pod: Pod) -> None:
        """Into the cache; wake the loop unless nothing a session decides on changed.

        A pod that stays on the same node, alive and with the same requests
        (Binding -> Bound -> Running: our own binds coming back, the kubelet's
        status updates) leaves every placement, gang count and queue share as it
        was, so it does not start a session; the next one, at the latest after
        ``period``, still sees it (PodGroup running counts are written then).
        In a burst these updates are most of the pod events, and each woken
        session re-snapshots every pod while binds wait for the GIL.
        """
        if self.cache.upsert_pod(pod):
            self._wake("Pod")

    def _podgroup_upserted(self, podgroup: PodGroup) -> None:
        """Into the cache; wake the loop unless only the version moved.

        The echo of a status this scheduler wrote (already in the cache since the write)
        changes nothing a session decides on. Woken by it, a session would write the
        running counts the kubelet's updates moved since, whose echoes would wake the next:
        in a burst of gangs, sessions back to back over every PodGroup, and a status write
        per PodGroup per session. Unwoken, those counts are written by the next session,
        at the latest after ``period``. The echo of an older write, arriving after a newer
        one, leaves the cache's newer status in place (``StatusWriter.stale_echo``).
        """
        meta = podgroup.metadata
        entry = self.cache.jobs.get(f"{meta.namespace}/{meta.name}")
        before = entry.podgroup if entry is not None else None
        if before is not None and self.status.stale_echo(
            meta.namespace, meta.name, podgroup.status
        ):
            self.metrics.stale_echoes.inc()
            podgroup = msgspec.structs.replace(podgroup, status=before.status)
        self.cache.upsert_podgroup(podgroup)
        if before is None or not _same_but_version(before, podgroup):
            self._wake("PodGroup")

    def _podgroup_deleted(self, namespace: str, name: str) -> None:
        """Out of the cache; wake the loop unless the PodGroup held nothing.

        When a namespace goes, its pods go first and its PodGroups after, in one sweep of
        the namespace controller: a thousand deletions of gangs that no longer have pods
        each woke a session that had nothing new to decide (129-141 sessions instead of
        about 30 for the same burst on the bed, whenever an earlier run's namespace was
        swept during it)."""
        entry = self.cache.jobs.get(f"{namespace}/{name}")
        held = entry is not None and (bool(entry.tasks) or _reserves(entry.podgroup))
        self.cache.delete_podgroup(namespace, name)
        self.status.forget_podgroup(namespace, name)
        if held:
            self._wake("PodGroup")

    def _pod_deleted(self, namespace: str, name: str) -> None:
        self.cache.delete_pod(namespace, name)
        self.status.forget(f"{namespace}/{name}")
        self._wake("Pod")

    def _node_upserted(self, node: Node) -> None:
        """Take a Node; GPU cards its device plugin registered malformed are left out, said
        once per version of the problem, and its other cards stay in use.

        A Node whose only change is its version (a heartbeat: the timestamps in its
        conditions are not read) is left as it is and wakes no session: each beat (every
        kubelet's status report; KWOK's 1,000 nodes beat within seconds of each other)
        woke a session with nothing new to decide."""
        existing = self.cache.nodes.get(node.metadata.name)
        if existing is not None and _same_but_version(existing.node, node):
            return
        self.cache.upsert_node(node)
        self._wake("Node")
        info = self.cache.nodes.get(node.metadata.name)
        problems = info.gpus.problems if info is not None and info.gpus is not None else ()
        if problems:
            name, joined = node.metadata.name, "; ".join(problems)
            self.warned.warn(
                "Node", "", name, joined,
                f"node {name}: GPU cards left out: {joined} (its other cards stay in use)",
            )  # fmt: skip

    def _node_deleted(self, namespace: str, name: str) -> None:
        self.cache.delete_node(name)
        self._wake("Node")

    def _bad_object(self, kind: str, namespace: str, name: str, problem: str) -> None:
        """Skip an object we cannot read: log, count, and tell its owner with a warning Event."""
        self.metrics.decode_errors.labels(kind).inc()
        where = f"{namespace}/{name}" if namespace else name
        self.warned.warn(
            kind, namespace, name, problem, f"skipped {kind} {where}: {problem}",
            reason="InvalidObject",
            message=f"asyncsched cannot read this {kind} and ignores it: {problem}",
        )  # fmt: skip


def _same_but_version(before: PodGroup | Node, after: PodGroup | Node) -> bool:
    """Equal but for resourceVersion and generation (the PodGroup CRD has no status
    subresource, so a status write moves its generation too)."""
    if before.spec != after.spec or before.status != after.status:
        return False
    meta = msgspec.structs.replace(
        after.metadata,
        resource_version=before.metadata.resource_version,
        generation=before.metadata.generation,
    )
    return meta == before.metadata


def _reserves(podgroup: PodGroup | None) -> bool:
    """Whether a PodGroup without pods holds queue room in reserve for its minResources:
    admitted (Inqueue), or Running with a gang of zero (``model.books.reserved_for_job``)."""
    if podgroup is None:
        return False
    phase = podgroup.status.phase
    return phase == PodGroupPhase.INQUEUE or (
        phase == PodGroupPhase.RUNNING and podgroup.spec.min_member == 0
    )
