"""Volcano's CronJob controller as a functional core: a CronJob, the Jobs it owns and the
time in; the Jobs to delete, the one to create, the new status, Events and when to look
again out.

It follows Volcano's sync step by step:

1. Finished Jobs (Completed, Failed, Terminated) leave ``status.active``; the latest
   Completed one sets ``lastSuccessfulTime``; Completed and Failed Jobs beyond the
   history limits are deleted, oldest first (Terminated ones are kept, as Volcano keeps
   them).
2. An active entry whose Job is gone, or is another Job by now, is dropped; a running
   Job the CronJob owns but does not list is reported (``OrphanedJob``), not adopted.
3. Suspended: nothing more. Otherwise the most recent scheduled time after
   ``lastScheduleTime`` (or the CronJob's creation) and within ``startingDeadlineSeconds``
   of now is run, unless a Job of its name is listed (``@every`` under a minute names two
   times alike): ``Forbid`` skips it while a Job runs, ``Replace`` deletes the running
   Jobs first, ``Allow`` runs beside them.
4. The Job is named ``<cronjob>-<scheduled time in minutes since the epoch>``, so a time
   is never run twice even if a status write is lost: a name taken by a Job of this
   CronJob that still runs is that run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

import msgspec

from asyncsched.api.batch import Job
from asyncsched.api.cronjob import (
    SCHEDULED_TIMESTAMP_ANNOTATION,
    CronJob,
    CronJobStatus,
    JobReference,
)
from asyncsched.api.meta import ObjectMeta, OwnerReference
from asyncsched.controllers.cron.schedule import (
    ScheduleError,
    most_recent,
    next_time,
    parse_schedule,
    zone_named,
)
from asyncsched.model.timestamps import format_timestamp, parse_timestamp

__all__ = [
    "CronDecision",
    "CronEvent",
    "after_conflict",
    "controlled_by",
    "created_event",
    "job_name",
    "reconcile",
    "template_job",
    "with_created",
]

FINISHED = frozenset({"Completed", "Failed", "Terminated"})
TOO_MANY_MISSED = 100
API_VERSION = "batch.volcano.sh/v1alpha1"


@dataclass(frozen=True)
class CronEvent:
    """A Kubernetes Event to record on the CronJob."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class CronDecision:
    status: CronJobStatus
    """The status after the deletions; a created Job joins it through ``with_created``."""
    status_changed: bool
    delete: tuple[str, ...] = ()
    """Jobs to delete, by name, in order (before creating)."""
    create: Job | None = None
    scheduled_at: float | None = None
    """The scheduled time ``create`` runs."""
    events: tuple[CronEvent, ...] = ()
    next_at: float | None = None
    """The next scheduled time, to look again then; None: only when something changes."""


def _warning(reason: str, message: str) -> CronEvent:
    return CronEvent("Warning", reason, message)


def controlled_by(job: Job, cron: CronJob) -> bool:
    return any(
        r.controller and r.kind == "CronJob" and r.name == cron.metadata.name
        and r.uid == cron.metadata.uid
        for r in job.metadata.owner_references
    )  # fmt: skip


def job_name(cron: CronJob, scheduled: float) -> str:
    return f"{cron.metadata.name}-{int(scheduled // 60)}"


def reconcile(
    cron: CronJob,
    owned: Sequence[Job],
    find: Callable[[str], Job | None],
    now: float,
    zone: Callable[[str | None], tzinfo] = zone_named,
) -> CronDecision:
    """``owned``: the Jobs this CronJob controls; ``find``: any Job of its namespace by
    name (None if there is none)."""
    status = msgspec.structs.replace(cron.status, active=list(cron.status.active))
    events: list[CronEvent] = []
    deletes: list[str] = []
    changed = _finished(cron, owned, status, events, deletes)
    changed |= _stale(owned, find, status, events)

    def decided(
        create: Job | None = None,
        scheduled_at: float | None = None,
        next_at: float | None = None,
    ) -> CronDecision:
        return CronDecision(
            status, changed, tuple(deletes), create, scheduled_at, tuple(events), next_at
        )

    if cron.metadata.deletion_timestamp or cron.spec.suspend:
        return decided()
    try:
        schedule, prefixed = parse_schedule(cron.spec.schedule)
    except ScheduleError as exc:
        problem = f"unparseable schedule for cronjob: {cron.spec.schedule}: {exc}"
        events.append(_warning("UnParseableCronJobSchedule", problem))
        return decided()
    if prefixed is not None:
        events.append(_warning("UnsupportedSchedule", f"CRON_TZ or TZ in the schedule "
                               f"{cron.spec.schedule!r} is not officially supported; the "
                               "timeZone field is ignored"))  # fmt: skip
    try:
        tz = zone(prefixed if prefixed is not None else cron.spec.time_zone)
    except ScheduleError as exc:
        events.append(_warning("InvalidTimeZone", str(exc)))
        return decided()
    earliest = parse_timestamp(status.last_schedule_time or cron.metadata.creation_timestamp)
    deadline = cron.spec.starting_deadline_seconds
    if deadline is not None:
        earliest = max(earliest, now - deadline)
    try:
        scheduled, missed = most_recent(schedule, earliest, now, tz)
    except ScheduleError as exc:
        events.append(
            CronEvent("Warning", "InvalidSchedule", f"Error getting schedule time: {exc}")
        )
        return decided()
    upcoming = next_time(schedule, now, tz)
    if scheduled is None:
        return decided(next_at=upcoming)
    if missed > TOO_MANY_MISSED:
        advice = "Set or decrease .spec.startingDeadlineSeconds or check clock skew"
        events.append(_warning("TooManyMissedTimes", f"too many missed start times. {advice}"))
    name = job_name(cron, scheduled)
    if any(ref.name == name for ref in status.active):
        return decided(next_at=upcoming)
    policy = cron.spec.concurrency_policy
    if policy == "Forbid" and status.active:
        running = "Skipping job creation because another job is already running"
        events.append(_warning("ForbidConcurrent", running))
        return decided(next_at=upcoming)
    if policy == "Replace" and status.active:
        events.append(_warning("ReplaceConcurrent", "Replacing active job for CronJob"))
        for ref in status.active:
            deletes.append(ref.name)
            events.append(CronEvent("Normal", "SuccessfulDelete", f"Deleted job {ref.name!r}"))
        status.active = []
        changed = True
    return decided(create=_job_for(cron, scheduled, name, tz), scheduled_at=scheduled,
                   next_at=upcoming)  # fmt: skip


def _finished(
    cron: CronJob,
    owned: Sequence[Job],
    status: CronJobStatus,
    events: list[CronEvent],
    deletes: list[str],
) -> bool:
    changed = False
    succeeded: list[Job] = []
    failed: list[Job] = []
    for job in owned:
        phase = job.status.state.phase
        if phase not in FINISHED:
            continue
        uid = job.metadata.uid
        if any(ref.uid == uid for ref in status.active):
            status.active = [ref for ref in status.active if ref.uid != uid]
            seen = f"Saw completed job: {job.metadata.name} in active, remove"
            events.append(CronEvent("Normal", "SawCompletedJob", seen))
            changed = True
        if phase == "Completed":
            finish = job.status.state.last_transition_time
            last = status.last_successful_time
            if finish and (last is None or parse_timestamp(finish) > parse_timestamp(last)):
                status.last_successful_time = finish
                changed = True
            succeeded.append(job)
        elif phase == "Failed":
            failed.append(job)
    for jobs, limit in (
        (succeeded, cron.spec.successful_jobs_history_limit),
        (failed, cron.spec.failed_jobs_history_limit),
    ):
        if limit is None or len(jobs) <= limit:
            continue
        for job in sorted(jobs, key=_age)[: len(jobs) - limit]:
            deletes.append(job.metadata.name)
            events.append(
                CronEvent("Normal", "SuccessfulDelete", f"Deleted job {job.metadata.name!r}")
            )
            changed = True
    return changed


def _age(job: Job) -> tuple[bool, float, str]:
    """Oldest first, by creation time then name; a Job with no creation time last."""
    created = job.metadata.creation_timestamp
    return (not created, parse_timestamp(created), job.metadata.name)


def _stale(
    owned: Sequence[Job],
    find: Callable[[str], Job | None],
    status: CronJobStatus,
    events: list[CronEvent],
) -> bool:
    listed = {ref.uid for ref in status.active}
    for job in owned:
        if job.metadata.uid not in listed and job.status.state.phase not in FINISHED:
            meta = job.metadata
            orphan = f"{meta.name} (UID: {meta.uid})"
            events.append(_warning("OrphanedJob", "Detected orphaned job forgotten or not "
                                   f"managed by controller: {orphan}"))  # fmt: skip
    owned_uids = {job.metadata.uid for job in owned}
    kept: list[JobReference] = []
    for ref in status.active:
        if ref.uid in owned_uids:
            kept.append(ref)
            continue
        found = find(ref.name)
        if found is None:
            gone = f"Active job {ref.name!r} no longer exists (UID: {ref.uid})"
            events.append(_warning("StaleReference", gone))
        elif found.metadata.uid != ref.uid:
            events.append(_warning("StaleReference", f"Active job reference {ref.name!r} "
                                   f"points to a different UID (expected: {ref.uid}, actual: "
                                   f"{found.metadata.uid})"))  # fmt: skip
        else:
            kept.append(ref)
    if len(kept) == len(status.active):
        return False
    status.active = kept
    return True


def _job_for(cron: CronJob, scheduled: float, name: str, tz: tzinfo) -> Job:
    template = cron.spec.job_template
    stamp = datetime.fromtimestamp(scheduled, tz).isoformat().replace("+00:00", "Z")
    owner = OwnerReference(
        api_version=API_VERSION, kind="CronJob", name=cron.metadata.name,
        uid=cron.metadata.uid, controller=True, block_owner_deletion=True,
    )  # fmt: skip
    meta = ObjectMeta(
        name=name,
        namespace=cron.metadata.namespace,
        labels=dict(template.metadata.labels),
        annotations={**template.metadata.annotations, SCHEDULED_TIMESTAMP_ANNOTATION: stamp},
        owner_references=[owner],
    )
    return Job(metadata=meta, spec=template.spec)


def template_job(cron: CronJob) -> Job:
    """A Job as ``cron`` makes them, for checking what the Job webhook will check on each
    before any is made."""
    return _job_for(cron, 0.0, job_name(cron, 0.0), UTC)


def with_created(status: CronJobStatus, job: Job, scheduled: float) -> CronJobStatus:
    """The status once ``job`` exists for the time ``scheduled``."""
    meta = job.metadata
    ref = JobReference(
        api_version=API_VERSION, kind="Job", namespace=meta.namespace, name=meta.name,
        uid=meta.uid, resource_version=meta.resource_version,
    )  # fmt: skip
    active = [r for r in status.active if r.uid != meta.uid] + [ref]
    return msgspec.structs.replace(
        status, active=active, last_schedule_time=format_timestamp(scheduled)
    )


def after_conflict(cron: CronJob, existing: Job) -> tuple[bool, CronEvent | None]:
    """The Job's name was taken: whether ``existing`` is this run (a Job of this CronJob
    that still runs, to list as active), and the Event to record if it is someone else's."""
    if not controlled_by(existing, cron):
        owner = next((r.name for r in existing.metadata.owner_references if r.controller), "none")
        return False, _warning("ForeignJob", f"Job {existing.metadata.name} exists but is not "
                               f"owned by this CronJob (current owner: {owner})")  # fmt: skip
    return existing.status.state.phase not in FINISHED, None


def created_event(cron: CronJob, job: Job) -> CronEvent:
    meta = cron.metadata
    made = f"Created job {job.metadata.name} for CronJob {meta.namespace}/{meta.name}"
    return CronEvent("Normal", "SuccessfulCreate", made)
