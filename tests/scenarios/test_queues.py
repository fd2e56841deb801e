"""Queues share the cluster by weight; priority orders jobs within a queue."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, Run, simulate, variant


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


def _started(run: Run, name: str) -> float:
    return float(min(e["time"] for e in run.of("started") if e["name"].startswith(name)))


def test_fifo_queue_keeps_a_small_job_behind_the_gang_that_cannot_start_yet(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "queue-fifo.yaml", extra=["--until", "50"])
    waiting = "PodGroup default/small (1 pod): queue 'strict' is fifo: waiting behind job"
    assert f"{waiting} default/train" in run.stdout

    run = simulate(capsys, tmp_path, "queue-fifo.yaml")
    assert run.code == 0, run.stderr
    assert _started(run, "train-") == 100.0
    assert _started(run, "small-") == 100.0, "the small job must not pass the head of the queue"


def test_traverse_queue_lets_the_small_job_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = "dequeueStrategy: fifo"
    traverse = variant(tmp_path, "queue-fifo.yaml", fifo, "dequeueStrategy: traverse")
    default = variant(tmp_path, "queue-fifo.yaml", f"  {fifo}\n", "")
    for written in (traverse, default):
        run = simulate(capsys, tmp_path, written)
        assert run.code == 0, run.stderr
        assert _started(run, "small-") == 10.0
        assert _started(run, "train-") == 100.0


def test_unknown_dequeue_strategy_is_refused_naming_the_queue(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((YAML / "queue-fifo.yaml").read_text().replace("fifo\n", "lifo\n", 1))
    run = simulate(capsys, tmp_path, bad)
    assert run.code == 2
    assert run.stderr.strip().splitlines() == [
        f"asyncsched: error: {bad}: Queue strict: spec.dequeueStrategy 'lifo' must be one of "
        "fifo, traverse"
    ]


@pytest.mark.parametrize("config", [None, "capacity-config.yaml"])
def test_a_capability_of_zero_gpus_admits_no_gpu_pod_and_zero_cpu_bounds_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str | None
) -> None:
    run = simulate(capsys, tmp_path, "capability-zero.yaml", config=config)

    assert run.code == 4, run.stdout  # stuck: the GPU pod can never start in that queue
    assert [e["name"] for e in run.of("bound")] == ["preprocess"]
    assert "Pod default/train (1 pod)" in run.stdout.split("waiting when the run ended")[1]
