"""The simulator itself holds up: objects made at one instant stay apart, every run settles."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.scenarios.harness import simulate, simulation


def test_jobs_submitted_together_each_run_to_completion(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "jobs-together.yaml")

    assert run.code == 0 and "did not settle" not in run.stderr, run.stderr
    final = {e["name"]: e for e in run.of("phase") if e["kind"] == "Job"}
    assert {name: e["phase"] for name, e in final.items()} == dict.fromkeys(
        ("first", "second", "third"), "Completed"
    )
    assert not any("retryCount" in e for e in run.of("phase")), "nobody needed a retry"
    assert not [e for e in run.of("deleted") if e["kind"] == "Pod"], "no Job touched another's pods"
    bound = Counter(e["name"] for e in run.of("bound"))
    assert bound == dict.fromkeys(
        ("first-worker-0", "second-worker-0", "third-worker-0", "third-worker-1"), 1
    )
    groups = {e["name"] for e in run.of("created") if e["kind"] == "PodGroup"}
    assert len(groups) == 3 and all(g.startswith(("first-", "second-", "third-")) for g in groups)
    # The third Job's gang (2 cpu) waits until both one-cpu Jobs have finished.
    assert {e["time"] for e in run.of("bound") if e["name"].startswith("third-")} == {20.0}


def test_every_object_gets_its_own_uid() -> None:
    sim = simulation("jobs-together.yaml")
    uids = [
        obj["metadata"]["uid"]
        for kind in ("Pod", "PodGroup", "Job", "Node")
        for obj in sim.objects(kind).values()
    ]
    # The finished Jobs' PodGroups are gone (Volcano deletes them); pods, Jobs, the node stay.
    assert len(uids) == len(set(uids)) == 4 + 3 + 1


def test_lone_pods_are_each_a_gang_of_their_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "lone-pods.yaml")

    assert run.code == 0, run.stdout
    assert "3 gangs (PodGroups and lone pods)" in run.stdout
    assert "gangs: 3 completed" in run.stdout
    started = sorted(e["time"] for e in run.of("started"))
    assert started == [0.0, 0.0, 10.0], "two fit at once, each finishes alone"
    groups = {e["job"] for e in run.of("bound")}
    assert len(groups) == 3


def test_a_configuration_without_allocate_says_so_for_what_waits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Found by the edited-configuration property: it said the gang did not fit at once."""
    config = tmp_path / "enqueue-only.yaml"
    config.write_text("actions: enqueue\ntiers:\n- plugins:\n  - name: drf\n  - name: proportion\n")
    run = simulate(capsys, tmp_path, "gang-training.yaml", config=config)
    assert run.code == 4, run.stdout  # stuck
    waiting = run.stdout.split("waiting when the run ended")[1]
    assert (
        "PodGroup ml/training-a (6 pods): the scheduler's configuration has no allocate " in waiting
    )
    assert "does not fit at once" not in waiting


def test_a_later_document_of_a_node_is_an_updated_event(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """node-c is cordoned at first and its second document (t=300) uncordons it."""
    run = simulate(capsys, tmp_path, "deschedule-after-maintenance.yaml")
    nodes = [(e["time"], e["event"], e["name"]) for e in run.events if e["kind"] == "Node"]
    assert nodes.count((300.0, "updated", "node-c")) == 1, nodes


LATE_NODE = """
apiVersion: v1
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: b, annotations: {simulation.asyncsched.io/submit-at: "50"}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {simulation.asyncsched.io/duration: "100"}}
spec:
  schedulerName: volcano
  containers: [{name: c, resources: {requests: {cpu: "4", memory: 8Gi}}}]
"""

GROWN_NODE = """
---
apiVersion: v1
kind: Node
metadata: {name: a, annotations: {simulation.asyncsched.io/submit-at: "50"}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
"""


def test_utilization_counts_a_node_from_when_it_came_and_as_large_as_it_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """4 cpu held for 100 s. Node a has 4 cpu all along and node b 4 cpu from t=50: 400
    of 600 cpu-seconds. With node a's later document giving it 8 cpu from t=50 too: 400
    of 800."""
    late = tmp_path / "late.yaml"
    late.write_text(LATE_NODE)
    run = simulate(capsys, tmp_path, late)
    assert run.code == 0, run.stdout
    assert run.summary["utilization"]["cpu"] == pytest.approx(400 / 600)

    late.write_text(LATE_NODE + GROWN_NODE)
    run = simulate(capsys, tmp_path, late)
    assert run.code == 0, run.stdout
    assert run.summary["utilization"]["cpu"] == pytest.approx(400 / 800)
