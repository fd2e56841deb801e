"""Inputs the property tests (tests/scenarios/properties) found breaking an invariant, kept
as scenarios that assert the correct behaviour.

A bug still open is marked xfail(strict=True): it fails today, and the marker turns its
pass into an error the moment the fix lands, so the marker (and the matching switch in
tests/scenarios/properties/steering.py) goes with the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import simulate, simulation


def test_every_live_object_has_its_own_uid() -> None:
    sim = simulation("found-same-uids.yaml", until=1)

    uids: dict[str, str] = {}
    for kind in ("Node", "Queue", "Job", "PodGroup", "Pod", "ReplicaSet"):
        for key, obj in sim.objects(kind).items():
            uid = obj["metadata"]["uid"]
            assert uid not in uids, f"{kind} {key} has the uid of {uids[uid]}"
            uids[uid] = f"{kind} {key}"


def test_two_jobs_submitted_together_both_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-two-jobs.yaml", extra=["--until", "1"])

    assert set(run.placements()) == {"first-worker-0", "second-worker-0"}
    assert "did not settle" not in run.stderr


def test_lone_pods_are_gangs_of_their_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-lone-pods.yaml")

    assert run.code == 0, run.stdout
    assert sorted(e["name"] for e in run.of("completed")) == ["first", "second"]
    assert len({e["job"] for e in run.of("bound")}) == 2


def test_a_pod_created_again_is_reported_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-reason-after-restart.yaml")

    reported = [e["time"] for e in run.of("unschedulable") if e["name"] == "misplaced-worker-0"]
    assert reported == [0.0, 5.0], reported


def test_a_gang_with_a_best_effort_member_never_runs_partly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-best-effort-gang.yaml")

    assert run.placements() == {}
    assert run.code == 4, run.stdout  # stuck: the node takes one pod, the gang needs two
    (stuck,) = run.summary["stuck"]
    assert stuck["name"] == "default/pair" and "Too many pods" in stuck["reason"]


def test_a_job_never_admitted_is_not_all_work_done(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-job-never-admitted.yaml")

    assert "all work done" not in run.stdout
    assert "result: stuck" in run.stdout, run.stdout


def test_reclaim_before_allocate_leaves_a_pod_that_fits_to_allocate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys, tmp_path, "found-reclaim-first.yaml", config="found-reclaim-first-config.yaml"
    )

    assert run.code == 0, run.stdout
    assert run.placements() == {"lone": "node-0"}
    assert [e["time"] for e in run.of("completed")] == [5.0]


def test_backfill_never_binds_a_best_effort_gang_below_its_min_member(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-best-effort-gang-backfill.yaml")

    assert run.placements() == {}
    assert run.code == 4, run.stdout  # stuck: the one node it may use takes one pod
    (stuck,) = run.summary["stuck"]
    assert stuck["name"] == "default/trio" and "Too many pods" in stuck["reason"]


def test_a_gang_is_never_evicted_whole_for_one_of_its_own_members(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-preempt-own-gang.yaml", config="preempt-config.yaml")

    assert run.of("evicted") == []
    assert run.code == 0, run.stdout
    assert run.placements()["pair-late"] == "node-0"
    assert [e["time"] for e in run.of("started") if e["name"] == "pair-late"] == [100.0]


def test_reclaim_without_queue_shares_never_evicts_in_a_loop(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys,
        tmp_path,
        "found-reclaim-loop.yaml",
        config="found-reclaim-loop-config.yaml",
        extra=["--until", "100"],
    )

    assert run.of("evicted") == []
    assert run.code == 4, run.stdout  # stuck: train waits for room nobody owes it
    (stuck,) = run.summary["stuck"]
    assert stuck["name"] == "default/train"


def test_preempt_never_takes_room_the_victims_job_would_take_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys,
        tmp_path,
        "found-preempt-loop.yaml",
        config="found-preempt-loop-config.yaml",
        extra=["--until", "100"],
    )

    assert run.of("evicted") == []
    assert run.code == 4, run.stdout  # stuck: late waits for the one pod slot
    assert "default/late" in [s["name"] for s in run.summary["stuck"]]


def test_a_gang_that_can_never_be_whole_evicts_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys,
        tmp_path,
        "found-preempt-gang-never-whole.yaml",
        config="found-preempt-loop-config.yaml",
        extra=["--until", "100"],
    )

    assert run.of("evicted") == []
    assert run.code == 4, run.stdout  # stuck: pair's BestEffort member fits no node
    assert [s["name"] for s in run.summary["stuck"]] == ["default/pair"]
    assert list(run.placements().values()) == ["node-0"]  # web's one pod, bound once


def test_each_preemptor_costs_one_eviction_when_the_victims_were_settled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys, tmp_path, "found-settled-jobs-evicted.yaml", config="preempt-config.yaml"
    )

    assert run.code == 0, run.stderr
    preempted = [e["name"] for e in run.of("evicted") if e["reason"] == "preempt"]
    assert len(preempted) == 2, preempted
    assert len([e for e in run.of("evicted") if e["reason"] == "reclaim"]) == 4


def test_a_pod_of_a_class_that_never_preempts_waits_instead(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys, tmp_path, "found-class-never-preempts.yaml", config="preempt-config.yaml"
    )

    assert run.code == 0, run.stderr
    assert run.of("evicted") == []
    assert [(e["time"], e["name"]) for e in run.of("bound")][-1] == (30.0, "report-0")


def test_an_undone_placement_leaves_no_trace_in_gpufrags_books(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Under the suite's snapshot check: a session on the incremental snapshot decided
    otherwise than on a fresh one, because gpufrag kept an undone placement's cpu."""
    run = simulate(
        capsys,
        tmp_path,
        "found-gpufrag-undone-placement.yaml",
        config="found-gpufrag-undone-placement-config.yaml",
    )

    assert run.code == 0, run.stdout
    at_five = sorted((e["name"], e["node"]) for e in run.of("bound") if e["time"] == 5.0)
    # what a session on a fresh snapshot places (pair, tried and undone, waits until t=15)
    assert at_five == [
        ("one-0", "node-1"),
        ("spread-0", "node-0"),
        ("spread-1", "node-0"),
        ("spread-2", "node-1"),
    ]
