"""Preempt and reclaim as a user sees them: who is evicted, for whom, and what then runs.

Every scenario runs with ``preempt-config.yaml``: Volcano's usual tiers with
``actions: "enqueue, allocate, preempt, reclaim, backfill"``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from asyncsched.framework.cycle import PIPELINED_MESSAGE
from tests.scenarios.harness import Run, simulate

CONFIG = "preempt-config.yaml"


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> Run:
    run = simulate(capsys, tmp_path, name, config=CONFIG)
    assert run.code == 0, run.stderr
    evicted = Counter(e["name"] for e in run.of("evicted"))
    assert all(n == 1 for n in evicted.values()), f"a pod evicted twice: {evicted}"
    return run


def test_a_high_priority_gang_preempts_low_priority_pods_of_its_queue(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "preempt-priority.yaml")

    evicted = run.of("evicted")
    assert len(evicted) == 2 and {e["job"] for e in evicted} == {"batch"}
    assert all(e["time"] == 10.0 and e["reason"] == "preempt" for e in evicted)
    assert {e["preemptor"].split("/")[1].split("-")[0] for e in evicted} == {"urgent"}
    urgent = [e for e in run.of("started") if e["name"].startswith("urgent-")]
    assert [e["time"] for e in urgent] == [10.0, 10.0], "the urgent gang runs at once"
    # while its victims leave, each urgent pod is told it waits for them
    waiting = {e["name"]: e["reason"] for e in run.of("unschedulable") if e["time"] == 10.0}
    assert waiting == dict.fromkeys(["urgent-0", "urgent-1"], PIPELINED_MESSAGE), waiting
    kept = [e for e in run.of("completed") if e["name"].startswith("batch-")]
    assert len(kept) == 2 and all(e["time"] == 1000.0 for e in kept), "batch keeps two pods"


def test_a_lent_share_is_taken_back_when_its_owner_submits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "reclaim-lent-share.yaml")

    evicted = run.of("evicted")
    assert len(evicted) == 4, "exactly prod's share (4 cpu) is taken back"
    assert {e["namespace"] for e in evicted} == {"research"}
    assert all(e["reason"] == "reclaim" and e["time"] == 10.0 for e in evicted)
    assert all(e["preemptor"].startswith("prod/serve-") for e in evicted), evicted
    serve = [e["time"] for e in run.of("started") if e["name"].startswith("serve-")]
    assert serve == [10.0] * 4
    # research keeps its minMember (4) running to the end: its gang was never broken.
    finished = [e for e in run.of("completed") if e["name"].startswith("train-")]
    assert len(finished) == 4 and all(e["time"] == 1000.0 for e in finished)


def test_a_gang_is_evicted_whole_rather_than_two_gangs_broken(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "preempt-whole-gang.yaml")

    evicted = run.of("evicted")
    assert len(evicted) == 2
    (victim,) = {e["job"] for e in evicted}
    survivor = "left" if victim == "right" else "right"
    done = [e for e in run.of("completed") if e["job"] == survivor]
    assert len(done) == 2 and all(e["time"] == 1000.0 for e in done), "the other gang is whole"
    assert [e["time"] for e in run.of("started") if e["job"] == "urgent"] == [10.0, 10.0]


def test_reclaim_never_takes_a_queue_below_its_guarantee(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "reclaim-guarantee.yaml")

    evicted = run.of("evicted")
    assert [e["namespace"] for e in evicted] == ["reserved"], "one pod: 3 cpu stay guaranteed"
    first = [e for e in run.of("started") if e["namespace"] == "burst"]
    assert first[0]["time"] == 10.0 and first[1]["time"] >= 1000.0, "the second waits"


def test_two_queues_wanting_more_than_the_cluster_settle_without_ping_pong(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "reclaim-no-ping-pong.yaml")

    evicted = run.of("evicted")
    # late's share (6 of 12 cpu) is taken back once, at its arrival, and never again.
    assert len(evicted) == 6 and {e["namespace"] for e in evicted} == {"early"}
    assert {e["time"] for e in evicted} == {5.0}
    held = Counter(e["namespace"] for e in run.of("started") if e["time"] == 5.0)
    assert held["late"] == 6
    assert "all work done" in run.stdout


def test_a_volcano_job_restarts_when_preempt_evicts_its_pod(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "preempt-job-restarts.yaml")

    evicted = sorted(e["name"] for e in run.of("evicted"))
    assert evicted == ["batch-worker-2", "batch-worker-3"], "only what batch runs beyond 2"
    restarted = [e for e in run.of("deleted") if e.get("reason") == "RestartJob"]
    assert sorted(e["name"] for e in restarted) == ["batch-worker-0", "batch-worker-1"]
    assert all(e["time"] == 10.0 for e in restarted), "the PodEvicted policy restarts at once"
    batch = run.job("default/batch")
    assert (batch["phase"], batch["retries"], batch["finished"]) == ("Completed", 1, 140.0)
    again = [(e["time"], e["name"]) for e in run.of("bound") if e["name"].startswith("batch-")]
    assert again[4:] == [
        (10.0, "batch-worker-0"),
        (10.0, "batch-worker-1"),
        (40.0, "batch-worker-2"),
        (40.0, "batch-worker-3"),
    ], "two workers on what urgent left, two more once urgent is done"


def test_queue_shares_hold_whatever_tier_decides_the_victims(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "reclaim-share-any-tier.yaml")

    # steady holds no more than it deserves: its pod is not taken for late, although gang
    # and conformance, deciding the victims in tier 1, would let it go (Volcano's #5896).
    assert run.of("evicted") == []
    assert [e["time"] for e in run.of("bound") if e["name"] == "late-0"] == [500.0]


def test_a_job_with_a_network_topology_does_not_preempt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = _run(capsys, tmp_path, "preempt-topology-job.yaml")

    assert run.of("evicted") == []
    urgent = [e["time"] for e in run.of("started") if e["name"].startswith("urgent-")]
    assert urgent == [1000.0, 1000.0]
