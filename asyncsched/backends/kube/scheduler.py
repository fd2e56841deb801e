"""The scheduler against a real API server: informers in, sessions, binds and status out.

Everything here is I/O around the pure core. Watch events update the cache
and wake the loop; a session runs as soon as something changed (bursts
coalesce while a session runs) and at least every period. Informers and the
cache stay warm on a standby replica, so a takeover schedules at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from asyncsched.api import Node, Pod, PodGroup, PriorityClass, Queue
from asyncsched.api.core import ConfigMap
from asyncsched.api.policy import PodDisruptionBudget
from asyncsched.api.topology import HyperNode
from asyncsched.backends.config_source import CONFIG_KEYS, ConfigSource
from asyncsched.backends.kube.binder import Binder
from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.evictor import Evictor
from asyncsched.backends.kube.informer import Informer, ResourceKind
from asyncsched.backends.kube.leader import LeaderElector
from asyncsched.backends.kube.metrics import Metrics, serve_http
from asyncsched.backends.kube.pod_protobuf import POD, POD_ENCODING
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES, ClusterCache
from asyncsched.framework import SessionResult, run_session
from asyncsched.framework.effects import Effects, carry_out
from asyncsched.framework.results import (
    Bind,
    Eviction,
    Nomination,
    PluginFailure,
    PodGroupUpdate,
    TaskUnschedulable,
)
from asyncsched.model import ClusterSnapshot, TaskStatus
from asyncsched.model.gcpause import freeze_long_lived
from asyncsched.model.hypernodes import HyperNodeTree
from asyncsched.model.job import PodGroupPhase

__all__ = ["KubeScheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 5.0
"""Seconds a stopping scheduler keeps sending statuses and Events once its binds and
evictions are done, so it is gone well within a Pod's default 30 s grace period."""

PODS = ResourceKind(
    "Pod", "/api/v1/pods", Pod, protobuf=POD if POD_ENCODING.name == "protobuf" else None
)
NODES = ResourceKind("Node", "/api/v1/nodes", Node)
PODGROUPS = ResourceKind("PodGroup", "/apis/scheduling.volcano.sh/v1beta1/podgroups", PodGroup)
QUEUES = ResourceKind("Queue", "/apis/scheduling.volcano.sh/v1beta1/queues", Queue)
PRIORITY_CLASSES = ResourceKind(
    "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", PriorityClass
)
HYPERNODES = ResourceKind(
    "HyperNode", "/apis/topology.volcano.sh/v1alpha1/hypernodes", HyperNode, optional=True
)

DISRUPTION_BUDGETS = ResourceKind(
    "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", PodDisruptionBudget
)

"""Keys looked for in a configuration ConfigMap: ours, then Volcano's."""


@dataclass(frozen=True)
class SchedulerOptions:
    identity: str
    scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES
    period: float = 1.0
    leader_elect: bool = False
    lease_namespace: str = "asyncsched-system"
    lease_name: str = "asyncsched"
    lease_duration: float = 15.0
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 0
    """0 = no HTTP endpoint."""
    bind_concurrency: int = 64
    """Binds in flight. 16 paced a 10,000-pod burst at 1,000 nodes once sessions were cheap
    (239 pods/s against 316 with 64, the round-robin binder's ceiling: BENCHMARKS.md); the
    client's pool holds 100 connections, beside the watches and status writes."""
    config_map: str = ""
    """NAMESPACE/NAME[:KEY] of a ConfigMap to read the configuration from, through the API."""
    session_budget: int | None = None
    """Tasks one session may place before it stops and the next starts at once
    (``asyncsched.framework.budget``); None: no limit."""


class KubeScheduler(Effects):
    """One scheduler replica."""

    def __init__(self, client: KubeClient, config: ConfigSource, options: SchedulerOptions) -> None:
        self.client = client
        self.config = config
        self.options = options
        self.cache = ClusterCache(options.scheduler_names)
        self.metrics = Metrics()
        # Counted when scraped (on the loop, like every cache change), not after every
        # session: the count is a pass over every pod.
        self.metrics.pending.set_function(self.cache.pending_tasks)
        self.dirty = asyncio.Event()
        self.elector = (
            LeaderElector(
                client,
                options.lease_namespace,
                options.lease_name,
                options.identity,
                lease_duration=options.lease_duration,
                renew_deadline=options.lease_duration * 2 / 3,
                retry_period=max(options.lease_duration / 7.5, 0.2),
            )
            if options.leader_elect
            else None
        )
        self.binder = Binder(
            client,
            concurrency=options.bind_concurrency,
            may_bind=self.is_leader,
            on_done=self._bind_done,
        )
        self.evictor = Evictor(client, may_evict=self.is_leader, on_done=self._eviction_done)
        self.status = StatusWriter(
            client,
            options.identity,
            on_event_dropped=self.metrics.events_dropped.inc,
            yield_to_binds=self.binder.quiet,
        )
        self._reported_bad: set[tuple[str, str, str, str]] = set()
        self._preemptors: dict[str, str] = {}
        """Per victim being evicted, the pod the room is for (``namespace/name``, or "")."""
        self._bind_sent: dict[str, float] = {}
        """When each bind in flight was sent (perf_counter), for Volcano's bind stage time."""
        self.sessions = 0
        self._causes: set[str] = set()
        """What woke the loop since the last session began (``asyncsched_session_causes``)."""
        self._freeze_snapshot = False
        """Freeze (``ClusterCache.snapshot``) the next snapshot: the first after the cache's."""
        self.informers: list[Informer[Any]] = [
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
        if options.config_map:
            self.informers.append(self._config_map_informer(options.config_map))

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
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        before = self.cache.tasks.get(key)
        self.cache.upsert_pod(pod)
        after = self.cache.tasks.get(key)
        if (
            before is None
            or after is None
            or before.status not in _ON_NODE_ALIVE
            or after.status not in _ON_NODE_ALIVE
            or before.node_name != after.node_name
            or before.resreq != after.resreq
            or before.init_resreq != after.init_resreq
        ):
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
        key = ("Node", "", node.metadata.name, "; ".join(problems))
        if problems and key not in self._reported_bad:
            self._reported_bad.add(key)
            log.warning(
                "node %s: GPU cards left out: %s (its other cards stay in use)",
                node.metadata.name,
                "; ".join(problems),
            )

    def _node_deleted(self, namespace: str, name: str) -> None:
        self.cache.delete_node(name)
        self._wake("Node")

    def _bad_object(self, kind: str, namespace: str, name: str, problem: str) -> None:
        """Skip an object we cannot read: log, count, and tell its owner with a warning Event."""
        self.metrics.decode_errors.labels(kind).inc()
        key = (kind, namespace, name, problem)
        if key in self._reported_bad:
            return
        self._reported_bad.add(key)
        where = f"{namespace}/{name}" if namespace else name
        log.warning("skipped %s %s: %s", kind, where, problem)
        if self.is_leader():
            self.status.event(
                kind,
                namespace,
                name,
                "",
                "InvalidObject",
                f"asyncsched cannot read this {kind} and ignores it: {problem}",
                "Warning",
                api_version=_API_VERSIONS.get(kind, "v1"),
            )

    def _wake(self, cause: str) -> None:
        """Start a session as soon as the one running ends; ``cause`` is counted with it."""
        self._causes.add(cause)
        self.dirty.set()

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    # -- the loop --------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then shut down cleanly (in-flight binds finish)."""
        if POD_ENCODING.problem:
            log.warning("%s", POD_ENCODING.problem)
        log.info("pods listed and watched in %s (%s)", POD_ENCODING.name, POD_ENCODING.why)
        background = [asyncio.create_task(i.run()) for i in self.informers]
        if self.elector is not None:
            background.append(asyncio.create_task(self.elector.run()))
        runner = None
        if self.options.metrics_port:
            runner = await serve_http(
                self.metrics, self.synced, self.options.metrics_host, self.options.metrics_port
            )
        try:
            await self._wait_synced(stop)
            log.info(
                "informers synced: %d nodes, %d pods", len(self.cache.nodes), len(self.cache.tasks)
            )
            freeze_long_lived()
            self._freeze_snapshot = True
            while not stop.is_set():
                await self._wait_for_work(stop)
                if stop.is_set():
                    break
                self.metrics.leader.set(1 if self.is_leader() else 0)
                if self.is_leader():
                    await self.run_once()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self.binder.drain()
            await self.evictor.drain()
            await self.status.drain(grace=SHUTDOWN_GRACE)
            if self.elector is not None:
                await self.elector.release()
            if runner is not None:
                await runner.cleanup()

    async def _wait_synced(self, stop: asyncio.Event) -> None:
        while not self.synced() and not stop.is_set():
            await asyncio.sleep(0.05)

    async def _wait_for_work(self, stop: asyncio.Event) -> None:
        waiters = [asyncio.create_task(self.dirty.wait()), asyncio.create_task(stop.wait())]
        if self.elector is not None:
            waiters.append(asyncio.create_task(self.elector.changed.wait()))
        try:
            await asyncio.wait(
                waiters, timeout=self.options.period, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waiters:
                waiter.cancel()
        self.dirty.clear()
        if self.elector is not None:
            if self.elector.changed.is_set():
                self._causes.add("leadership")
            self.elector.changed.clear()

    async def run_once(self) -> SessionResult:
        """One session: snapshot on the loop, decide in a worker thread, act on the loop."""
        outcome = self.config.poll()
        if outcome.changed:
            self.metrics.config_reloads.inc()
        if outcome.error:
            self.metrics.config_rejections.inc()
        self.sessions += 1
        for cause in self._causes or ("period",):
            self.metrics.session_causes.labels(cause).inc()
        self._causes.clear()
        began = time.perf_counter()
        self.cache.set_gpu_pools(self.config.current.gpu_pools)
        # The first snapshot after the freeze copies every task: as long-lived as the cache.
        freeze, self._freeze_snapshot = self._freeze_snapshot, False
        snapshot = self.cache.snapshot(now=time.time(), freeze=freeze)
        snapshot_ms = (time.perf_counter() - began) * 1000.0
        self._report_network(snapshot.hypernodes)
        uid = f"{self.options.identity}-{self.sessions}"
        result, _ = await asyncio.to_thread(
            run_session,
            snapshot,
            self.config.current,
            uid,
            time.perf_counter,
            self.options.session_budget,
        )
        self.metrics.session_seconds.observe(time.perf_counter() - began)
        self.metrics.sessions.inc()
        self.metrics.observe_session(result, snapshot_ms)
        self._observe_jobs(result, snapshot)
        self.metrics.observe_devices(snapshot, time.monotonic())
        self._apply(result)
        if result.deferred:  # cut short by its budget: the rest at once, not after a period
            self._wake("deferred")
        return result

    def _observe_jobs(self, result: SessionResult, snapshot: ClusterSnapshot) -> None:
        """Volcano's per-job latencies: the job of each task placed this session."""
        placed = []
        for bind in result.binds:
            task = self.cache.tasks.get(bind.uid)
            job = snapshot.jobs.get(task.job) if task is not None else None
            if job is not None:
                placed.append(job)
        volcano = self.metrics.volcano
        volcano.jobs_placed(placed, time.time())
        volcano.jobs_gone(snapshot.jobs)

    def _report_network(self, tree: HyperNodeTree) -> None:
        """A HyperNode left out of the network tree, or making it unusable, gets one warning
        (log and Event) per distinct problem; the rest of the tree is still used."""
        for name, why in tree.problems:
            key = ("HyperNode", "", name, why)
            if key in self._reported_bad:
                continue
            self._reported_bad.add(key)
            effect = "" if tree.ready else "; jobs with networkTopology wait until it is fixed"
            log.warning("HyperNode %s: %s%s", name, why, effect)
            if self.is_leader():
                self.status.event(
                    "HyperNode", "", name, "", "InvalidHyperNode", why + effect, "Warning",
                    api_version=_API_VERSIONS["HyperNode"],
                )  # fmt: skip

    def _apply(self, result: SessionResult) -> None:
        if self.is_leader():
            carry_out(result, self)
        else:
            for failure in result.failures:
                self.plugin_failed(failure)

    # -- the effects of a session (framework.effects.Effects), sent in the background --

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


_ON_NODE_ALIVE = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
"""Statuses between which a pod's moves change nothing a session decides on."""

_API_VERSIONS = {
    "PodGroup": "scheduling.volcano.sh/v1beta1",
    "Queue": "scheduling.volcano.sh/v1beta1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "HyperNode": "topology.volcano.sh/v1alpha1",
    "PodDisruptionBudget": "policy/v1",
}
