"""The Job controller's shell: watch events become Requests, a worker reconciles each Job.

Requests for one Job queue up under its key and are handed to ``reconcile``
together, in order; the Decision's actions go to the API, then the status
through the status subresource. Timed work (policy timeouts, TTL) comes back
through the queue at its time.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable

import msgspec

from asyncsched.api.batch import Job, JobStatus
from asyncsched.api.bus import Command
from asyncsched.api.core import Pod
from asyncsched.api.volcano import PodGroup
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.apply import JOB_API, Applier
from asyncsched.backends.kube.controllers.store import PodStore, Store
from asyncsched.backends.kube.controllers.workqueue import WorkQueue
from asyncsched.controllers.job import (
    DeleteCommand,
    Request,
    commands_for,
    owning_job,
    pod_request,
    podgroup_name,
    reconcile,
)

__all__ = ["JobController", "JobKey"]

log = logging.getLogger(__name__)

JobKey = tuple[str, str]
BadObject = Callable[[str, str, str, str], None]


class JobController:
    def __init__(
        self,
        client: KubeClient,
        jobs: Store[Job],
        pods: PodStore,
        podgroups: Store[PodGroup],
        commands: Store[Command],
        priorities: Callable[[], dict[str, int]],
        applier: Applier,
        on_bad: BadObject,
    ) -> None:
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.podgroups = podgroups
        self.commands = commands
        self.priorities = priorities
        self.applier = applier
        self.on_bad = on_bad
        self.queue: WorkQueue[JobKey, Request] = WorkQueue()
        self.consumed: set[str] = set()
        """uids of Commands already executed, until the informer sees them deleted."""
        self.reconciles = 0

    # -- events ------------------------------------------------------------------

    def job_changed(self, old: Job | None, new: Job) -> None:
        """A new Job, or one whose spec or deletion changed (our own status writes are not)."""
        if (
            old is None
            or old.spec != new.spec
            or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            or old.metadata.uid != new.metadata.uid
        ):
            self.queue.add((new.metadata.namespace, new.metadata.name))

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        pod = new if new is not None else old
        if pod is None or owning_job(pod) is None:
            return
        namespace, name = pod.metadata.namespace, PodStore.job_of(pod)
        job = self.jobs.get(namespace, name)
        if job is None:
            return
        request = pod_request(old, new, job, self.pods.tally(namespace, name))
        if request is not None:
            self.queue.add((namespace, name), request)

    def command_changed(self, command: Command) -> None:
        target = command.target
        if target is not None and target.kind == "Job":
            self.queue.add((command.metadata.namespace, target.name))

    def resync_all(self) -> None:
        for job in self.jobs:
            self.queue.add((job.metadata.namespace, job.metadata.name))

    # -- the worker ----------------------------------------------------------------

    async def handle(self, key: JobKey, requests: list[Request]) -> None:
        namespace, name = key
        job = self.jobs.get(namespace, name)
        if job is None:
            return
        requests = [await self._with_exit_code(namespace, r) for r in requests]
        pods = self.pods.of_job(namespace, name)
        pg = self.podgroups.get(namespace, podgroup_name(job)) or self.podgroups.get(
            namespace, name
        )
        commands = [
            c for c in commands_for(job, self.commands) if c.metadata.uid not in self.consumed
        ]
        try:
            decision = reconcile(
                job, pods, pg, now=time.time(), requests=requests, commands=commands,
                priorities=self.priorities(),
            )  # fmt: skip
        except (ValueError, TypeError, KeyError) as exc:
            self.on_bad("Job", namespace, name, f"cannot reconcile: {exc}")
            return
        self.reconciles += 1
        for action in decision.actions:
            if isinstance(action, DeleteCommand):
                command = self.commands.get(action.namespace, action.name)
                if command is not None:
                    self.consumed.add(command.metadata.uid)
        try:
            await self.applier.apply(job, decision.actions)
            if decision.status_changed:
                await self._write_status(job, decision.status)
        except KubeError as exc:
            if exc.namespace_terminating:  # the Job goes with its namespace
                log.debug("job %s/%s: namespace is being deleted", namespace, name)
                self.queue.forget(key)
                return
            delay = self.queue.retry(key, *requests)
            log.warning("job %s/%s: %s; retrying in %.1fs", namespace, name, exc, delay)
            return
        self.queue.forget(key)
        for at, request in decision.delayed:
            self.queue.add_at(key, at, request)
        if decision.requeue_at is not None:
            self.queue.add_at(key, decision.requeue_at)
        if decision.resync:
            self.queue.add(key)

    async def _write_status(self, job: Job, status: JobStatus) -> None:
        """PUT the whole status (a merge patch could not drop keys such as a plugin's
        controlledResources entry) and keep the answer, so the next reconcile starts from it."""
        meta = job.metadata
        path = f"{JOB_API}/namespaces/{meta.namespace}/jobs/{meta.name}/status"
        updated = msgspec.structs.replace(job, status=status)
        for attempt in range(2):
            try:
                answer = await self.client.put(path, msgspec.json.encode(updated))
            except KubeError as exc:
                if exc.status == 404:
                    return
                if exc.status != 409 or attempt:
                    raise
                # Someone changed the Job (its spec, labels) since we read it; the status
                # is ours alone, so put it on the latest version.
                latest = msgspec.json.decode(
                    await self.client.get(path[: -len("/status")]), type=Job
                )
                if latest.metadata.uid != meta.uid:
                    return
                updated = msgspec.structs.replace(latest, status=status)
                continue
            self.jobs.offer(msgspec.json.decode(answer, type=Job))
            return

    async def _with_exit_code(self, namespace: str, request: Request) -> Request:
        """A PodFailed request carries the first container's exit code (exitCode policies)."""
        if request.event != "PodFailed" or request.exit_code or not request.pod:
            return request
        try:
            raw = json.loads(await self.client.get(f"/api/v1/namespaces/{namespace}/pods/"
                                                   f"{request.pod}"))  # fmt: skip
        except KubeError:
            return request
        for status in raw.get("status", {}).get("containerStatuses") or []:
            terminated = (status.get("state") or {}).get("terminated") or {}
            code = int(terminated.get("exitCode") or 0)
            if code:
                return dataclasses.replace(request, exit_code=code)
        return request
