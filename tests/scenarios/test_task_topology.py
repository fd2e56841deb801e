"""task-topology: a Volcano Job's ps and workers share nodes, its two ps stay apart."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from asyncsched.api import PodGroup
from asyncsched.cache import snapshots
from asyncsched.plugins.task_topology import INVALID_CONDITION
from tests.scenarios.harness import simulate, simulation, variant


def test_ps_and_workers_share_nodes_and_the_ps_stay_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "task-topology.yaml", config="task-topology-config.yaml")

    assert run.code == 0, run.stderr
    placed = {p: n for p, n in run.placements().items() if p.startswith("tf-topo-")}
    assert len(placed) == 6
    first, second = placed["tf-topo-ps-0"], placed["tf-topo-ps-1"]
    assert first != second
    assert placed["tf-topo-worker-0"] == placed["tf-topo-worker-2"] == first
    assert placed["tf-topo-worker-1"] == placed["tf-topo-worker-3"] == second
    assert len(set(placed.values())) == 2  # two nodes left whole
    assert run.job("default/wide")["phase"] == "Completed"


def test_without_the_plugin_the_same_job_spreads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "task-topology.yaml")

    assert run.code == 0, run.stderr
    placed = {p: n for p, n in run.placements().items() if p.startswith("tf-topo-")}
    assert len(placed) == 6
    assert len(set(placed.values())) == 4
    per_node = Counter(placed.values())
    assert max(per_node.values()) == 2
    workers_with_a_ps = [
        w
        for w in ("worker-0", "worker-1", "worker-2", "worker-3")
        if placed[f"tf-topo-{w}"] in (placed["tf-topo-ps-0"], placed["tf-topo-ps-1"])
    ]
    assert len(workers_with_a_ps) == 2


def test_a_malformed_annotation_is_ignored_and_shown_on_the_podgroup(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One run of each session (the snapshot check runs every session twice).
    monkeypatch.setenv(snapshots.CHECK_ENV, "0")
    bad = variant(tmp_path, "task-topology.yaml", 'affinity: "ps,worker"', 'affinity: "ps,chief"')

    with caplog.at_level(logging.WARNING):
        run = simulate(capsys, tmp_path, bad, config="task-topology-config.yaml")

    assert run.code == 0, run.stderr
    said = [r.getMessage() for r in caplog.records if "is not a task" in r.getMessage()]
    assert said == [
        "task-topology: job default/tf-topo: volcano.sh/task-topology-affinity: 'chief' is "
        "not a task of the job (tasks: ps, worker); task-topology ignores this job"
    ]
    placed = {p: n for p, n in run.placements().items() if p.startswith("tf-topo-")}
    assert len(set(placed.values())) == 4  # left to nodeorder, as without the plugin

    sim = simulation(bad, until=10.0, config="task-topology-config.yaml")
    [group] = [pg for key, pg in sim.store.list(PodGroup).items() if "tf-topo" in key]
    [notice] = [c for c in group.status.conditions if c.type == INVALID_CONDITION]
    assert notice.status == "True"
    assert "'chief' is not a task of the job (tasks: ps, worker)" in notice.message
