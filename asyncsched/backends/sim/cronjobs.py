"""Volcano's CronJob controller in the simulator.

The pure core (``asyncsched.controllers.cron``) decides; this shell keeps the CronJobs
and the Jobs they own from watch events, asks ``reconcile`` about each CronJob that
something happened to, and carries the decision out through the store. Its next
scheduled time goes on the virtual clock, which starts at ``EPOCH`` (2026-01-01T00:00Z,
a Thursday): ``*/5 * * * *`` first runs at t=300s.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence

import msgspec

from asyncsched.api.batch import Job
from asyncsched.api.cronjob import CronJob
from asyncsched.backends.sim.agenda import Agenda
from asyncsched.backends.sim.fields import ManifestError
from asyncsched.backends.sim.objects import Manifest
from asyncsched.backends.sim.store import (
    EPOCH,
    AlreadyExists,
    Note,
    ObjectStore,
    Refused,
    WatchEvent,
)
from asyncsched.backends.sim.workqueue import WorkQueue
from asyncsched.controllers.cron import (
    CronEvent,
    after_conflict,
    controlled_by,
    created_event,
    reconcile,
    with_created,
)

__all__ = ["CRONJOB_CONTROLLER", "CronJobController", "check_ends", "endless_cronjob"]

CRONJOB_CONTROLLER = "cronjob-controller"


def endless_cronjob(manifests: Sequence[Manifest]) -> Manifest | None:
    """The first CronJob whose last document does not suspend it: it makes Jobs for ever,
    so a run of it ends only at a given time."""
    last: dict[tuple[str, str], Manifest] = {}
    for m in sorted(manifests, key=lambda m: m.submit_at):
        if isinstance(m.obj, CronJob):
            last[(m.obj.metadata.namespace, m.obj.metadata.name)] = m
    return next(
        (m for m in last.values() if isinstance(m.obj, CronJob) and not m.obj.spec.suspend), None
    )


def check_ends(manifests: Sequence[Manifest], until: float | None) -> None:
    """ManifestError if the run would never end (``endless_cronjob`` and no ``until``)."""
    endless = endless_cronjob(manifests) if until is None else None
    if endless is not None:
        raise ManifestError(
            f"{endless.source}: a CronJob makes Jobs for ever: give --until SECONDS"
        )


class CronJobController:
    def __init__(self, store: ObjectStore, agenda: Agenda) -> None:
        self.store = store
        self.agenda = agenda
        self.cronjobs: dict[str, CronJob] = {}
        self._owned: dict[str, dict[str, Job]] = defaultdict(dict)
        """CronJob key -> the Jobs naming it as controller, by name."""
        self._dirty = WorkQueue()
        self._timers: dict[str, tuple[float, int]] = {}
        """CronJob key -> its next scheduled time (virtual) and the agenda's timer for it:
        one each, cancelled when it has none, so a suspended CronJob keeps no run going."""
        store.watch((CronJob,), self._cronjob)
        store.watch((Job,), self._job)

    def _cronjob(self, change: WatchEvent) -> None:
        if change.event == "DELETED":
            self.cronjobs.pop(change.key, None)
            self._set_timer(change.key, None)
            return
        self.cronjobs[change.key] = change.obj
        if change.actor != CRONJOB_CONTROLLER:
            self._dirty.add(change.key)

    def _job(self, change: WatchEvent) -> None:
        job: Job = change.obj
        meta = job.metadata
        for ref in meta.owner_references:
            if ref.controller and ref.kind == "CronJob":
                key = f"{meta.namespace}/{ref.name}"
                if change.event == "DELETED":
                    self._owned[key].pop(meta.name, None)
                else:
                    self._owned[key][meta.name] = job
                if (
                    change.event != "MODIFIED"
                    or change.old.status.state.phase != job.status.state.phase
                ):
                    self._dirty.add(key)  # its CronJob looks only at the phase

    def _due(self, key: str) -> None:
        self._timers.pop(key, None)
        self._dirty.add(key)

    def _set_timer(self, key: str, at: float | None) -> None:
        current = self._timers.get(key)
        if current is not None and current[0] == at:
            return
        if current is not None:
            self.agenda.cancel(current[1])
            del self._timers[key]
        if at is not None:
            self._timers[key] = (at, self.agenda.at(at, functools.partial(self._due, key)))

    def sync(self) -> bool:
        """Reconcile every CronJob something happened to; True if any was."""
        return self._dirty.drain(self._reconcile)

    def _reconcile(self, key: str) -> None:
        cron = self.cronjobs.get(key)
        if cron is None:
            self._set_timer(key, None)
            return
        namespace = cron.metadata.namespace
        owned = [j for _, j in sorted(self._owned[key].items()) if controlled_by(j, cron)]
        now = EPOCH + self.agenda.now
        decision = reconcile(
            cron, owned, lambda name: self.store.get(Job, f"{namespace}/{name}"), now
        )
        for event in decision.events:
            self._event(cron, event)
        for name in decision.delete:
            self.store.delete(Job, f"{namespace}/{name}", actor=CRONJOB_CONTROLLER)
        status, changed = decision.status, decision.status_changed
        if decision.create is not None and decision.scheduled_at is not None:
            made = self._create(cron, decision.create)
            if made is not None:
                status, changed = with_created(status, made, decision.scheduled_at), True
        current = self.store.get(CronJob, key)
        if changed and current is not None and current.metadata.uid == cron.metadata.uid:
            self.store.update(
                msgspec.structs.replace(current, status=status), actor=CRONJOB_CONTROLLER
            )
        self._set_timer(key, None if decision.next_at is None else decision.next_at - EPOCH)

    def _create(self, cron: CronJob, job: Job) -> Job | None:
        try:
            made = self.store.create(job, actor=CRONJOB_CONTROLLER)
        except AlreadyExists:
            existing = self.store.get(Job, f"{job.metadata.namespace}/{job.metadata.name}")
            if existing is None:
                return None
            is_run, event = after_conflict(cron, existing)
            if event is not None:
                self._event(cron, event)
            return existing if is_run else None
        except Refused as exc:
            self._event(cron, CronEvent("Warning", "FailedCreate", f"Failed to create job: {exc}"))
            return None
        self._event(cron, created_event(cron, made))
        return made

    def _event(self, cron: CronJob, event: CronEvent) -> None:
        meta = cron.metadata
        self.store.record(
            Note(
                "CronJob",
                meta.namespace,
                meta.name,
                event.reason,
                event.message,
                CRONJOB_CONTROLLER,
                {"type": event.type},
            )
        )
