"""Preempt's search skips what cannot work (``RoomMaker.hopeless``, and the queue's
``allocatable`` asked once per task) without deciding anything differently: the same
evictions, binds and nominations with the shortcuts as without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asyncsched.actions.eviction import RoomMaker
from asyncsched.framework import Registry, SessionResult, load_configuration, run_session
from tests.builders import full_of_low_priority
from tests.scenarios.harness import simulate

CONFIG = "preempt-config.yaml"
SCENARIOS = [
    ("preempt-priority.yaml", CONFIG),
    ("preempt-whole-gang.yaml", CONFIG),
    ("reclaim-lent-share.yaml", CONFIG),
    ("reclaim-guarantee.yaml", CONFIG),
    ("reclaim-no-ping-pong.yaml", CONFIG),
    ("found-preempt-own-gang.yaml", CONFIG),
    ("found-preempt-loop.yaml", "found-preempt-loop-config.yaml"),
    ("volcano-preempt-p3.yaml", "volcano-preempt-config.yaml"),
    ("volcano-preempt-p4.yaml", "volcano-preempt-config.yaml"),
    ("volcano-preempt-p5.yaml", "volcano-preempt-config.yaml"),
    ("volcano-preempt-p8.yaml", "volcano-preempt-backfill-config.yaml"),
    ("volcano-preempt-p10.yaml", "volcano-preempt-config.yaml"),
    ("volcano-reclaim-r1.yaml", "volcano-reclaim-config.yaml"),
    ("volcano-reclaim-r3.yaml", "volcano-reclaim-config.yaml"),
]


def _search_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Preempt as it was before the shortcuts: every node tried, allocatable asked anew."""

    def admitted(self: RoomMaker, task: Any, queue: Any) -> bool:
        return not self.check_allocatable or self.ssn.allocatable(queue, task)

    monkeypatch.setattr(RoomMaker, "hopeless", lambda self, *args: False)
    monkeypatch.setattr(RoomMaker, "_admitted", admitted)


@pytest.mark.parametrize(("name", "config"), SCENARIOS)
def test_the_same_events_with_and_without_the_shortcuts(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    config: str,
) -> None:
    extra = ["--until", "200"]
    quick = simulate(capsys, tmp_path / "quick", name, config=config, extra=extra)
    with monkeypatch.context() as patch:
        _search_everything(patch)
        full = simulate(capsys, tmp_path / "full", name, config=config, extra=extra)

    assert quick.events == full.events


EVICT_CONFIG = (Path(__file__).parent / "yaml" / CONFIG).read_text()


def _session(monkeypatch: pytest.MonkeyPatch | None) -> SessionResult:
    loaded = load_configuration(EVICT_CONFIG, Registry())
    if monkeypatch is not None:
        _search_everything(monkeypatch)
    result, _ = run_session(full_of_low_priority(20, 80, 6).snapshot(), loaded, uid="evict")
    return result


def test_a_full_queue_gives_up_as_before_without_trying_each_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quick = _session(None)
    with monkeypatch.context() as patch:
        full = _session(patch)

    assert quick.evictions == full.evictions
    assert quick.binds == full.binds and quick.nominations == full.nominations
    assert {e.reason for e in quick.evictions} == {"reclaim"}, "q0 is over its share"
    assert quick.preemption_attempts < full.preemption_attempts
