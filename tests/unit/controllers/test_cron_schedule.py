"""Cron schedules read as Volcano reads them (robfig/cron's standard parser), and the times
they name: answers written out by hand, then a brute-force search over every minute that
the fast search must agree with on generated schedules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsched.controllers.cron import (
    Every,
    Fields,
    ScheduleError,
    most_recent,
    next_time,
    parse_schedule,
    zone_named,
)


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _next(schedule: str, after: str, zone: str = "UTC") -> str | None:
    parsed, _ = parse_schedule(schedule)
    tz = ZoneInfo(zone)
    found = next_time(parsed, _at(after), tz)
    return None if found is None else datetime.fromtimestamp(found, tz).isoformat()


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("*/5 * * * *", "2026-01-01T00:00:00+00:00", "2026-01-01T00:05:00+00:00"),
        ("*/5 * * * *", "2026-01-01T00:04:59.9+00:00", "2026-01-01T00:05:00+00:00"),
        ("0 9 * * 1-5", "2026-01-02T10:00:00+00:00", "2026-01-05T09:00:00+00:00"),  # Fri→Mon
        ("0 0 29 2 *", "2026-01-01T00:00:00+00:00", "2028-02-29T00:00:00+00:00"),
        ("0 0 30 2 *", "2026-01-01T00:00:00+00:00", None),  # never: five years searched
        # Both day fields restricted: either matches (the 1st, 15th, or a Friday).
        ("0 0 1,15 * 5", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"),
        ("0 0 13 * FRI", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"),
        # One of them '*' (or '?'): a day must match both (Fridays only).
        ("0 0 * * FRI", "2026-01-02T00:00:01+00:00", "2026-01-09T00:00:00+00:00"),
        ("0 0 ? * 5", "2026-01-02T00:00:01+00:00", "2026-01-09T00:00:00+00:00"),
        # A step above 1 is not '*': odd days or Fridays, so the 5th (not the 9th).
        ("0 0 */2 * FRI", "2026-01-03T00:00:01+00:00", "2026-01-05T00:00:00+00:00"),
        ("0 12 * JAN-MAR SUN", "2026-04-01T00:00:00+00:00", "2027-01-03T12:00:00+00:00"),
        ("5/20 * * * *", "2026-01-01T00:06:00+00:00", "2026-01-01T00:25:00+00:00"),
        ("@weekly", "2026-01-01T00:00:00+00:00", "2026-01-04T00:00:00+00:00"),
        ("@yearly", "2026-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
        ("@hourly", "2026-01-01T00:59:59+00:00", "2026-01-01T01:00:00+00:00"),
    ],
)
def test_next_time(schedule: str, after: str, expected: str | None) -> None:
    assert _next(schedule, after) == expected


def test_a_time_the_clock_skips_does_not_run_that_day() -> None:
    # America/New_York springs forward at 02:00 on 2026-03-08: 02:30 does not exist.
    assert _next("30 2 * * *", "2026-03-08T00:00:00-05:00", "America/New_York") == (
        "2026-03-09T02:30:00-04:00"
    )


def test_a_time_the_clock_repeats_runs_at_both_instants() -> None:
    zone = ZoneInfo("America/New_York")
    schedule, _ = parse_schedule("30 1 * * *")
    at = _at("2026-11-01T00:00:00-04:00")
    seen = []
    for _ in range(3):
        found = next_time(schedule, at, zone)
        assert found is not None
        at = found
        seen.append(datetime.fromtimestamp(at, zone).isoformat())
    assert seen == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-02T01:30:00-05:00",
    ]


def test_every_counts_from_the_whole_second() -> None:
    schedule, _ = parse_schedule("@every 1m30s")
    assert schedule == Every(90)
    assert next_time(schedule, 100.7) == 190.0
    assert parse_schedule("@every 300ms")[0] == Every(1)  # at least a second, as robfig


def test_a_zone_prefix_is_read_out() -> None:
    schedule, zone = parse_schedule("CRON_TZ=Asia/Shanghai 0 8 * * *")
    assert zone == "Asia/Shanghai" and isinstance(schedule, Fields)


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("", "empty"),
        ("* * * *", "expected exactly 5 fields, found 4"),
        ("* * * * * *", "expected exactly 5 fields, found 6"),
        ("60 * * * *", "above maximum"),
        ("* 24 * * *", "above maximum"),
        ("* * 0 * *", "below minimum"),
        ("* * * 13 *", "above maximum"),
        ("* * * * 7", "above maximum"),
        ("*/0 * * * *", "positive"),
        ("5-1 * * * *", "beyond end"),
        ("1-2-3 * * * *", "too many hyphens"),
        ("1/2/3 * * * *", "too many slashes"),
        ("a * * * *", "failed to parse int"),
        ("-1 * * * *", "failed to parse int"),
        ("@daily2", "unrecognized descriptor"),
        ("@every", "unrecognized descriptor"),
        ("@every x", "failed to parse duration"),
    ],
)
def test_bad_schedules_are_refused(schedule: str, problem: str) -> None:
    with pytest.raises(ScheduleError, match=problem):
        parse_schedule(schedule)


def test_zones() -> None:
    assert zone_named(None) is UTC
    assert zone_named("Europe/Paris") == ZoneInfo("Europe/Paris")
    for bad in ("", "Local", "local", "Mars/Olympus", "../etc/passwd"):
        with pytest.raises(ScheduleError):
            zone_named(bad)


def test_most_recent_of_many_missed_times() -> None:
    schedule, _ = parse_schedule("0 * * * *")
    start = _at("2026-01-01T00:00:00+00:00")
    found, missed = most_recent(schedule, start, start + 300 * 3600 + 5)
    assert found == start + 300 * 3600
    assert missed == 300


def test_most_recent_where_the_period_varies() -> None:
    # Weekdays at 09:00: Thursday then Friday are a day apart, but the weekend is three;
    # the jump from the first two must not pass the answer.
    schedule, _ = parse_schedule("0 9 * * 1-5")
    start = _at("2026-01-01T00:00:00+00:00")  # a Thursday
    now = _at("2026-03-01T12:00:00+00:00")  # a Sunday
    found, _ = most_recent(schedule, start, now)
    assert found == _at("2026-02-27T09:00:00+00:00")  # the Friday before


def test_nothing_due_before_the_first_time() -> None:
    schedule, _ = parse_schedule("0 0 * * *")
    start = _at("2026-01-01T00:00:00+00:00")
    assert most_recent(schedule, start, start + 3600) == (None, 0)


# -- generated schedules against a brute-force search ----------------------------------


def _part(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    single = value.map(str)
    span = st.tuples(value, value).map(lambda ab: f"{min(ab)}-{max(ab)}")
    stepped = st.tuples(
        st.sampled_from(["*", *map(str, range(low, high + 1))]), st.integers(1, 9)
    ).map(lambda s: f"{s[0]}/{s[1]}")
    return st.one_of(st.just("*"), single, span, stepped)


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    return st.lists(_part(low, high), min_size=1, max_size=3).map(",".join)


schedules = st.tuples(_field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12), _field(0, 6)).map(
    " ".join
)


def _matches(fields: Fields, moment: datetime) -> bool:
    dom = moment.day in fields.days
    dow = moment.isoweekday() % 7 in fields.weekdays
    day = (dom and dow) if fields.any_day else (dom or dow)
    return (
        moment.minute in fields.minutes
        and moment.hour in fields.hours
        and moment.month in fields.months
        and day
    )


@settings(max_examples=100, deadline=None)
@given(
    schedule=schedules,
    start=st.integers(0, 4 * 365 * 24 * 60),
    zone=st.sampled_from(["UTC", "America/New_York", "Europe/London", "Asia/Kolkata"]),
)
def test_next_time_is_the_first_matching_minute(schedule: str, start: int, zone: str) -> None:
    fields, _ = parse_schedule(schedule)
    assert isinstance(fields, Fields)
    tz = ZoneInfo(zone)
    after = _at("2026-01-01T00:00:00+00:00") + start * 60 + 17
    found = next_time(fields, after, tz)
    # Walk every minute's instant for the next 10 days (past that, only check the answer).
    moment = datetime.fromtimestamp(after - 17 + 60, UTC)
    limit = moment + timedelta(days=10)
    expected = None
    while moment < limit:
        if _matches(fields, moment.astimezone(tz)):
            expected = moment.timestamp()
            break
        moment += timedelta(minutes=1)
    if expected is not None:
        assert found == expected
    else:
        assert found is None or found >= limit.timestamp()
        if found is not None:
            assert _matches(fields, datetime.fromtimestamp(found, tz))
