"""Inputs the property tests (tests/scenarios/properties) found breaking an invariant, kept
as scenarios that assert the correct behaviour.

Those marked xfail(strict=True) are bugs still open: each fails today, and the marker turns
its pass into an error the moment the fix lands, so the marker (and the matching switch in
tests/scenarios/properties/steering.py) is removed with the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import simulate, simulation

SAME_UID_BUG = (
    "known simulator bug (backends/sim/cluster.py _stamp): objects created at one instant "
    "share a uid"
)


@pytest.mark.xfail(strict=True, reason=SAME_UID_BUG)
def test_every_live_object_has_its_own_uid() -> None:
    sim = simulation("found-same-uids.yaml", until=1)

    uids: dict[str, str] = {}
    for kind in ("Node", "Queue", "Job", "PodGroup", "Pod", "ReplicaSet"):
        for key, obj in sim.objects(kind).items():
            uid = obj["metadata"]["uid"]
            assert uid not in uids, f"{kind} {key} has the uid of {uids[uid]}"
            uids[uid] = f"{kind} {key}"


@pytest.mark.xfail(strict=True, reason=SAME_UID_BUG + ": two Jobs at once never settle")
def test_two_jobs_submitted_together_both_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-two-jobs.yaml", extra=["--until", "1"])

    assert set(run.placements()) == {"first-worker-0", "second-worker-0"}
    assert "did not settle" not in run.stderr


@pytest.mark.xfail(strict=True, reason=SAME_UID_BUG + ": lone pods of a namespace share a gang")
def test_lone_pods_are_gangs_of_their_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-lone-pods.yaml")

    assert run.code == 0, run.stdout
    assert sorted(e["name"] for e in run.of("completed")) == ["first", "second"]
    assert len({e["job"] for e in run.of("bound")}) == 2


@pytest.mark.xfail(
    strict=True,
    reason="simulator bug (backends/sim/simulation.py _apply): a pod's last reason is "
    "remembered by name, so a pod created again under that name is never reported",
)
def test_a_pod_created_again_is_reported_again(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-reason-after-restart.yaml")

    reported = [e["time"] for e in run.of("unschedulable") if e["name"] == "misplaced-worker-0"]
    assert reported == [0.0, 5.0], reported


@pytest.mark.xfail(
    strict=True,
    reason="gang counts pending BestEffort members as ready (as Volcano's JobReady does) "
    "but only backfill places them: the gang can run below minMember; the lead's call",
)
def test_a_gang_with_a_best_effort_member_never_runs_partly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-best-effort-gang.yaml")

    assert run.placements() == {}
    assert run.code == 0, run.stdout


@pytest.mark.xfail(
    strict=True,
    reason="simulator bug (backends/sim/simulation.py _finish): a Job never admitted has no "
    "pod, so the run counts nothing pending and reports all work done",
)
def test_a_job_never_admitted_is_not_all_work_done(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-job-never-admitted.yaml")

    assert "all work done" not in run.stdout
    assert "result: stuck" in run.stdout, run.stdout
