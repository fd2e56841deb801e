"""The controller manager: informers, work queues, leader election, metrics and the webhook.

Informers run on every replica so a standby's picture stays warm; only the
Lease holder's workers act. A new leader looks at everything once, since the
old one may have died half-way. Objects that cannot be read are skipped and
reported (log, metric, warning Event), never fatal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from asyncsched.api import PodGroup, Queue
from asyncsched.api.batch import Job
from asyncsched.api.bus import Command
from asyncsched.api.core import Pod, PriorityClass
from asyncsched.api.cronjob import CronJob
from asyncsched.backends.kube.client import KubeClient
from asyncsched.backends.kube.controllers.admission_view import AdmissionView
from asyncsched.backends.kube.controllers.apply import Applier
from asyncsched.backends.kube.controllers.cronjobs import CronJobController
from asyncsched.backends.kube.controllers.groups import PlainPodGroupController, ReplicaSet
from asyncsched.backends.kube.controllers.hypernodes import (
    DISCOVERY_CONFIG,
    HyperNodeDiscovery,
    config_map_kind,
)
from asyncsched.backends.kube.controllers.jobs import JobController
from asyncsched.backends.kube.controllers.queues import QueueController
from asyncsched.backends.kube.controllers.store import PodGroupStore, PodStore, Store
from asyncsched.backends.kube.controllers.webhook import serve_webhook
from asyncsched.backends.kube.controllers.workqueue import WorkQueue
from asyncsched.backends.kube.informer import Informer, ResourceKind
from asyncsched.backends.kube.kinds import (
    API_VERSIONS,
    HYPERNODES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
)
from asyncsched.backends.kube.leader import LeaderElector
from asyncsched.backends.kube.metrics import serve_http
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.backends.kube.warned import Warned
from asyncsched.cache import DEFAULT_SCHEDULER_NAMES
from asyncsched.controllers.job import podgroup_request

__all__ = ["ControllerManager", "ControllerMetrics", "ControllerOptions"]

log = logging.getLogger(__name__)

JOBS = ResourceKind("Job", "/apis/batch.volcano.sh/v1alpha1/jobs", Job)
CRONJOBS = ResourceKind(
    "CronJob", "/apis/batch.volcano.sh/v1alpha1/cronjobs", CronJob, optional=True
)
COMMANDS = ResourceKind("Command", "/apis/bus.volcano.sh/v1alpha1/commands", Command, optional=True)
REPLICA_SETS = ResourceKind("ReplicaSet", "/apis/apps/v1/replicasets", ReplicaSet)
_API_VERSIONS = {
    **API_VERSIONS,
    **{k.kind: k.api_version for k in (JOBS, CRONJOBS, COMMANDS, REPLICA_SETS)},
}
K = TypeVar("K")
R = TypeVar("R")


@dataclass(frozen=True)
class ControllerOptions:
    identity: str
    scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES
    leader_elect: bool = False
    lease_namespace: str = "asyncsched-system"
    lease_name: str = "asyncsched-controllers"
    lease_duration: float = 15.0
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 0
    """0 = no HTTP endpoint."""
    webhook_host: str = "0.0.0.0"
    webhook_port: int = 0
    """0 = no admission webhook."""
    tls_cert: str = ""
    tls_key: str = ""
    workers: int = 4
    """Jobs reconciled at once (never the same Job twice at once)."""
    discovery_config: str = DISCOVERY_CONFIG
    """``namespace/name`` of the ConfigMap whose ``volcano-controller.conf`` may ask for
    HyperNode discovery from node labels; '' = no discovery."""


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.reconciles = Counter(
            "asyncsched_controller_reconciles", "Keys handled", ["controller"], registry=r
        )
        self.failures = Counter(
            "asyncsched_controller_failures", "Keys whose handling failed", ["controller"],
            registry=r,
        )  # fmt: skip
        self.decode_errors = Counter(
            "asyncsched_controller_skipped_objects",
            "Objects skipped because they could not be read",
            ["kind"],
            registry=r,
        )
        self.admissions = Counter(
            "asyncsched_webhook_admissions", "Admission verdicts", ["resource", "verdict"],
            registry=r,
        )  # fmt: skip
        self.leader = Gauge(
            "asyncsched_controller_leader", "1 while this replica holds the lease", registry=r
        )
        self.queue_depth = Gauge(
            "asyncsched_controller_queue_depth", "Keys waiting", ["controller"], registry=r
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class ControllerManager:
    """One controllers replica: the Job, CronJob, PodGroup and Queue controllers and the
    webhook."""

    def __init__(self, client: KubeClient, options: ControllerOptions) -> None:
        self.client = client
        self.options = options
        self.metrics = ControllerMetrics()
        self.events = StatusWriter(client, options.identity)
        self.jobs: Store[Job] = Store()
        self.cronjobs: Store[CronJob] = Store()
        self.pods = PodStore()
        self.podgroups = PodGroupStore()
        self.queues: Store[Queue] = Store()
        self.commands: Store[Command] = Store()
        self.replica_sets: Store[ReplicaSet] = Store()
        self.priority_classes: Store[PriorityClass] = Store()
        self.leading = asyncio.Event()
        self.warned = Warned(log, self.events.event, self.leading.is_set, _API_VERSIONS)
        self.elector = (
            LeaderElector(
                client, options.lease_namespace, options.lease_name, options.identity,
                lease_duration=options.lease_duration,
                renew_deadline=options.lease_duration * 2 / 3,
                retry_period=max(options.lease_duration / 7.5, 0.2),
            )
            if options.leader_elect
            else None
        )  # fmt: skip
        self.job_controller = JobController(
            client, self.jobs, self.pods, self.podgroups, self.commands,
            lambda: {pc.metadata.name: pc.value for pc in self.priority_classes},
            Applier(client, self.pods, self.events), self.bad_object,
        )  # fmt: skip
        self.cron_controller = CronJobController(client, self.cronjobs, self.jobs, self.events)
        self.group_controller = PlainPodGroupController(
            client, self.pods, self.replica_sets, frozenset(options.scheduler_names)
        )
        self.queue_controller = QueueController(client, self.queues, self.podgroups, self.commands)
        self.admission = AdmissionView(client, self.queues, self.pods, self.podgroups)
        self.discovery = HyperNodeDiscovery(client, self._warn_config)
        self.informers: list[Informer[Any]] = [
            self._informer(JOBS, self._job_upsert, self._job_delete),
            self._informer(CRONJOBS, self._cronjob_upsert, self.cronjobs.delete),
            self._informer(PODS, self._pod_upsert, self._pod_delete),
            self._informer(PODGROUPS, self._podgroup_upsert, self._podgroup_delete),
            self._informer(QUEUES, self._queue_upsert, self.queues.delete),
            self._informer(COMMANDS, self._command_upsert, self._command_delete),
            self._informer(REPLICA_SETS, self._replica_set_upsert, self.replica_sets.delete),
            self._informer(
                PRIORITY_CLASSES, self.priority_classes.upsert, self.priority_classes.delete
            ),
        ]
        if options.discovery_config:
            dc = self.discovery
            self.informers += [
                self._informer(NODES, dc.node_upserted, dc.node_deleted),
                self._informer(HYPERNODES, dc.hypernode_upserted, dc.hypernode_deleted),
                self._informer(
                    config_map_kind(options.discovery_config), dc.config_upserted, dc.config_deleted
                ),
            ]
        self._background: set[asyncio.Task[Any]] = set()

    def _informer(
        self, kind: ResourceKind[Any], upsert: Callable[[Any], Any], delete: Callable[..., Any]
    ) -> Informer[Any]:
        return Informer(self.client, kind, upsert, lambda ns, n: delete(ns, n), self.bad_object)

    # -- informer handlers -----------------------------------------------------------

    def _job_upsert(self, job: Job) -> None:
        old = self.jobs.upsert(job)
        self.job_controller.job_changed(old, job)
        if old is None or old.status.state.phase != job.status.state.phase:
            self.cron_controller.job_changed(job)  # its CronJob looks only at the phase

    def _job_delete(self, namespace: str, name: str) -> None:
        old = self.jobs.delete(namespace, name)
        if old is not None:
            self.cron_controller.job_changed(old)

    def _cronjob_upsert(self, cron: CronJob) -> None:
        old = self.cronjobs.upsert(cron)
        if old is None or old.metadata.resource_version != cron.metadata.resource_version:
            self.cron_controller.cronjob_changed(cron)

    def _pod_upsert(self, pod: Pod) -> None:
        old = self.pods.upsert(pod)
        self.job_controller.pod_changed(old, pod)
        self.group_controller.pod_changed(pod)

    def _pod_delete(self, namespace: str, name: str) -> None:
        old = self.pods.delete(namespace, name)
        self.job_controller.pod_changed(old, None)

    def _podgroup_upsert(self, pg: PodGroup) -> None:
        old = self.podgroups.upsert(pg)
        if old is None or old.status.phase != pg.status.phase or old.spec.queue != pg.spec.queue:
            self.queue_controller.podgroup_changed(old, pg)
        owner = next((r for r in pg.metadata.owner_references if r.kind == "Job"), None)
        if owner is not None and (old is None or old.status.phase != pg.status.phase):
            # The Job waits for its PodGroup to leave Pending before it creates pods; a
            # move to Unknown is the Job's Unknown event.
            request = podgroup_request(old, pg)
            requests = (request,) if request is not None else ()
            self.job_controller.queue.add((pg.metadata.namespace, owner.name), *requests)

    def _podgroup_delete(self, namespace: str, name: str) -> None:
        self.queue_controller.podgroup_changed(self.podgroups.delete(namespace, name), None)

    def _queue_upsert(self, queue: Queue) -> None:
        old = self.queues.upsert(queue)
        if old is None or old.spec != queue.spec or old.status.state != queue.status.state:
            self.queue_controller.queue_changed(queue)

    def _command_upsert(self, command: Command) -> None:
        self.commands.upsert(command)
        self.job_controller.command_changed(command)
        self.queue_controller.command_changed(command)

    def _command_delete(self, namespace: str, name: str) -> None:
        old = self.commands.delete(namespace, name)
        if old is not None:
            self.job_controller.consumed.discard(old.metadata.uid)

    def _replica_set_upsert(self, rs: ReplicaSet) -> None:
        old = self.replica_sets.upsert(rs)
        if rs.spec.replicas == 0 and (old is None or old.spec.replicas != 0):
            self._spawn(self.group_controller.replica_set_changed(rs))

    def _spawn(self, coro: Awaitable[Any]) -> None:
        async def run() -> None:
            await self.leading.wait()
            await coro

        task = asyncio.create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def bad_object(self, kind: str, namespace: str, name: str, problem: str) -> None:
        """Skip an object we cannot read or act on: log, count, and a warning Event on it."""
        self.metrics.decode_errors.labels(kind).inc()
        self.warned.warn(
            kind, namespace, name, problem, f"skipped {kind} {namespace}/{name}: {problem}",
            reason="InvalidObject",
            message=f"asyncsched controllers cannot handle this {kind} and ignore it: {problem}",
        )  # fmt: skip

    def _warn_config(self, kind: str, namespace: str, name: str, problem: str) -> None:
        """A configuration a controller cannot use as given: log and a warning Event, once."""
        self.warned.warn(
            kind, namespace, name, problem, f"{kind} {namespace}/{name}: {problem}",
            reason="InvalidConfiguration", message=problem,
        )  # fmt: skip

    # -- running -----------------------------------------------------------------------

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set; then hand the Lease back and finish in-flight writes."""
        tasks = [asyncio.create_task(i.run()) for i in self.informers]
        runners: list[web.AppRunner] = []
        opts = self.options
        if opts.webhook_port:
            runners.append(await serve_webhook(
                opts.webhook_host, opts.webhook_port, opts.tls_cert, opts.tls_key,
                self.admission.job_queues, self.admission,
                lambda resource, v: self.metrics.admissions.labels(resource, v).inc(),
            ))  # fmt: skip
        if opts.metrics_port:
            runners.append(
                await serve_http(self.metrics, self.synced, opts.metrics_host, opts.metrics_port)
            )
        try:
            while not self.synced() and not stop.is_set():
                await asyncio.sleep(0.05)
            log.info("controllers synced: %d jobs, %d pods", len(self.jobs), len(self.pods))
            tasks.append(asyncio.create_task(self._lead()))
            jc, gc, qc = self.job_controller, self.group_controller, self.queue_controller
            for _ in range(max(opts.workers, 1)):
                tasks.append(asyncio.create_task(self._work("job", jc.queue, jc.handle)))
            tasks.append(asyncio.create_task(self._work("podgroup", gc.queue, gc.handle)))
            cc = self.cron_controller
            tasks.append(asyncio.create_task(self._work("cronjob", cc.queue, cc.handle)))
            tasks.append(asyncio.create_task(self._work("queue", qc.queue, qc.handle)))
            if opts.discovery_config:
                dc = self.discovery
                tasks.append(asyncio.create_task(self._work("hypernode", dc.queue, dc.handle)))
            await stop.wait()
        finally:
            for task in [*tasks, *self._background]:
                task.cancel()
            await asyncio.gather(*tasks, *self._background, return_exceptions=True)
            await self.events.drain()
            if self.elector is not None:
                await self.elector.release()
            for runner in runners:
                await runner.cleanup()

    async def _lead(self) -> None:
        """Follow the Lease; on taking it, look at everything once."""
        if self.elector is None:
            self._became_leader()
            return
        elector = asyncio.create_task(self.elector.run())
        try:
            while True:
                await self.elector.changed.wait()
                self.elector.changed.clear()
                if self.elector.is_leader:
                    self._became_leader()
                else:
                    self.leading.clear()
                    self.metrics.leader.set(0)
        finally:
            elector.cancel()
            await asyncio.gather(elector, return_exceptions=True)

    def _became_leader(self) -> None:
        self.leading.set()
        self.metrics.leader.set(1)
        self.job_controller.resync_all()
        self.cron_controller.resync_all()
        self.group_controller.resync_all()
        self.queue_controller.resync_all()
        self.discovery.resync_all()

    async def _work(
        self,
        name: str,
        queue: WorkQueue[K, R],
        handle: Callable[[K, list[R]], Awaitable[None]],
    ) -> None:
        """Take keys while leading; a failure on one key is logged and never stops the worker."""
        depth = self.metrics.queue_depth.labels(name)
        while True:
            await self.leading.wait()
            key, requests = await queue.get()
            try:
                if not self.leading.is_set():
                    queue.add(key, *requests)
                    continue
                await handle(key, requests)
                self.metrics.reconciles.labels(name).inc()
            except asyncio.CancelledError:
                raise
            except Exception:
                self.metrics.failures.labels(name).inc()
                log.exception("%s controller: handling %s failed", name, key)
                queue.retry(key, *requests)
            finally:
                queue.done(key)
                depth.set(len(queue))
