"""The scheduler against a real API server: informers in, sessions, binds and status out.

Everything here is I/O around the pure core. Watch events update the cache
and wake the loop; a session runs as soon as something changed (bursts
coalesce while a session runs) and at least every period. Informers and the
cache stay warm on a standby replica, so a takeover schedules at once. This
module is the replica and its loop; what each watch event does is in
:mod:`~asyncsched.backends.kube.watch`, what a session's decisions send in
:mod:`~asyncsched.backends.kube.effects`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube.binder import Binder
from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.effects import KubeEffects
from asyncsched.backends.kube.evictor import Evictor
from asyncsched.backends.kube.informer import Informer
from asyncsched.backends.kube.kinds import API_VERSIONS
from asyncsched.backends.kube.leader import LeaderElector
from asyncsched.backends.kube.metrics import Metrics, serve_http
from asyncsched.backends.kube.pod_protobuf import POD_ENCODING
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.backends.kube.warned import Warned
from asyncsched.backends.kube.watch import WatchHandlers
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES, ClusterCache
from asyncsched.framework import SessionResult, run_session
from asyncsched.framework.effects import carry_out
from asyncsched.model import ClusterSnapshot
from asyncsched.model.gcpause import freeze_long_lived
from asyncsched.model.hypernodes import HyperNodeTree

__all__ = ["KubeScheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 5.0
"""Seconds a stopping scheduler keeps sending statuses and Events once its binds and
evictions are done, so it is gone well within a Pod's default 30 s grace period."""


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
    bind_concurrency: int = 128
    """Binds in flight, each on a connection of its own. With more of them in flight the
    API server's etcd commits more writes together: on the 2-core bed 128 bound plain pods
    16% and gangs 6% faster than 64, as it did the round-robin binder (BENCHMARKS.md, "More
    binds in flight"); 16 had paced a burst at two thirds of 64's rate."""
    config_map: str = ""
    """NAMESPACE/NAME[:KEY] of a ConfigMap to read the configuration from, through the API."""
    session_budget: int | None = None
    """Tasks one session may place before it stops and the next starts at once
    (``asyncsched.framework.budget``); None: no limit."""


class KubeScheduler(WatchHandlers, KubeEffects):
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
        self.warned = Warned(log, self.status.event, self.is_leader, API_VERSIONS)
        self._preemptors: dict[str, str] = {}
        """Per victim being evicted, the pod the room is for (``namespace/name``, or "")."""
        self._bind_sent: dict[str, float] = {}
        """When each bind in flight was sent (perf_counter), for Volcano's bind stage time."""
        self.sessions = 0
        self._causes: set[str] = set()
        """What woke the loop since the last session began (``asyncsched_session_causes``)."""
        self._freeze_snapshot = False
        """Freeze (``ClusterCache.snapshot``) the next snapshot: the first after the cache's."""
        self.informers: list[Informer[Any]] = self._watch()

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
        loaded = self.config.current
        self.cache.set_gpu_pools(loaded.gpu_pools)
        # The first snapshot after the freeze copies every task: as long-lived as the cache.
        freeze, self._freeze_snapshot = self._freeze_snapshot, False
        snapshot = self.cache.snapshot(
            now=time.time(), freeze=freeze, configuration=loaded.configuration
        )
        snapshot_ms = (time.perf_counter() - began) * 1000.0
        self._report_network(snapshot.hypernodes)
        uid = f"{self.options.identity}-{self.sessions}"
        result, _ = await asyncio.to_thread(
            run_session,
            snapshot,
            loaded,
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
        effect = "" if tree.ready else "; jobs with networkTopology wait until it is fixed"
        for name, why in tree.problems:
            self.warned.warn(
                "HyperNode", "", name, why, f"HyperNode {name}: {why}{effect}",
                reason="InvalidHyperNode", message=why + effect,
            )  # fmt: skip

    def _apply(self, result: SessionResult) -> None:
        if self.is_leader():
            carry_out(result, self)
        else:
            for failure in result.failures:
                self.plugin_failed(failure)
