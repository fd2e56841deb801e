"""Deployments scheduled by asyncsched, and Jobs admission refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import refused, simulate, simulation

GROUP = "scheduling.k8s.io/group-name"


def test_deployment_replicas_scheduled_with_podgroups_and_scaled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "deployment-inference.yaml")
    assert run.code == 0, run.stderr

    created = [e for e in run.of("created") if e["kind"] == "Pod"]
    bound = run.placements()
    assert set(bound) == {e["name"] for e in created}
    assert set(bound.values()) == {"infer-0"}, "the seed's affinity prefers inference nodes"
    by_time = {t: [e["name"] for e in created if e["time"] == t] for t in (0, 60, 180)}
    assert [len(v) for v in by_time.values()] == [2, 3, 1]
    assert all(n.startswith("inference-service-") and len(n.rsplit("-", 1)[1]) == 5 for n in bound)
    scaled_down = [e for e in run.of("deleted") if e["kind"] == "Pod" and e["time"] == 120]
    assert len(scaled_down) == 4 and {e["reason"] for e in scaled_down} == {"ScaleDown"}
    groups = [e for e in run.of("created") if e["kind"] == "PodGroup"]
    assert [e["time"] for e in groups] == [0, 180]
    gone = [e["name"] for e in run.of("deleted") if e["kind"] == "PodGroup"]
    assert gone == [groups[0]["name"]], "the old ReplicaSet's PodGroup goes with it"


def test_deployment_objects_after_scale() -> None:
    sim = simulation("deployment-inference.yaml", until=130)
    pods = sim.objects("Pod")
    assert len(pods) == 1
    (pod,) = pods.values()
    group = pod["metadata"]["annotations"][GROUP]
    assert f"default/{group}" in sim.objects("PodGroup")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert "default/inference-service" in sim.objects("Service")
    assert sim.objects("Deployment")["default/inference-service"]["spec"]["replicas"] == 1


def test_deployment_pod_names_are_the_same_every_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = simulate(capsys, tmp_path, "deployment-inference.yaml")
    second = simulate(capsys, tmp_path, "deployment-inference.yaml")
    assert first.events == second.events


JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  minAvailable: {min_available}
  queue: {queue}
  policies: {policies}
  tasks:
{tasks}
"""


def task(name: str, replicas: int = 1, depends: str = "") -> str:
    extra = f"    dependsOn: {{name: [{depends}]}}\n" if depends else ""
    return (
        f"  - name: {name}\n    replicas: {replicas}\n{extra}"
        "    template:\n      spec:\n        containers: [{name: main, image: busybox}]\n"
    )


def job(
    tasks: str,
    *,
    name: str = "bad",
    min_available: int = 0,
    queue: str = "default",
    policies: str = "[]",
) -> str:
    return JOB.format(
        name=name, min_available=min_available, queue=queue, policies=policies, tasks=tasks
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (job(task("a", 2), min_available=3), "spec.minAvailable 3 is larger than the sum"),
        (job(task("a") + task("a")), "task name 'a' is used by more than one task"),
        (job("").replace("  tasks:\n", "  tasks: []\n"), "the job has no tasks"),
        (
            job(task("Worker_1")),
            "('Worker_1'): the task name must be at most 63 lower case letters",
        ),
        (job(task("a"), queue="nowhere"), "queue 'nowhere' does not exist"),
        (
            job(task("a"), policies="[{event: PodCrashed, action: RestartJob}]"),
            "unknown event 'PodCrashed'",
        ),
        (
            job(task("a"), policies="[{event: PodFailed, action: Reboot}]"),
            "unknown action 'Reboot'",
        ),
        (
            job(task("a", depends="b") + task("b", depends="a")),
            "dependsOn forms a cycle, so none of these tasks could ever start: a -> b -> a",
        ),
    ],
)
def test_invalid_job_stops_the_run_before_anything_happens(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    bad, err = refused(capsys, tmp_path, "nodes-cpu.yaml", content)
    assert f"{bad}: Job default/bad: refused by admission: " in err and expected in err, err


CLOSED = """apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: batch}
spec: {weight: 1}
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: close-batch}
action: CloseQueue
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: batch}
---
"""


def test_job_submitted_to_a_closed_queue_is_refused_and_leaves_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    late = job(task("a"), name="late", queue="batch").replace(
        "  name: late\n", '  name: late\n  annotations: {simulation.asyncsched.io/submit-at: "5"}\n'
    )
    path = tmp_path / "closed.yaml"
    path.write_text(CLOSED + late)

    run = simulate(capsys, tmp_path, "nodes-cpu.yaml", path)

    assert run.code == 0, run.stderr
    refused = [e for e in run.of("failed") if e["kind"] == "Job"]
    assert len(refused) == 1 and refused[0]["time"] == 5
    assert "queue 'batch' is Closed" in refused[0]["reason"]
    assert [e for e in run.events if e["kind"] in ("Pod", "PodGroup")] == []
    assert not [e for e in run.of("submitted") if e["kind"] == "Job"]
    late = run.job("default/late")
    assert late["phase"] == "Refused" and "queue 'batch' is Closed" in late["reason"]
    assert "1 refused" in run.stdout
    queue_phases = [e["phase"] for e in run.of("phase") if e["kind"] == "Queue"]
    assert queue_phases == ["Closed"]
