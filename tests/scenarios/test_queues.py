"""Queues share the cluster by weight; priority orders jobs within a queue."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import simulate


def test_queues_weighted_one_and_three_split_the_cluster_about_one_to_three(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "weighted-queues.yaml")

    assert run.code == 0, run.stderr
    first_wave = [e for e in run.of("bound") if e["time"] == 0.0]
    small = sum(1 for e in first_wave if e["namespace"] == "team-small")
    large = sum(1 for e in first_wave if e["namespace"] == "team-large")
    assert small + large == 32, "the cluster (64 cpu) should be full of 2-cpu pods"
    assert 2.5 <= large / small <= 3.5, (small, large)
    assert "80 completed" in run.stdout
    # The report reads 1:3 too: shares held and deserved while both queues had pods waiting.
    assert run.summary["contended_time"] == 100.0
    for name, share in (("team-small", 0.25), ("team-large", 0.75)):
        queue = run.queue(name)
        assert queue["held_share"] == pytest.approx(share), queue
        assert queue["deserved_share"] == pytest.approx(share), queue
    table = run.stdout.split("queues (", 1)[1]
    assert "team-large            3     75.0%   75.0%" in table
    assert "team-small            1     25.0%   25.0%" in table


def test_higher_priority_class_goes_first_within_a_queue(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "priority.yaml")

    bound = run.of("bound")
    first = {e["name"] for e in bound if e["time"] == 0.0}
    assert first == {"high-0", "high-1", "high-2", "high-3"}
    later = [e for e in bound if e["name"].startswith("low-")]
    assert len(later) == 4 and all(e["time"] >= 60.0 for e in later)
