"""Where pods land: colocation pools, bin packing, BestEffort backfill."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, simulate


def test_training_fills_training_nodes_then_hybrid_never_inference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "colocation.yaml")

    assert run.code == 0, run.stderr
    placed = run.placements()
    training = {p: n for p, n in placed.items() if p.startswith("training-")}
    assert len(training) == 10
    per_node = Counter(training.values())
    assert per_node["train-0"] == 4 and per_node["train-1"] == 4, per_node
    assert per_node["hybrid-0"] == 2, per_node
    assert not any(n.startswith("infer-") for n in training.values())
    inference = {p: n for p, n in placed.items() if p.startswith("inference-")}
    assert set(inference.values()) <= {"infer-0", "infer-1"}


def test_binpack_uses_the_fewest_nodes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    packed = simulate(capsys, tmp_path, "binpack.yaml", config="binpack-config.yaml")
    spread = simulate(capsys, tmp_path, "binpack.yaml")

    assert len(packed.placements()) == 8 and len(spread.placements()) == 8
    assert len(set(packed.placements().values())) == 2
    assert len(set(spread.placements().values())) == 4


def test_best_effort_pods_are_placed_by_backfill(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = tmp_path / "best-effort.yaml"
    pods.write_text(
        (YAML / "binpack.yaml").read_text()
        + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: sidecar\n"
        "spec:\n  schedulerName: volcano\n  containers:\n  - name: c\n    image: busybox\n"
    )
    no_backfill = tmp_path / "no-backfill.yaml"
    no_backfill.write_text(
        (YAML / "binpack-config.yaml")
        .read_text()
        .replace('actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate"')
    )

    with_backfill = simulate(capsys, tmp_path, pods)
    without = simulate(capsys, tmp_path, pods, config=no_backfill)

    assert "sidecar" in with_backfill.placements()
    assert "sidecar" not in without.placements()
    assert len(without.placements()) == 8


def test_limits_alone_are_requests(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = simulate(capsys, tmp_path, "found-limits-only.yaml")

    assert run.code == 4, run.stderr  # stuck: two of the three never fit
    assert len(run.placements()) == 1
    waiting = {e["name"]: e["reason"] for e in run.of("unschedulable")}
    assert len(waiting) == 2
    assert all("nvidia.com/gpu: 1" in reason for reason in waiting.values()), waiting
