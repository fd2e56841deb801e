"""A session run with a clock says how long its parts took, and decides the same."""

from __future__ import annotations

import itertools

from asyncsched.backends.config_source import ConfigSource
from asyncsched.framework import Registry, run_session
from asyncsched.model import ClusterSnapshot
from tests.builders import node, pod, podgroup, snapshot


def _snapshot() -> ClusterSnapshot:
    return snapshot(
        node("n1", cpu="4"),
        podgroup("train", 2),
        pod("train-0", cpu="1", group="train"),
        pod("train-1", cpu="1", group="train"),
    )


def test_timings_cover_open_each_action_each_plugin_and_the_whole() -> None:
    ticks = itertools.count()
    loaded = ConfigSource(Registry()).current
    result, _ = run_session(_snapshot(), loaded, "s1", clock=lambda: next(ticks) / 1000)

    timings = result.timings
    assert timings is not None
    assert list(timings.actions) == list(loaded.configuration.actions)
    plugins = loaded.configuration.plugin_names()
    assert {p for p, _ in timings.plugins} == set(plugins)
    assert {w for _, w in timings.plugins} == {"OnSessionOpen", "OnSessionClose"}
    assert all(ms > 0 for ms in timings.actions.values())
    assert timings.e2e_ms > timings.open_ms > 0


def test_the_clock_changes_no_decision_and_is_not_part_of_the_result() -> None:
    loaded = ConfigSource(Registry()).current
    plain, _ = run_session(_snapshot(), loaded, "s1")
    timed, _ = run_session(_snapshot(), loaded, "s1", clock=iter(range(10**6)).__next__)

    assert plain.timings is None and timed.timings is not None
    assert timed == plain
    assert [b.name for b in timed.binds] == ["train-0", "train-1"]
