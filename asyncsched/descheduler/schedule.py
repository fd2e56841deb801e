"""When passes run: every ``--descheduling-interval``, or at the times a cron expression names.

Volcano's descheduler takes either (the interval wins when both are set);
the cron expression is the standard five fields (minute hour day-of-month
month day-of-week) with ``*``, ``a-b``, ``a,b`` and ``/step``, and the
``@hourly``-style shorthands. Times are UTC.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from asyncsched.descheduler.policy import PolicyError

__all__ = ["Cron", "next_run"]

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_FIELDS = ("minute", "hour", "day of month", "month", "day of week")
_SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, text: str, where: str = "--descheduling-interval-cron-expression") -> Cron:
        expression = _SHORTHANDS.get(text.strip(), text.strip())
        parts = expression.split()
        if len(parts) != 5:
            raise PolicyError(f"{where}: {text!r} is not five cron fields")
        sets = [_field(p, lo, hi, f"{where} ({name})") for p, (lo, hi), name in
                zip(parts, _RANGES, _FIELDS, strict=True)]  # fmt: skip
        weekdays = frozenset(d % 7 for d in sets[4])
        return cls(sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] == "*", parts[4] == "*")

    def matches(self, at: dt.datetime) -> bool:
        if at.minute not in self.minutes or at.hour not in self.hours:
            return False
        if at.month not in self.months:
            return False
        day = at.day in self.days
        weekday = (at.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return day and weekday
        return day or weekday  # cron: either named day field matches

    def next_after(self, seconds: float) -> float:
        """The first matching minute strictly after ``seconds`` (Unix time)."""
        at = dt.datetime.fromtimestamp(seconds, dt.UTC).replace(second=0, microsecond=0)
        for _ in range(366 * 24 * 60 * 5):
            at += dt.timedelta(minutes=1)
            if self.matches(at):
                return at.timestamp()
        raise PolicyError("cron expression never matches")


def next_run(now: float, interval: float, cron: Cron | None) -> float:
    """When the next pass runs, after one at ``now``."""
    if interval > 0 or cron is None:
        return now + interval
    return cron.next_after(now)


def _field(text: str, lo: int, hi: int, where: str) -> frozenset[int]:
    found: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if span == "*":
                first, last = lo, hi
            elif "-" in span:
                a, b = span.split("-", 1)
                first, last = int(a), int(b)
            else:
                first = last = int(span)
                if step_text:
                    last = hi
        except ValueError:
            raise PolicyError(f"{where}: {part!r} is not a number, range or step") from None
        if step < 1 or first < lo or last > (7 if hi == 6 else hi) or first > last:
            raise PolicyError(f"{where}: {part!r} is outside {lo}-{hi}")
        found.update(range(first, last + 1, step))
    return frozenset(found)
