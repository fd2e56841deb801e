"""The descheduler in the simulator: seed 000's policy rebalances a cluster after a node's
maintenance; defragmentation admits a gang; priorityThreshold, evictableNamespaces and
PodDisruptionBudgets keep pods where they are."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, Run, simulate

SEED_POLICY = str(YAML / "descheduler-seed000-policy.yaml")
MAINTENANCE = "deschedule-after-maintenance.yaml"


def run(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    *files: str | Path,
    policy: str = SEED_POLICY,
    interval: str = "60s",
) -> Run:
    flags = ["--descheduler-policy", policy, "--descheduling-interval", interval]
    return simulate(capsys, tmp_path, *files, extra=flags)


def pods_per_node(result: Run) -> Counter[str]:
    """Where the pods alive at the end run."""
    node: dict[str, str] = {}
    for event in result.events:
        if event["event"] == "bound":
            node[event["name"]] = event["node"]
        elif event["event"] in ("evicted", "deleted"):
            node.pop(event["name"], None)
    return Counter(node.values())


def descheduled(result: Run) -> list[dict[str, object]]:
    return [e for e in result.of("evicted") if e.get("by") == "descheduler"]


def test_cluster_unbalanced_by_maintenance_is_rebalanced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = run(capsys, tmp_path, MAINTENANCE)
    assert result.code == 0, result.stderr
    moved = descheduled(result)
    # 4 pods of 1.8 cores on each 8-core node: 90%. One off each is 67.5%, under 80%.
    assert len(moved) == 2
    assert {e["node"] for e in moved} == {"node-a", "node-b"}
    assert all(e["time"] >= 300 and "LoadAware" in str(e["reason"]) for e in moved)
    assert pods_per_node(result) == {"node-a": 3, "node-b": 3, "node-c": 2}
    assert "descheduler:" in result.stdout and "2 pods evicted" in result.stdout
    assert result.summary["descheduler"]["moved"][0]["plugin"] == "LoadAware"


def test_without_the_descheduler_the_cluster_stays_unbalanced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = simulate(capsys, tmp_path, MAINTENANCE)
    assert pods_per_node(result) == {"node-a": 4, "node-b": 4}


def test_pods_at_or_above_priority_threshold_stay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    important = tmp_path / "important.yaml"  # the same cluster, pods at priority 10000
    important.write_text((YAML / MAINTENANCE).read_text().replace("value: 1000", "value: 10000"))
    result = run(capsys, tmp_path, important)
    assert descheduled(result) == []
    assert pods_per_node(result) == {"node-a": 4, "node-b": 4}


def test_pods_outside_evictable_namespaces_stay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    in_default = tmp_path / "default.yaml"  # the seed's policy excludes namespace default
    in_default.write_text((YAML / MAINTENANCE).read_text().replace("namespace: work", ""))
    result = run(capsys, tmp_path, in_default)
    assert descheduled(result) == []
    assert pods_per_node(result) == {"node-a": 4, "node-b": 4}


def test_pdb_protected_pods_stay(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = run(capsys, tmp_path, MAINTENANCE, "deschedule-pdb.yaml")
    assert descheduled(result) == []
    assert result.of("refused") == []  # not even tried: the budget allows no disruption
    assert pods_per_node(result) == {"node-a": 4, "node-b": 4}


def test_gang_admitted_after_defragmentation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gang = "deschedule-defragment-gang.yaml"
    before = simulate(capsys, tmp_path, gang)
    assert before.code == 4  # stuck: room in total, on no node
    result = run(
        capsys, tmp_path, gang, policy=str(YAML / "descheduler-defrag-policy.yaml"), interval="30s"
    )
    assert result.code == 0, result.stdout
    moved = descheduled(result)
    assert len(moved) == 2 and len({e["node"] for e in moved}) == 2
    assert all("GangDefragmentation" in str(e["reason"]) for e in moved)
    assert result.job("work/train")["phase"] == "Running"
    assert result.job("work/train")["started"] >= 70  # waited past the 60s threshold
