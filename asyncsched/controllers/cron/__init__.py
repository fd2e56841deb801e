"""Volcano's CronJob controller as a functional core.

``parse_schedule`` reads a schedule as Volcano does (robfig/cron's standard parser);
``reconcile`` turns a CronJob, its Jobs and the time into a ``CronDecision``.
"""

from __future__ import annotations

from asyncsched.controllers.cron.reconcile import (
    CronDecision,
    CronEvent,
    after_conflict,
    controlled_by,
    created_event,
    job_name,
    reconcile,
    template_job,
    with_created,
)
from asyncsched.controllers.cron.schedule import (
    Every,
    Fields,
    Schedule,
    ScheduleError,
    most_recent,
    next_time,
    parse_schedule,
    zone_named,
)

__all__ = [
    "CronDecision",
    "CronEvent",
    "Every",
    "Fields",
    "Schedule",
    "ScheduleError",
    "after_conflict",
    "controlled_by",
    "created_event",
    "job_name",
    "most_recent",
    "next_time",
    "parse_schedule",
    "reconcile",
    "template_job",
    "with_created",
    "zone_named",
]
