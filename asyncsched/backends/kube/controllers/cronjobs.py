"""Volcano's CronJob controller's shell: CronJobs and Jobs in, Jobs made and deleted and the
CronJob's status written through the API.

A CronJob is looked at when it or one of its Jobs changes, and again at its next
scheduled time (a timer on the work queue); the pure core decides
(``asyncsched.controllers.cron``). A Job that could not be made or deleted leaves the
status unwritten and the key retried with backoff, so the next try decides afresh.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec

from asyncsched.api.batch import Job
from asyncsched.api.cronjob import CronJob, CronJobStatus
from asyncsched.backends.kube.client import KubeClient, KubeError
from asyncsched.backends.kube.controllers.apply import JOB_API, delete
from asyncsched.backends.kube.controllers.store import Store
from asyncsched.backends.kube.controllers.workqueue import WorkQueue
from asyncsched.backends.kube.status import StatusWriter
from asyncsched.controllers.cron import (
    CronDecision,
    CronEvent,
    after_conflict,
    controlled_by,
    created_event,
    reconcile,
    with_created,
)

__all__ = ["CronJobController"]

log = logging.getLogger(__name__)

Key = tuple[str, str]
CLOCK_PAD = 0.1
"""Seconds past a scheduled time to look again, for clocks a little apart (Volcano's
``nextScheduleDelta``)."""


def _jobs_path(namespace: str) -> str:
    return f"{JOB_API}/namespaces/{namespace}/jobs"


class CronJobController:
    def __init__(
        self,
        client: KubeClient,
        cronjobs: Store[CronJob],
        jobs: Store[Job],
        events: StatusWriter,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.cronjobs = cronjobs
        self.jobs = jobs
        self.events = events
        self.clock = clock
        self.queue: WorkQueue[Key, None] = WorkQueue()
        self._made: dict[Key, Job] = {}
        """Jobs we created that the informer has not shown yet. They stay out of the shared
        store, whose first sight of a Job is the Job controller's cue to reconcile it."""

    # -- informer handlers ---------------------------------------------------------

    def cronjob_changed(self, cron: CronJob) -> None:
        self.queue.add((cron.metadata.namespace, cron.metadata.name))

    def job_changed(self, job: Job) -> None:
        self._made.pop((job.metadata.namespace, job.metadata.name), None)
        for ref in job.metadata.owner_references:
            if ref.controller and ref.kind == "CronJob":
                self.queue.add((job.metadata.namespace, ref.name))

    def resync_all(self) -> None:
        for cron in self.cronjobs:
            self.cronjob_changed(cron)

    # -- work ------------------------------------------------------------------------

    async def handle(self, key: Key, _: list[None]) -> None:
        namespace, name = key
        cron = self.cronjobs.get(namespace, name)
        if cron is None:
            self.queue.forget(key)
            return
        made = {k[1]: j for k, j in self._made.items() if k[0] == namespace}
        jobs = [j for j in self.jobs if j.metadata.namespace == namespace]
        jobs += [j for job, j in made.items() if self.jobs.get(namespace, job) is None]
        owned = [j for j in jobs if controlled_by(j, cron)]

        def find(job: str) -> Job | None:
            return self.jobs.get(namespace, job) or made.get(job)

        decision = reconcile(cron, owned, find, self.clock())
        for event in decision.events:
            self._event(cron, event)
        try:
            status, changed = await self._carry_out(cron, decision)
            if changed:
                await self._write_status(cron, status)
        except KubeError as exc:
            delay = self.queue.retry(key)
            log.warning("cronjob %s/%s: %s; retrying in %.1fs", namespace, name, exc, delay)
            return
        self.queue.forget(key)
        if decision.next_at is not None:
            self.queue.add_at(key, decision.next_at + CLOCK_PAD)

    async def _carry_out(self, cron: CronJob, decision: CronDecision) -> tuple[CronJobStatus, bool]:
        namespace = cron.metadata.namespace
        for name in decision.delete:
            await delete(
                self.client, f"{_jobs_path(namespace)}/{name}", {"propagationPolicy": "Background"}
            )
            self._made.pop((namespace, name), None)
        status, changed = decision.status, decision.status_changed
        if decision.create is not None and decision.scheduled_at is not None:
            job = await self._create(cron, decision.create)
            if job is not None:
                status, changed = with_created(status, job, decision.scheduled_at), True
        return status, changed

    async def _create(self, cron: CronJob, job: Job) -> Job | None:
        """The Job made, or the one of this CronJob already running under its name."""
        body: dict[str, Any] = msgspec.to_builtins(job)
        body.update(apiVersion=job.api_version, kind="Job")
        path = _jobs_path(job.metadata.namespace)
        try:
            answer = await self.client.post(path, json.dumps(body).encode())
        except KubeError as exc:
            if exc.status != 409:
                self._event(
                    cron, CronEvent("Warning", "FailedCreate", f"Failed to create job: {exc}")
                )
                raise
            existing = msgspec.json.decode(
                await self.client.get(f"{path}/{job.metadata.name}"), type=Job
            )
            is_run, event = after_conflict(cron, existing)
            if event is not None:
                self._event(cron, event)
            return existing if is_run else None
        made = msgspec.json.decode(answer, type=Job)
        self._made[(made.metadata.namespace, made.metadata.name)] = made
        self._event(cron, created_event(cron, made))
        return made

    async def _write_status(self, cron: CronJob, status: CronJobStatus) -> None:
        meta = cron.metadata
        body: dict[str, Any] = msgspec.to_builtins(msgspec.structs.replace(cron, status=status))
        body.update(apiVersion=cron.api_version, kind="CronJob")
        path = f"{JOB_API}/namespaces/{meta.namespace}/cronjobs/{meta.name}/status"
        answer = await self.client.put(path, json.dumps(body).encode())
        self.cronjobs.offer(msgspec.json.decode(answer, type=CronJob))

    def _event(self, cron: CronJob, event: CronEvent) -> None:
        meta = cron.metadata
        self.events.event(
            "CronJob", meta.namespace, meta.name, meta.uid, event.reason, event.message,
            event.type, api_version=cron.api_version,
        )  # fmt: skip
