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
