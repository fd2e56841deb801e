"""The descheduler against a real API server: warm informers, usage from Prometheus, evictions.

It keeps the scheduler's cluster picture (a ``KubeScheduler`` that never
runs sessions: its informers, cache, Lease and Eviction API path), and at
every pass asks Prometheus for usage, decides with the pure core
(``asyncsched.descheduler``) and carries the evictions out through the same
effects the scheduler uses: the Eviction API (which enforces
PodDisruptionBudgets), an ``Evict`` Event on the pod with the reason, the pod
held as Releasing until it is gone. A pass without usage figures (Prometheus
unreachable, an empty or malformed answer) evicts nothing: it logs a warning,
counts it, and the next pass tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.metrics import serve_http
from asyncsched.backends.kube.scheduler import KubeScheduler, SchedulerOptions
from asyncsched.backends.prometheus import PrometheusClient, PrometheusError, Queries
from asyncsched.descheduler.defrag import gang_placed_without
from asyncsched.descheduler.passes import deschedule
from asyncsched.descheduler.plan import Plan, UsageFigures
from asyncsched.descheduler.policy import Policy
from asyncsched.descheduler.schedule import Cron, next_run

__all__ = ["DeschedulerOptions", "KubeDescheduler"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeschedulerOptions:
    identity: str
    interval: float = 0.0
    """Seconds between passes; 0 with no cron: one pass, then return."""
    cron: Cron | None = None
    dry_run: bool = False
    output: str = "text"
    prometheus: str = ""
    queries: Queries = field(default_factory=Queries)
    leader_elect: bool = False
    lease_namespace: str = "asyncsched-system"
    lease_name: str = "asyncsched-descheduler"
    lease_duration: float = 15.0
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 0


class DeschedulerMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.passes = Counter("asyncsched_descheduler_passes", "Descheduling passes", registry=r)
        self.evictions = Counter(
            "asyncsched_descheduler_evictions", "Pods evicted", ["plugin"], registry=r
        )
        self.no_data = Counter(
            "asyncsched_descheduler_usage_failures",
            "Passes that decided nothing because usage figures were missing",
            registry=r,
        )
        self.leader = Gauge(
            "asyncsched_descheduler_leader", "1 while this replica holds the lease", registry=r
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class KubeDescheduler:
    def __init__(
        self,
        client: KubeClient,
        policy: Policy,
        config: ConfigSource,
        options: DeschedulerOptions,
        out: Callable[[str], None] = lambda text: print(text, flush=True),
    ) -> None:
        self.policy = policy
        self.options = options
        self.out = out
        self.shell = KubeScheduler(
            client,
            config,
            SchedulerOptions(
                identity=options.identity,
                leader_elect=options.leader_elect,
                lease_namespace=options.lease_namespace,
                lease_name=options.lease_name,
                lease_duration=options.lease_duration,
            ),
        )
        self.prometheus = PrometheusClient(options.prometheus)
        self.metrics = DeschedulerMetrics()
        self.passes = 0
        self.history: dict[tuple[str, str], frozenset[str]] = {}
        """(owner, node) -> the owner's pods there when a pass last moved one off it."""
        self.needs_usage = any(p.load_aware is not None for p in policy.profiles)
        self.config = config

    def _verify(self, job: str, victims: list[str], needed: int) -> bool:
        trial = self.shell.cache.trial_snapshot(now=time.time())
        return gang_placed_without(trial, job, victims, needed, self.config.current)

    def is_leader(self) -> bool:
        return self.shell.is_leader()

    async def run(self, stop: asyncio.Event) -> None:
        """Passes until ``stop`` (or one pass when neither interval nor cron is set)."""
        shell = self.shell
        background = [asyncio.create_task(i.run()) for i in shell.informers]
        if shell.elector is not None:
            background.append(asyncio.create_task(shell.elector.run()))
        runner = None
        if self.options.metrics_port:
            runner = await serve_http(
                self.metrics, shell.synced, self.options.metrics_host, self.options.metrics_port
            )
        try:
            while not shell.synced() and not stop.is_set():
                await asyncio.sleep(0.05)
            once = self.options.interval <= 0 and self.options.cron is None
            while not stop.is_set():
                began = time.time()
                self.metrics.leader.set(1 if self.is_leader() else 0)
                if self.is_leader():
                    await self.run_once()
                    if once:
                        break
                    wait = next_run(began, self.options.interval, self.options.cron) - began
                else:  # a standby: look again soon, the Lease may come any time
                    wait = 1.0
                wait -= time.time() - began
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=max(wait, 0.0))
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await shell.evictor.drain()
            await shell.status.drain()
            if shell.elector is not None:
                await shell.elector.release()
            if runner is not None:
                await runner.cleanup()

    async def run_once(self) -> Plan:
        """One pass: usage from Prometheus, the plan, then its evictions (or the printed plan)."""
        self.passes += 1
        self.metrics.passes.inc()
        snapshot = self.shell.cache.snapshot(now=time.time())
        usage: UsageFigures | None = None
        if self.needs_usage:
            try:
                usage = await self.prometheus.usage(self.options.queries, list(snapshot.nodes))
            except PrometheusError as exc:
                self.metrics.no_data.inc()
                log.warning("descheduling pass %d: LoadAware evicts nothing: %s", self.passes, exc)
            else:
                if not usage.nodes:
                    self.metrics.no_data.inc()
                    log.warning(
                        "descheduling pass %d: Prometheus has no node usage in the window: %s",
                        self.passes, "; ".join(usage.problems) or "empty answer",
                    )  # fmt: skip
        # On the loop, not in a thread: the defragmentation check reads the cache, which the
        # informers change between awaits.
        plan = deschedule(snapshot, usage, self.policy, self._verify, self.history)
        for note in plan.notes:
            log.info("pass %d: %s", self.passes, note)
        if not self.options.dry_run:
            for planned in plan.evictions:
                if self.shell.evict(planned.eviction()):
                    self.history[(planned.owner, planned.node)] = planned.siblings
                    self.metrics.evictions.labels(planned.plugin).inc()
                    log.info("evicting %s from %s: %s", planned.key, planned.node, planned.reason)
        self._show(plan)
        return plan

    def _show(self, plan: Plan) -> None:
        if not self.options.dry_run:
            return
        if self.options.output == "json":
            body = {**plan.to_dict(), "queries": self.prometheus.sent[-4:]}
            self.out(json.dumps(body, sort_keys=True))
        else:
            self.out(plan.render())
        sys.stdout.flush()
