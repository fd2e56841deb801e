"""Gang scheduling prevents the deadlock of partially placed distributed jobs."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from asyncsched.model.task import QUEUE_ALLOCATION_GATE
from tests.scenarios.harness import simulate, variant


def test_all_five_jobs_complete_and_no_job_is_ever_partly_bound(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "gang-training.yaml")

    assert run.code == 0, run.stderr
    assert "all work done" in run.stdout
    assert "5 completed" in run.stdout
    completed_jobs = {e["job"] for e in run.of("completed")}
    assert completed_jobs == {f"training-{j}" for j in "abcde"}

    holding: dict[str, int] = defaultdict(int)
    times = sorted({e["time"] for e in run.events})
    by_time = defaultdict(list)
    for e in run.events:
        by_time[e["time"]].append(e)
    for t in times:
        for e in by_time[t]:
            if e["event"] == "bound":
                holding[e["job"]] += 1
            elif e["event"] == "completed":
                holding[e["job"]] -= 1
        partial = {job: n for job, n in holding.items() if n not in (0, 6)}
        assert not partial, f"at t={t} jobs hold only part of their gang: {partial}"


def test_without_gang_the_same_input_deadlocks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "gang-training.yaml", config="config-without-gang.yaml")

    assert run.code == 3
    assert "deadlock" in run.stdout
    assert not run.of("completed")
    bound_jobs = {e["job"] for e in run.of("bound")}
    assert len(bound_jobs) > 1, "pods of several jobs should share the GPUs"


def test_waiting_gang_reports_why_it_cannot_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "gang-training.yaml", extra=["--until", "0"])

    reasons = {e["name"]: e["reason"] for e in run.of("unschedulable")}
    assert "training-b-worker-0" in reasons
    assert "nvidia.com/gpu" in reasons["training-b-worker-0"]
    phases = {e["name"]: e["phase"] for e in run.of("phase")}
    assert phases["training-a"] == "Running"
    assert phases.get("training-b", "Pending") != "Running"


def test_same_input_gives_the_same_events(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = simulate(capsys, tmp_path, "gang-training.yaml")
    second = simulate(capsys, tmp_path, "gang-training.yaml")
    assert first.events == second.events
    assert first.stdout == second.stdout


def test_pod_of_a_gang_that_needs_nobody_still_gets_a_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-min-member-zero.yaml")

    assert not run.placements()
    [event] = run.of("unschedulable")
    assert event["name"] == "elastic-0"
    assert "cpu: 2" in event["reason"], event


def test_every_pod_of_a_job_short_of_a_task_minimum_gets_a_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-task-minimum-reasons.yaml")

    reasons = {e["name"]: e["reason"] for e in run.of("unschedulable")}
    assert {"split-big-0", "split-big-1"} <= set(reasons), reasons
    assert "Insufficient cpu" in reasons["split-big-1"], reasons


def test_gated_pods_wait_for_their_gates_and_a_gang_that_needs_one_waits_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "gated-pods.yaml")

    assert run.code == 4, run.stderr  # stuck: the gates are never removed here
    assert sorted(e["name"] for e in run.of("bound")) == ["b-0", "b-1"]
    waiting = run.stdout.split("waiting when the run ended")[1]
    assert "PodGroup default/a (3 pods): 2/3 tasks in gang fit: 1 wait until their " in waiting
    gated = "it has scheduling gates (example.com/quota): it waits until they are removed"
    assert f"Pod default/lone (1 pod): {gated}" in waiting


@pytest.mark.parametrize("config", [None, "capacity-config.yaml"])
def test_an_admitted_job_holds_no_reserve_for_pods_behind_an_outside_gate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str | None
) -> None:
    run = simulate(capsys, tmp_path, "gated-job-reserve.yaml", config=config)

    assert run.code == 4, run.stderr  # stuck: the gated pods wait for good
    assert [(e["time"], e["name"]) for e in run.of("bound")] == [(60, "after-0")]
    phases = {e["name"]: e["phase"] for e in run.of("phase") if e["kind"] == "PodGroup"}
    assert phases["gated"] == "Inqueue"


def test_pods_behind_volcanos_own_gate_alone_still_count_in_the_reserve(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    own = variant(tmp_path, "gated-job-reserve.yaml", "example.com/quota", QUEUE_ALLOCATION_GATE)
    run = simulate(capsys, tmp_path, own)

    assert not run.of("bound")
    waiting = run.stdout.split("waiting when the run ended")[1]
    assert "PodGroup default/after (1 pod): waiting to be admitted to queue 'default'" in waiting


def test_a_podgroup_whose_pods_all_finished_is_completed_succeeded_or_failed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "podgroup-completed.yaml")

    assert run.code == 0, run.stderr
    phases: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for e in run.of("phase"):
        if e["kind"] == "PodGroup":
            phases[e["name"]].append((e["time"], e["phase"]))
    assert phases["ok"] == [(0, "Running"), (10, "Completed")]
    assert phases["mixed"] == [(0, "Running"), (5, "Unknown"), (10, "Completed")]
    assert "all work done at t=10s" in run.stdout


def test_a_gang_with_its_count_met_but_a_role_short_stays_running(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "gang-role-short.yaml", extra=["--until", "60"])

    assert [e["time"] for e in run.of("failed")] == [5]
    phases = [(e["time"], e["phase"]) for e in run.of("phase") if e["kind"] == "PodGroup"]
    assert phases == [(0, "Running")]


def test_the_task_priority_annotation_ranks_a_jobs_tasks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "task-priority.yaml", extra=["--until", "30"])

    assert [e["name"] for e in run.of("bound")] == ["p-b"]
