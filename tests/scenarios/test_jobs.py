"""Volcano Jobs run end to end: the Job controller, its plugins and policies, in the loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import Run, simulate, simulation

NODES = "nodes-cpu.yaml"


def job_phases(run: Run, name: str) -> list[str]:
    return [e["phase"] for e in run.of("phase") if e["kind"] == "Job" and e["name"] == name]


def env_of(pod: dict[str, object]) -> dict[str, str]:
    containers = pod["spec"]["containers"]  # type: ignore[index]
    return {e["name"]: e.get("value", "") for e in containers[0].get("env", [])}  # type: ignore[index]


def test_seed_training_job_runs_and_completes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "job-seed-training.yaml")

    assert run.code == 0, run.stderr
    assert job_phases(run, "training-job") == ["Pending", "Running", "Completing", "Completed"]
    assert run.placements() == {"training-job-worker-0": "train-0"}
    assert "volcano jobs: 1 completed" in run.stdout
    job = run.job("default/training-job")
    assert (job["phase"], job["finished"], job["nodes"]) == ("Completed", 120.0, ["train-0"])


def test_tensorflow_job_gets_task_indexes_and_hosts() -> None:
    sim = simulation(NODES, "job-tensorflow.yaml", until=10)

    pods = sim.objects("Pod")
    names = sorted(p["metadata"]["name"] for p in pods.values())
    assert names == [
        *(f"tf-dist-ps-{i}" for i in range(2)),
        *(f"tf-dist-worker-{i}" for i in range(4)),
    ]
    for pod in pods.values():
        name = pod["metadata"]["name"]
        env = env_of(pod)
        assert env["VC_TASK_INDEX"] == env["VK_TASK_INDEX"] == name.rsplit("-", 1)[1]
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "tf-dist"
        assert pod["spec"]["nodeName"]
    hosts = sim.objects("ConfigMap")["default/tf-dist-svc"]["data"]
    assert hosts["ps.host"].split("\n") == ["tf-dist-ps-0.tf-dist", "tf-dist-ps-1.tf-dist"]
    assert hosts["worker.host"].split("\n") == [f"tf-dist-worker-{i}.tf-dist" for i in range(4)]
    assert hosts["VC_WORKER_NUM"] == "4"
    assert "default/tf-dist" in sim.objects("Service")
    assert sim.objects("Job")["default/tf-dist"]["status"]["state"]["phase"] == "Running"


def test_tensorflow_job_completes_and_cleans_up(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, NODES, "job-tensorflow.yaml")

    assert job_phases(run, "tf-dist")[-1] == "Completed"
    deleted = {(e["kind"], e["name"]) for e in run.of("deleted")}
    expected = {("Pod", "tf-dist-ps-0"), ("Pod", "tf-dist-ps-1"), ("ConfigMap", "tf-dist-svc")}
    assert expected <= deleted


def test_pytorch_job_ranks_and_master_address() -> None:
    sim = simulation(NODES, "job-pytorch.yaml", until=10)

    envs = {p["metadata"]["name"]: env_of(p) for p in sim.objects("Pod").values()}
    assert sorted(envs) == ["ddp-master-0", "ddp-worker-0", "ddp-worker-1", "ddp-worker-2"]
    assert {n: e["RANK"] for n, e in envs.items()} == {
        "ddp-master-0": "0",
        "ddp-worker-0": "1",
        "ddp-worker-1": "2",
        "ddp-worker-2": "3",
    }
    for env in envs.values():
        assert env["WORLD_SIZE"] == "4"
        assert env["MASTER_ADDR"] == "ddp-master-0.ddp"
        assert env["MASTER_PORT"] == "23456"


def test_pod_failed_restarts_the_job_until_max_retry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, NODES, "job-restart.yaml")

    assert run.code == 0, run.stderr
    assert job_phases(run, "flaky") == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Failed",
    ]
    last = [e for e in run.of("phase") if e["kind"] == "Job"][-1]
    assert last["retryCount"] == 2 and last["reason"] == "RestartJob" and last["time"] == 60
    failures = [(e["time"], e["name"]) for e in run.of("failed")]
    assert failures == [
        (30, "flaky-worker-0"),
        (30, "flaky-worker-1"),
        (60, "flaky-worker-0"),
        (60, "flaky-worker-1"),
    ]
    assert all("code 137" in e["reason"] for e in run.of("failed"))
    flaky = run.job("default/flaky")
    assert (flaky["phase"], flaky["finished"], flaky["retries"]) == ("Failed", 60.0, 2)
    assert "volcano jobs: 0 completed, 1 failed" in run.stdout


def test_task_completed_completes_the_job_while_others_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, NODES, "job-complete-early.yaml")

    assert run.code == 0 and "all work done at t=50s" in run.stdout
    assert job_phases(run, "search")[-2:] == ["Completing", "Completed"]
    deleted = sorted(e["name"] for e in run.of("deleted") if e["kind"] == "Pod")
    assert deleted == [f"search-worker-{i}" for i in range(3)]
    assert [e["name"] for e in run.of("completed")] == ["search-evaluator-0"]


def test_abort_then_resume_commands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = simulate(capsys, tmp_path, NODES, "job-commands.yaml")

    phases = [(e["time"], e["phase"]) for e in run.of("phase") if e["kind"] == "Job"]
    assert phases == [
        (0, "Pending"),
        (0, "Running"),
        (100, "Aborting"),
        (100, "Aborted"),
        (200, "Restarting"),
        (200, "Pending"),
        (200, "Running"),
        (500, "Completed"),
    ]
    aborted = sorted(e["name"] for e in run.of("deleted") if e["kind"] == "Pod")
    assert aborted == ["long-train-worker-0", "long-train-worker-1"]
    assert [e["time"] for e in run.of("bound")] == [0, 0, 200, 200]


def test_job_runs_are_deterministic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first = simulate(capsys, tmp_path, NODES, "job-tensorflow.yaml", "job-restart.yaml")
    second = simulate(capsys, tmp_path, NODES, "job-tensorflow.yaml", "job-restart.yaml")
    assert first.events == second.events and first.stdout == second.stdout


def test_a_job_restarted_into_a_closed_queue_waits_and_the_run_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "restart-in-closed-queue.yaml")

    assert run.code == 4, run.stdout  # stuck
    assert job_phases(run, "too-big") == ["Pending", "Restarting"]
    assert "result: stuck at t=10s: 1 gang or lone pod can never be scheduled" in run.stdout
    waiting = run.stdout.split("waiting when the run ended", 1)[1]
    assert "Job default/too-big (0 pods): queue research is not open" in waiting


def _job_steps(run: Run, name: str) -> list[tuple[float, str, int]]:
    return [
        (e["time"], e["phase"], e.get("retryCount", 0))
        for e in run.of("phase")
        if e["kind"] == "Job" and e["name"] == name
    ]


def test_restart_task_counts_one_retry_per_round_of_failures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The controller's own deletions are no evictions: one retry at each of t=30, 60 and
    90, and the Job fails at the third (maxRetry 3), the ps pod running until then."""
    run = simulate(capsys, tmp_path, NODES, "job-restart-task.yaml")

    assert run.code == 0, run.stderr
    restarts = [(t, n) for t, p, n in _job_steps(run, "sweep") if p in ("Restarting", "Failed")]
    assert restarts == [(30, 1), (60, 2), (90, 3)]
    assert _job_steps(run, "sweep")[-1][:2] == (90, "Failed")
    ps = [e["time"] for e in run.of("deleted") if e["kind"] == "Pod" and e["name"] == "sweep-ps-0"]
    assert ps == [90]


def test_a_podgroup_turning_unknown_fires_the_jobs_unknown_policy(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "job-unknown-restart.yaml", extra=["--until", "100"])

    group = [e["phase"] for e in run.of("phase") if e["kind"] == "PodGroup" and "gang" in e["name"]]
    assert "Unknown" in group
    assert (30, "Restarting", 2) in _job_steps(run, "gang")
    last = [e for e in run.of("phase") if e["kind"] == "Job"][-1]
    assert last["reason"] == "RestartJob"


def test_task_failed_fires_once_restarts_reach_the_tasks_max_retry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, NODES, "job-task-failed.yaml")

    assert run.code == 0, run.stderr
    assert [e["time"] for e in run.of("restarted")] == [30]
    assert [(t, p) for t, p, _ in _job_steps(run, "crashloop")][-2:] == [
        (30, "Terminating"),
        (30, "Terminated"),
    ]


def test_tasks_no_plugin_tells_apart_go_by_the_number_ending_their_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "job-task-order.yaml")

    assert run.code == 0, run.stderr
    bound = [e["name"].removeprefix("train-worker-") for e in run.of("bound")]
    assert bound == [str(i) for i in range(12)]
