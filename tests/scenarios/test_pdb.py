"""PodDisruptionBudgets against preempt and reclaim, with the pdb plugin and without it.

The simulator plays Kubernetes' disruption controller and Eviction API: budgets'
status follows the pods, and an eviction a budget forbids is refused (event
``refused``). With ``pdb`` in the configuration (``pdb-config.yaml``) the scheduler
does not choose such victims in the first place; ``preempt-config.yaml`` is the same
configuration without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import Run, simulate, simulation, variant

WITH_PDB = "pdb-config.yaml"
WITHOUT_PDB = "preempt-config.yaml"


def _web(run: Run, event: str) -> list[str]:
    return [e["name"] for e in run.of(event) if e["name"].startswith("web-")]


def test_reclaim_evicts_nobody_when_the_budget_cannot_free_room_for_the_whole_gang(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "pdb-reclaim.yaml", config=WITH_PDB)

    assert run.code == 0, run.stderr
    assert run.of("evicted") == [] and run.of("refused") == []
    assert sorted(_web(run, "completed")) == ["web-0", "web-1", "web-2", "web-3"]
    train = [e["time"] for e in run.of("started") if e["name"].startswith("train-")]
    assert train == [100.0, 100.0], "the gang waits for the web servers to finish"


def test_without_pdb_a_pod_is_evicted_for_nothing_and_the_next_one_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "pdb-reclaim.yaml", config=WITHOUT_PDB)

    assert run.code == 0, run.stderr
    (evicted,) = run.of("evicted")
    assert evicted["time"] == 10.0 and evicted["reason"] == "reclaim"
    refused = run.of("refused")
    assert refused and all(e["namespace"] == "shop" for e in refused)
    assert (
        "Cannot evict pod as it would violate the pod's disruption budget" in (refused[0]["reason"])
    )
    assert refused[0]["preemptor"].startswith("research/train-")
    train = [e["time"] for e in run.of("started") if e["name"].startswith("train-")]
    assert train == [100.0, 100.0], "the gang waited all the same"
    assert len(_web(run, "completed")) == 3


def test_an_elastic_reclaimer_takes_the_one_pod_the_budget_lets_go(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    elastic = variant(tmp_path, "pdb-reclaim.yaml", "minMember: 2", "minMember: 1")
    run = simulate(capsys, tmp_path, elastic, config=WITH_PDB)

    assert run.code == 0, run.stderr
    (evicted,) = run.of("evicted")
    assert evicted["namespace"] == "shop" and evicted["time"] == 10.0
    assert run.of("refused") == []
    started = {e["name"]: e["time"] for e in run.of("started") if e["name"].startswith("train")}
    assert sorted(started.values()) == [10.0, 60.0], "one trainer at once, one after it"


def test_preempt_spends_a_percentage_of_the_deployments_replicas_rounded_up(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "pdb-preempt.yaml", config=WITH_PDB)

    assert run.code == 0, run.stderr
    evicted = run.of("evicted")
    assert len(evicted) == 2 and {e["reason"] for e in evicted} == {"preempt"}
    assert run.of("refused") == []
    urgent = [e["time"] for e in run.of("started") if e["name"].startswith("urgent-")]
    assert urgent == [10.0, 10.0]
    replaced = [e["time"] for e in run.of("started") if e["name"].startswith("web-")]
    assert replaced[-2:] == [30.0, 30.0], "the new web servers run once the gang is done"


def test_a_budget_that_allows_too_little_keeps_the_gang_waiting_without_churn(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tight = variant(tmp_path, "pdb-preempt.yaml", "maxUnavailable: 30%", "minAvailable: 60%")
    run = simulate(capsys, tmp_path, tight, config=WITH_PDB)

    assert run.code == 4, "stuck: the gang can never have its room"
    assert run.of("evicted") == [] and run.of("refused") == []
    assert "PodGroup default/urgent" in run.stdout
    told = "preemption: PodDisruptionBudget default/web allows no more disruptions"
    assert told in run.stdout, "the waiting reason names the budget"
    waiting = {e["name"]: e["reason"] for e in run.of("unschedulable")}
    assert set(waiting) == {"urgent-0", "urgent-1"}
    assert all(told in reason for reason in waiting.values()), waiting

    churn = simulate(capsys, tmp_path, tight, config=WITHOUT_PDB, extra=["--until", "60"])
    assert churn.code == 0, churn.stderr
    # Without pdb: one pod evicted, the next refused, the evicted one made again and
    # bound into the room, evicted again... for as long as the run lasts.
    assert len(churn.of("evicted")) > 10 and len(churn.of("refused")) > 10


def test_the_simulator_keeps_each_budgets_status_as_the_disruption_controller_would() -> None:
    sim = simulation("pdb-reclaim.yaml", until=5)
    status = sim.objects("PodDisruptionBudget")["shop/web"]["status"]
    assert status["currentHealthy"] == 4 and status["desiredHealthy"] == 3
    assert status["expectedPods"] == 4 and status["disruptionsAllowed"] == 1
    assert status["observedGeneration"] == 1
    assert [c["reason"] for c in status["conditions"]] == ["SufficientPods"]

    sim.run(until=150)
    status = sim.objects("PodDisruptionBudget")["shop/web"]["status"]
    assert "currentHealthy" not in status and "disruptionsAllowed" not in status, "both 0"
    assert [c["reason"] for c in status["conditions"]] == ["InsufficientPods"]
