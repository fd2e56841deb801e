"""The plugin's arguments: durations, shares, amounts, and one clear line for a bad one."""

from __future__ import annotations

import pytest
from asyncsched_antistarvation.settings import Settings, parse_duration

from asyncsched.framework import ArgumentError, Arguments
from asyncsched.model import Resource


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("1.5", 1.5), ("30m", 1800.0), ("1h30m", 5400.0), ("2h", 7200.0), ("45s", 45.0)],
)
def test_durations_read_as_seconds_or_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5", "inf", "nan", "1d", "30m junk", "m30"])
def test_what_is_not_a_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_defaults_hold_when_no_argument_is_given() -> None:
    settings = Settings.from_arguments(Arguments({}))
    assert settings == Settings()
    assert settings.waiting_threshold == 1800.0 and settings.large_cluster_share == 0.25


def test_every_argument_is_read() -> None:
    arguments = Arguments(
        {
            "antistarvation.waitingThreshold": "10m",
            "antistarvation.largeClusterShare": "0.5",
            "antistarvation.largeQueueShare": 0.8,
            "antistarvation.largeResources": {"nvidia.com/gpu": 8, "cpu": "64"},
            "antistarvation.minPriority": "100",
            "antistarvation.maxReservedShare": 0.3,
            "antistarvation.maxHold": "1h",
        }
    )
    settings = Settings.from_arguments(arguments)
    assert arguments.unread() == []
    assert settings == Settings(
        waiting_threshold=600.0,
        large_cluster_share=0.5,
        large_queue_share=0.8,
        large_resources=Resource({"nvidia.com/gpu": 8, "cpu": 64000}),
        min_priority=100,
        max_reserved_share=0.3,
        max_hold=3600.0,
    )


@pytest.mark.parametrize(
    ("key", "value", "wanted"),
    [
        ("waitingThreshold", "soon", "a duration such as 30m or 1h30m"),
        ("maxHold", -1, "a duration"),
        ("waitingThreshold", "0", "a duration above 0"),
        ("waitingThreshold", "0m", "a duration above 0"),
        ("largeClusterShare", 1.5, "a share above 0, at most 1"),
        ("largeClusterShare", 0, "a share above 0, at most 1"),
        ("largeQueueShare", "half", "a share above 0, at most 1"),
        ("maxReservedShare", -0.5, "a share above 0, at most 1"),
        ("largeResources", "8 gpus", "a map of resource names to quantities"),
        ("largeResources", {"nvidia.com/gpu": "lots"}, "a map of resource names"),
        ("largeResources", {"nvidia.com/gpu": 0}, "positive quantities"),
        ("minPriority", "high", "an integer"),
    ],
)
def test_a_bad_argument_fails_in_one_line_naming_plugin_and_argument(
    key: str, value: object, wanted: str
) -> None:
    arguments = Arguments({f"antistarvation.{key}": value}, owner="plugin antistarvation")
    with pytest.raises(ArgumentError) as raised:
        Settings.from_arguments(arguments)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"plugin antistarvation: argument 'antistarvation.{key}'")
    assert wanted in message


@pytest.mark.parametrize("key", ["antistarvation.waitingTreshold", "waitingThreshold", "weight"])
def test_an_unknown_argument_is_refused_naming_it_and_the_known_ones(key: str) -> None:
    with pytest.raises(ArgumentError) as raised:
        Settings.from_arguments(Arguments({key: "10m"}))
    message = str(raised.value)
    assert message.startswith(f"plugin antistarvation: unknown argument {key!r} (known: ")
    assert "antistarvation.waitingThreshold" in message and "\n" not in message


def test_naming_another_test_of_largeness_turns_the_default_cluster_share_off() -> None:
    by_gpus = Settings.from_arguments(
        Arguments({"antistarvation.largeResources": {"nvidia.com/gpu": 8}})
    )
    assert by_gpus.large_cluster_share == 0.0
    both = Arguments(
        {"antistarvation.largeQueueShare": 0.5, "antistarvation.largeClusterShare": 0.3}
    )
    assert Settings.from_arguments(both).large_cluster_share == 0.3
