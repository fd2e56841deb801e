"""Rules about other pods: pod (anti-)affinity, topology spread and host ports, end to end.

Each scenario also runs with those rules switched off (pod-rules-off-config.yaml), which
shows that the placement the test checks is the rule's doing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.scenarios.harness import simulate

OFF = "pod-rules-off-config.yaml"


def test_required_anti_affinity_that_breaks_a_gang_rolls_it_back_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "podaffinity-gang-anti.yaml")

    placed = run.placements()
    assert not [p for p in placed if p.startswith("ring-")], placed
    assert "solo-worker-0" in placed
    reasons = {e["name"]: e["reason"] for e in run.of("unschedulable")}
    # ring-worker-0 fitted (Schedulable): it says so, and why its gang waits
    assert reasons["ring-worker-0"] == (
        "fits a node; waits for its gang "
        "(2/3 tasks in gang fit: node(s) didn't match pod anti-affinity rules on 2 node(s))"
    )
    assert reasons["ring-worker-2"] == (
        "0/2 nodes are unavailable: 2 node(s) didn't match pod anti-affinity rules."
    )
    assert run.job("default/ring")["phase"] == "Pending"

    off = simulate(capsys, tmp_path, "podaffinity-gang-anti.yaml", config=OFF)
    ring = Counter(n for p, n in off.placements().items() if p.startswith("ring-"))
    assert sum(ring.values()) == 3 and max(ring.values()) > 1, ring


def test_preferred_pod_affinity_places_the_pod_beside_the_pod_it_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "podaffinity-preferred.yaml")
    off = simulate(capsys, tmp_path, "podaffinity-preferred.yaml", config=OFF)

    assert run.placements() == {"web": "node-2"}
    assert off.placements() == {"web": "node-0"}


def test_topology_spread_sends_the_pod_to_the_empty_zone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "spread-empty-zone.yaml")
    off = simulate(capsys, tmp_path, "spread-empty-zone.yaml", config=OFF)

    assert run.placements() == {"web-1": "zone-b-0"}
    assert off.placements()["web-1"] != "zone-b-0"


def test_two_pods_never_share_a_host_port_on_one_node(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "hostport-clash.yaml")

    assert run.code == 4, run.stderr  # stuck: the third replica can never fit
    assert sorted(run.placements().values()) == ["edge-0", "edge-1"]
    [waiting] = run.of("unschedulable")
    assert waiting["reason"] == (
        "0/2 nodes are unavailable: 2 node(s) didn't have free ports for the requested pod ports."
    )

    off = simulate(capsys, tmp_path, "hostport-clash.yaml", config=OFF)
    assert len(off.placements()) == 3


def test_host_ports_on_distinct_addresses_share_a_node(capsys, tmp_path: Path) -> None:
    run = simulate(capsys, tmp_path, "hostport-addresses.yaml")

    assert run.code == 4, run.stderr  # stuck: the pod on every address can never fit
    assert run.placements() == {"proxy-a": "edge-0", "proxy-b": "edge-0"}
    [waiting] = run.of("unschedulable")
    assert waiting["name"] == "proxy-any"
