"""When passes run: every ``--descheduling-interval``, or at the times a cron expression names.

Volcano's descheduler takes either (the interval wins when both are set) and reads the
cron expression with robfig/cron's standard parser, as Volcano's CronJob controller
does: the same reader serves both here (``asyncsched.controllers.cron.schedule``).
Times are UTC unless the expression starts with ``TZ=`` or ``CRON_TZ=``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, tzinfo

from asyncsched.controllers.cron.schedule import (
    Schedule,
    ScheduleError,
    next_time,
    parse_schedule,
    zone_named,
)
from asyncsched.descheduler.policy import PolicyError

__all__ = ["Cron", "next_run"]


@dataclass(frozen=True)
class Cron:
    schedule: Schedule
    zone: tzinfo = UTC

    @classmethod
    def parse(cls, text: str, where: str = "--descheduling-interval-cron-expression") -> Cron:
        try:
            schedule, zone = parse_schedule(text)
            return cls(schedule, zone_named(zone) if zone is not None else UTC)
        except ScheduleError as exc:
            raise PolicyError(f"{where}: {text!r} is not a cron expression: {exc}") from None

    def next_after(self, seconds: float) -> float:
        """The first time the expression names strictly after ``seconds`` (Unix time)."""
        found = next_time(self.schedule, seconds, self.zone)
        if found is None:
            raise PolicyError("cron expression never matches")
        return found


def next_run(now: float, interval: float, cron: Cron | None) -> float:
    """When the next pass runs, after one at ``now``."""
    if interval > 0 or cron is None:
        return now + interval
    return cron.next_after(now)
