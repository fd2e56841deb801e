"""Cron schedules read as Volcano's CronJob controller reads them (robfig/cron's standard
parser): five fields, the ``@hourly``-style descriptors and ``@every <duration>``.

The rules worth knowing, as robfig/cron has them:

- Fields are minute (0-59), hour (0-23), day of month (1-31), month (1-12 or JAN-DEC)
  and day of week (0-6 or SUN-SAT); each a comma list of ``*``, ``?``, ``N``, ``N-M``,
  any of them with ``/STEP`` (``N/STEP`` runs from N to the field's end).
- When both day fields are restricted, a day matching either runs; when either is ``*``
  or ``?`` (without a step above 1), a day must match both.
- Times are wall-clock times in the schedule's zone. A time a daylight-saving change skips
  does not run that day; a time it repeats runs at both instants.
- The search for the next time gives up after five years (``0 0 30 2 *`` never runs).

Times are seconds since the epoch throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from asyncsched.controllers.job.policies import parse_duration

__all__ = [
    "Every",
    "Fields",
    "Schedule",
    "ScheduleError",
    "most_recent",
    "next_time",
    "parse_schedule",
    "zone_named",
]

_BOUNDS = {"minute": (0, 59), "hour": (0, 23), "day of month": (1, 31), "month": (1, 12),
           "day of week": (0, 6)}  # fmt: skip
_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
)}  # fmt: skip
_WEEKDAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_NAMES = {"month": _MONTHS, "day of week": _WEEKDAYS}
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "
_YEARS_SEARCHED = 5


class ScheduleError(ValueError):
    """A schedule that cannot be read, or that names no time the controller can use."""


@dataclass(frozen=True)
class Fields:
    """A five-field schedule: the values each field allows."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    """Either day field was ``*`` or ``?``: a day must match both, not either."""


@dataclass(frozen=True)
class Every:
    """``@every DURATION``: a fixed period, whole seconds, at least one."""

    seconds: int


Schedule = Fields | Every


def parse_schedule(text: str) -> tuple[Schedule, str | None]:
    """The schedule, and the zone a ``TZ=``/``CRON_TZ=`` prefix names (None without one)."""
    spec = text.strip()
    if not spec:
        raise ScheduleError("empty schedule")
    zone: str | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        head, _, spec = spec.partition(" ")
        zone = head.partition("=")[2]
        spec = spec.strip()
    if spec.startswith("@"):
        if spec.startswith(_EVERY):
            return Every(_every_seconds(spec[len(_EVERY) :])), zone
        if spec not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {spec}")
        spec = _DESCRIPTORS[spec]
    parts = spec.split()
    if len(parts) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(parts)}: {spec}")
    minutes, _ = _field(parts[0], "minute")
    hours, _ = _field(parts[1], "hour")
    days, dom_star = _field(parts[2], "day of month")
    months, _ = _field(parts[3], "month")
    weekdays, dow_star = _field(parts[4], "day of week")
    fields = Fields(
        tuple(sorted(minutes)), tuple(sorted(hours)), frozenset(days), frozenset(months),
        frozenset(weekdays), dom_star or dow_star,
    )  # fmt: skip
    return fields, zone


def _every_seconds(text: str) -> int:
    """robfig's ``Every``: a Go duration (a sign allowed), cut to whole seconds, at least
    one second."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    try:
        if not body.lstrip("+-"):
            raise ValueError(body)
        total = parse_duration(body[1:] if body[:1] in "+-" else body)
    except ValueError:
        raise ScheduleError(f"failed to parse duration {body!r}") from None
    return max(int(sign * total), 1)


def _field(text: str, what: str) -> tuple[set[int], bool]:
    low, high = _BOUNDS[what]
    allowed: set[int] = set()
    star = False
    for part in (p for p in text.split(",") if p):
        values, part_star = _range(part, what, low, high)
        allowed |= values
        star = star or part_star
    return allowed, star


def _range(expr: str, what: str, low: int, high: int) -> tuple[set[int], bool]:
    range_text, *steps = expr.split("/")
    if len(steps) > 1:
        raise ScheduleError(f"too many slashes: {expr}")
    bounds = range_text.split("-")
    star = bounds[0] in ("*", "?")
    if star:
        start, end = low, high
    elif len(bounds) > 2:
        raise ScheduleError(f"too many hyphens: {expr}")
    else:
        start = _number(bounds[0], what)
        end = _number(bounds[1], what) if len(bounds) == 2 else start
    step = 1
    if steps:
        step = _number(steps[0], what)
        if len(bounds) == 1:
            end = high
        if step > 1:
            star = False
    if start < low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ScheduleError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _number(text: str, what: str) -> int:
    named = _NAMES.get(what, {}).get(text.lower())
    if named is not None:
        return named
    digits = text[1:] if text.startswith("+") else text
    if not digits.isascii() or not digits.isdigit():
        raise ScheduleError(f"failed to parse int from {text!r} ({what})")
    return int(digits)


def zone_named(name: str | None) -> tzinfo:
    """The zone of a CronJob's ``timeZone`` (None: UTC, the controller's own zone in its
    image). ScheduleError if the tz database does not know it; ``Local`` is refused, as
    Volcano's webhook refuses it."""
    if name is None:
        return UTC
    if not name or name.lower() == "local":
        raise ScheduleError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name!r}") from None


def next_time(schedule: Schedule, after: float, zone: tzinfo = UTC) -> float | None:
    """The first time the schedule names strictly after ``after``; None when it names none
    in the next five years."""
    if isinstance(schedule, Every):
        return float(math.floor(after) + schedule.seconds)
    start = math.floor(after) + 1
    local = datetime.fromtimestamp(start, zone)
    if local.second:
        local = datetime.fromtimestamp(start + 60 - local.second, zone)
    first, begin = local.date(), (local.hour, local.minute)
    last_year = first.year + _YEARS_SEARCHED
    day = first
    while day.year <= last_year:
        if day.month in schedule.months and _day_matches(schedule, day):
            found = _on_day(schedule, day, begin if day == first else (0, 0), after, zone)
            if found is not None:
                return found
        day += timedelta(days=1)
    return None


def _day_matches(s: Fields, day: date) -> bool:
    dom = day.day in s.days
    dow = day.isoweekday() % 7 in s.weekdays
    return (dom and dow) if s.any_day else (dom or dow)


def _on_day(
    s: Fields, day: date, begin: tuple[int, int], after: float, zone: tzinfo
) -> float | None:
    midnight = datetime(day.year, day.month, day.day, tzinfo=zone)
    following = midnight + timedelta(days=1)
    if midnight.utcoffset() == following.utcoffset():  # no clock change today
        for h, m in ((h, m) for h in s.hours for m in s.minutes if (h, m) >= begin):
            return midnight.replace(hour=h, minute=m).timestamp()
        return None
    # A clock change today: a wall time may name no instant or two, so every one is tried
    # and only ``after`` bounds them (a repeated hour comes back after ``begin``).
    best: float | None = None
    for h, m in ((h, m) for h in s.hours for m in s.minutes):
        for fold in (0, 1):
            at = midnight.replace(hour=h, minute=m, fold=fold).timestamp()
            back = datetime.fromtimestamp(at, zone)
            if (back.hour, back.minute) == (h, m) and at > after and (best is None or at < best):
                best = at
    return best


def most_recent(
    schedule: Schedule, earliest: float, now: float, zone: tzinfo = UTC
) -> tuple[float | None, int]:
    """The last time the schedule names in (``earliest``, ``now``], and about how many it
    names there (Volcano's estimate from the first two, which its "too many missed start
    times" warning reads). ScheduleError when two successive times are under a second
    apart or there are none."""
    t1 = next_time(schedule, earliest, zone)
    if t1 is None:
        raise ScheduleError("the schedule names no time in the next five years")
    if now < t1:
        return None, 0
    t2 = next_time(schedule, t1, zone)
    if t2 is None or now < t2:
        return t1, 1
    interval = round(t2 - t1)
    if interval < 1:
        raise ScheduleError("time difference between two schedules is less than 1 second")
    missed = int((now - t1) // interval) + 1
    # Volcano jumps to about two periods before ``now`` and walks from there; where the
    # period varies (weekdays only) the jump can pass the answer, so step back until it
    # does not, then walk.
    start = max(t1 + (missed - 2) * interval, earliest)
    while start > earliest and (nxt := next_time(schedule, start, zone)) is not None and nxt > now:
        start = earliest + math.floor((start - earliest) / 2)
    found: float | None = None
    at = next_time(schedule, start, zone)
    while at is not None and at <= now:
        found = at
        at = next_time(schedule, at, zone)
    return found, missed
