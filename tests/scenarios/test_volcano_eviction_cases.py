"""Volcano's own preempt and reclaim unit-test cases, as scenarios (regression tests).

Each YAML file names its case (see Volcano's pkg/scheduler/actions/preempt and
reclaim tests, and pkg/scheduler/plugins/capacity); the victims must be the ones
Volcano's tests expect. The
victims run from t=0 and the preemptor arrives at t=1, since here allocate
runs first and places what fits without evicting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import simulate

CASES = [
    ("volcano-preempt-p3.yaml", "volcano-preempt-config.yaml", ["preemptee1"]),
    ("volcano-preempt-p4.yaml", "volcano-preempt-config.yaml", ["preemptee1", "preemptee2"]),
    ("volcano-preempt-p5.yaml", "volcano-preempt-config.yaml", ["preemptee1"]),
    ("volcano-preempt-p6.yaml", "volcano-preempt-config.yaml", []),
    ("volcano-preempt-p7.yaml", "volcano-preempt-config.yaml", ["preemptee2"]),
    ("volcano-preempt-p8.yaml", "volcano-preempt-backfill-config.yaml", ["preemptee1"]),
    ("volcano-preempt-p9.yaml", "volcano-preempt-backfill-config.yaml", ["preemptee1"]),
    ("volcano-preempt-p10.yaml", "volcano-preempt-config.yaml", []),
    ("volcano-preempt-p12.yaml", "volcano-preempt-config.yaml", ["preemptee2"]),
    ("volcano-preempt-p13.yaml", "volcano-preempt-config.yaml", ["q2-preemptee1"]),
    ("volcano-reclaim-r1.yaml", "volcano-reclaim-config.yaml", ["preemptee2"]),
    ("volcano-reclaim-r3.yaml", "volcano-reclaim-config.yaml", ["preemptee1-1"]),
    # capacity_test.go, each with the tier of Volcano's test and with the usual layout
    # (conformance in tier 1, capacity in tier 2)
    *(
        (f"volcano-capacity-{case}.yaml", config, victims)
        for config in ("volcano-capacity-reclaim-config.yaml", "capacity-reclaim-config.yaml")
        for case, victims in [
            ("c2", ["p6"]),  # q4 holds none of its deserved amount, q3 twice its own
            ("c5", ["p18"]),  # within the deserved amount on one resource is enough
            ("c6", []),  # q12 holds its deserved cpu already: it may not reclaim
            ("c10", []),  # beyond queue21's capability, though n10 has room
        ]
    ),
    ("volcano-capacity-h3.yaml", "volcano-capacity-hierarchy-reclaim-config.yaml", ["p7"]),
]


@pytest.mark.parametrize(("scenario", "config", "victims"), CASES)
def test_volcano_case_evicts_the_victims_volcano_expects(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    scenario: str,
    config: str,
    victims: list[str],
) -> None:
    run = simulate(capsys, tmp_path, scenario, config=config)

    assert run.code == 0, run.stderr
    assert sorted(e["name"] for e in run.of("evicted")) == victims
    assert all(e["time"] == 1.0 for e in run.of("evicted"))
    assert "all work done" in run.stdout


def test_volcano_case_p11_evicts_nothing_for_a_preemptor_its_queue_can_never_hold(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys, tmp_path, "volcano-preempt-p11.yaml", config="volcano-preempt-config.yaml"
    )

    assert run.code == 4, run.stdout  # stuck: 4 cpu asked of a queue capable of 3
    assert run.of("evicted") == []
    assert sorted(e["name"] for e in run.of("completed")) == ["preemptee1", "preemptee2"]
    waiting = run.stdout.split("waiting when the run ended", 1)[1]
    assert "PodGroup c1/pg2 (1 pod)" in waiting, waiting
