"""A simulation that streams its events (``keep_events=False``, as ``asyncsched simulate``
runs) gives the same events and the same report as one that keeps them in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asyncsched.backends.config_source import ConfigSource
from asyncsched.backends.sim import Simulation, load_manifests, summarize
from asyncsched.framework import Registry

SCENARIO = Path(__file__).parents[3] / "scenarios" / "yaml" / "preempt-job-restarts.yaml"
CONFIG = SCENARIO.with_name("preempt-config.yaml")


def _run(keep: bool) -> tuple[Simulation, list[dict[str, Any]], str]:
    streamed: list[dict[str, Any]] = []
    sim = Simulation(
        load_manifests([SCENARIO]),
        ConfigSource(Registry(), str(CONFIG)),
        on_event=lambda event: streamed.append(dict(event)),
        keep_events=keep,
    )
    outcome = sim.run()
    return sim, streamed, summarize(sim, outcome).to_json()


def test_streaming_keeps_every_event_and_the_report() -> None:
    kept, kept_stream, kept_report = _run(keep=True)
    streaming, stream, report = _run(keep=False)

    assert stream == kept_stream == [dict(e) for e in kept.events]
    assert any(e["event"] == "evicted" for e in stream), "the scenario evicts"
    assert report == kept_report
    with pytest.raises(RuntimeError, match="streams its events"):
        _ = streaming.events
