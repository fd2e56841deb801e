"""Network topology in the simulator: seed 000's network and Job, soft mode, limits, bad trees.

The figure a user cares about is how far apart a job's pods run: the lowest HyperNode
holding all of them (the report's "network" lines). Hard mode keeps a job within its
tier; a topology-blind placement of the same job crosses the top switch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, Run, simulate

NETWORK = ("topology-seed-nodes.yaml", "topology-seed-hypernodes.yaml")
SPINES = ({"te1", "te2", "te3", "te4"}, {"te5", "te6", "te7", "te8"})
RACKS = ({"te1", "te2"}, {"te3", "te4"}, {"te5", "te6"}, {"te7", "te8"})


def _job(name: str, replicas: int, min_available: int, topology: str) -> str:
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  schedulerName: volcano
  minAvailable: {min_available}
  {topology}
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata: {{annotations: {{simulation.asyncsched.io/duration: "30"}}}}
      spec:
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _nodes(run: Run, prefix: str) -> set[str]:
    return {node for pod, node in run.placements().items() if pod.startswith(prefix)}


def test_seed_hard_mode_job_runs_inside_one_spine_its_gang_inside_one_rack(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, *NETWORK, "topology-seed-job.yaml")

    assert run.code == 0, run.stderr
    assert run.stderr == ""
    nodes = _nodes(run, "hello-volcano-job-")
    assert len(run.placements()) == 10
    assert any(nodes <= spine for spine in SPINES), nodes
    gang = {e["node"] for e in run.of("bound")[:6]}
    assert any(gang == rack for rack in RACKS), gang  # the lowest tier that holds the gang
    assert "  default/hello-volcano-job  s0-s1 (tier 2)" in run.stdout


def test_the_same_job_placed_blind_to_the_network_crosses_the_top_switch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (YAML / "topology-seed-job.yaml").read_text()
    blind = "\n".join(
        line
        for line in text.splitlines()
        if not line.strip().startswith(("networkTopology", "mode:", "highestTierAllowed"))
    )
    run = simulate(capsys, tmp_path, *NETWORK, _write(tmp_path, "blind.yaml", blind))

    assert run.code == 0, run.stderr
    assert not any(_nodes(run, "hello-volcano-job-") <= spine for spine in SPINES)
    assert "  default/hello-volcano-job  s0 (tier 3)" in run.stdout


def test_a_job_no_hypernode_of_its_tier_can_hold_waits_and_says_which_tier(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    racked = _job("racked", 8, 8, "networkTopology: {mode: hard, highestTierAllowed: 1}")
    run = simulate(capsys, tmp_path, *NETWORK, _write(tmp_path, "racked.yaml", racked))

    assert run.code == 4, run.stdout  # stuck: a rack takes 6 of its pods, never 8
    assert run.placements() == {}
    line = next(s for s in run.stdout.splitlines() if s.startswith("  Job default/racked"))
    assert "0/8 tasks in gang fit (no HyperNode of tier 1 or lower has room" in line, line


def test_a_tier_named_by_tier_name_limits_the_job(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spined = _job("spined", 12, 12, "networkTopology: {mode: hard, highestTierName: spine}")
    run = simulate(capsys, tmp_path, "topology-soft.yaml", _write(tmp_path, "spined.yaml", spined))

    assert run.code == 0, run.stderr
    spines = {node[0] for node in _nodes(run, "spined-")}
    assert len(spines) == 1, _nodes(run, "spined-")


def test_soft_mode_uses_the_fewest_spines_where_a_blind_placement_uses_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    soft = simulate(capsys, tmp_path, "topology-soft.yaml")
    text = (
        (YAML / "topology-soft.yaml").read_text().replace("  networkTopology: {mode: soft}\n", "")
    )
    blind = simulate(capsys, tmp_path, _write(tmp_path, "blind.yaml", text))

    assert soft.code == blind.code == 0, soft.stderr + blind.stderr
    assert {n[0] for n in _nodes(soft, "wide-")} == {"b", "c"}, "the two emptiest spines"
    assert {n[0] for n in _nodes(blind, "wide-")} == {"a", "b", "c"}
    assert "across 2/3 of its top-level HyperNodes" in soft.stdout
    assert "across 3/3 of its top-level HyperNodes" in blind.stdout


HYPERNODE = """apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {{name: {name}}}
spec:
  tier: {tier}
  members: [{{type: HyperNode, selector: {{exactMatch: {{name: {member}}}}}}}]
"""


@pytest.mark.parametrize(
    ("hypernodes", "wanted"),
    [
        (
            [("loop-a", 2, "loop-b"), ("loop-b", 3, "loop-a")],
            "HyperNode loop-a: cyclic membership: loop-a -> loop-b -> loop-a",
        ),
        (
            [("spine-x", 2, "s0-s1-rack-1"), ("spine-y", 2, "s0-s1-rack-1")],
            "HyperNode spine-x: its member HyperNode s0-s1-rack-1 already belongs to s0-s1 "
            "(a HyperNode has at most one parent)",
        ),
    ],
)
def test_a_hypernode_tree_that_is_not_a_tree_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    hypernodes: list[tuple[str, int, str]],
    wanted: str,
) -> None:
    text = "---\n".join(HYPERNODE.format(name=n, tier=t, member=m) for n, t, m in hypernodes)
    bad = _write(tmp_path, "bad.yaml", text)
    run = simulate(capsys, tmp_path, *NETWORK, bad)

    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and wanted in lines[0], run.stderr
    assert run.events == []


def test_a_tier_name_no_hypernode_carries_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    job = _write(tmp_path, "job.yaml", _job("j", 2, 2, "networkTopology: {highestTierName: leaf}"))
    run = simulate(capsys, tmp_path, "topology-soft.yaml", job)

    assert run.code == 2
    assert run.stderr.strip().splitlines() == [
        f"asyncsched: error: {job}: Job default/j: networkTopology.highestTierName 'leaf' is "
        "the tierName of no HyperNode (known: rack, spine)"
    ]


DISCOVERED = ("topology-seed-nodes.yaml", "topology-discovery.yaml")


def test_racks_discovered_from_the_seed_labels_hold_a_rack_limited_job(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    racked = _job("racked", 6, 6, "networkTopology: {mode: hard, highestTierAllowed: 1}")
    run = simulate(capsys, tmp_path, *DISCOVERED, _write(tmp_path, "racked.yaml", racked))

    assert run.code == 0, run.stderr
    created = [e["name"] for e in run.of("created") if e["kind"] == "HyperNode"]
    assert len(created) == 4 and all(n.startswith("hypernode-rack-tier1-") for n in created)
    assert any(_nodes(run, "racked-") == rack for rack in RACKS), _nodes(run, "racked-")


def test_a_relabelled_node_moves_to_its_new_rack(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    nodes = (YAML / "topology-seed-nodes.yaml").read_text()
    moved = _write(
        tmp_path,
        "moved.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: te2\n"
        "  labels: {volcano.sh/rack: s0-s1-rack-2}\n"
        "  annotations: {simulation.asyncsched.io/submit-at: '10'}\n"
        'status:\n  allocatable: {cpu: 300m, memory: 4Gi, pods: "110"}\n',
    )
    # From t=10, rack-2 has te2, te3, te4 (9 pods) and rack-1 only te1 (3 pods).
    late = _job("late", 9, 9, "networkTopology: {mode: hard, highestTierAllowed: 1}")
    late = late.replace("metadata: {name: late}", "metadata:\n  name: late\n  annotations: "
                        "{simulation.asyncsched.io/submit-at: '20'}")  # fmt: skip
    run = simulate(
        capsys,
        tmp_path,
        _write(tmp_path, "nodes.yaml", nodes),
        YAML / "topology-discovery.yaml",
        moved,
        _write(tmp_path, "late.yaml", late),
    )

    assert run.code == 0, run.stderr
    # Nine pods fit no rack of two nodes: only the rewritten rack-2 holds them.
    assert _nodes(run, "late-") == {"te2", "te3", "te4"}


def test_a_discovery_configuration_that_cannot_be_read_is_a_warning_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = (
        (YAML / "topology-discovery.yaml")
        .read_text()
        .replace("          - nodeLabel: kubernetes.io/hostname\n", "          - hostname\n")
    )
    run = simulate(capsys, tmp_path, "topology-seed-nodes.yaml", _write(tmp_path, "d.yaml", bad))

    assert run.code == 0
    assert not [e for e in run.of("created") if e["kind"] == "HyperNode"]
    warning = next(line for line in run.stdout.splitlines() if line.startswith("warning:"))
    assert "ConfigMap volcano-system/volcano-controller-configmap[volcano-controller.conf]" in (
        warning
    )
    assert "must be a list of {nodeLabel: <label key>}: no HyperNode is discovered" in warning


def test_a_best_effort_pod_of_a_hard_topology_group_stays_inside_its_hypernodes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-best-effort-topology.yaml", extra=["--until", "30"])

    assert run.placements() == {}
    line = next(s for s in run.stdout.splitlines() if "default/pg0" in s and "(1 pod)" in s)
    assert "not in HyperNode rack-a" in line and "unschedulable" in line, line


def test_a_whole_gang_whose_tier_no_hypernode_has_still_says_why_its_pods_wait(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "found-topology-tier-zero.yaml", extra=["--until", "30"])

    assert run.placements() == {}
    line = next(s for s in run.stdout.splitlines() if "default/pg1" in s and "(1 pod)" in s)
    assert "no HyperNode with nodes is of tier 0 or lower" in line, line
