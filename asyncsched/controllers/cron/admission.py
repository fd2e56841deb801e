"""What Volcano refuses in a CronJob: its webhook's rules and its CRD's schema.

The webhook checks the schedule, the time zone and the name (a Job's name adds up to 11
characters to it); the CRD bounds the numbers and the concurrency policy. The Job
template is checked as a Job when each Job is made (the Job webhook), and the simulator
checks it once when it reads the file.
"""

from __future__ import annotations

import re

from asyncsched.api.cronjob import CONCURRENCY_POLICIES, CronJob
from asyncsched.api.validation import qualified_name
from asyncsched.controllers.cron.schedule import ScheduleError, parse_schedule, zone_named

__all__ = ["MAX_NAME", "cronjob_problems"]

MAX_NAME = 52
"""63 (a label value: the Job's name is one) less the ``-<minutes>`` suffix (11)."""
_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def cronjob_problems(cron: CronJob) -> list[str]:
    spec = cron.spec
    problems: list[str] = []
    if not spec.schedule:
        problems.append("spec.schedule is required")
    elif "TZ" in spec.schedule:
        problems.append(
            "spec.schedule must not contain TZ or CRON_TZ: set the zone in spec.timeZone"
        )
    else:
        try:
            parse_schedule(spec.schedule)
        except ScheduleError as exc:
            bad = f"spec.schedule {spec.schedule!r} is not a valid cron expression"
            problems.append(f"{bad}: {exc}")
    if spec.time_zone is not None:
        problems += _zone_problems(spec.time_zone)
    if spec.concurrency_policy not in CONCURRENCY_POLICIES:
        problems.append(
            f"spec.concurrencyPolicy {spec.concurrency_policy!r} must be one of "
            + ", ".join(CONCURRENCY_POLICIES)
        )
    for field, value in (
        ("startingDeadlineSeconds", spec.starting_deadline_seconds),
        ("successfulJobsHistoryLimit", spec.successful_jobs_history_limit),
        ("failedJobsHistoryLimit", spec.failed_jobs_history_limit),
    ):
        if value is not None and value < 0:
            problems.append(f"spec.{field} {value} must not be negative")
    name = cron.metadata.name
    if len(name) > MAX_NAME:
        problems.append(
            f"metadata.name must be {MAX_NAME} characters or less (it has {len(name)}), to "
            "leave room for the Jobs' suffix"
        )
    elif why := qualified_name(name):
        problems.append(f"metadata.name {why}")
    return problems


def _zone_problems(zone: str) -> list[str]:
    if not zone:
        return ["spec.timeZone must be absent or a zone name, not empty"]
    if zone.lower() == "local":
        return ["spec.timeZone must not be Local: name a zone of the tz database"]
    parts = zone.split("/")
    if any(p in (".", "..") or p.startswith("-") or not _ZONE_PART.match(p) for p in parts):
        return [f"spec.timeZone {zone!r} is not a zone name"]
    try:
        zone_named(zone)
    except ScheduleError:
        return [f"spec.timeZone {zone!r} is not a zone of the tz database"]
    return []
