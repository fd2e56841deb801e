"""The capacity plugin: declared quotas, a hierarchy of queues, Volcano's own test cases."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.harness import YAML, Run, simulate

HIERARCHY_CONFIG = "capacity-hierarchy-config.yaml"


def job_of(pod_name: str) -> str:
    return pod_name.rsplit("-worker-", 1)[0]


def most_held(run: Run, jobs: set[str]) -> int:
    """The most pods (one GPU each) the jobs held at any instant, from bound to completed."""
    held, most = 0, 0
    for e in run.events:
        if e["kind"] != "Pod" or job_of(e["name"]) not in jobs:
            continue
        if e["event"] == "bound":
            held += 1
        elif e["event"] in ("completed", "failed", "evicted", "deleted"):
            held -= 1
        most = max(most, held)
    return most


def test_seed_hierarchy_gives_each_project_its_deserved_share_of_each_gpu_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "capacity-hierarchy.yaml", config=HIERARCHY_CONFIG)

    assert run.code == 0, run.stderr
    first_wave = Counter(job_of(e["name"]) for e in run.of("bound") if e["time"] == 0.0)
    # 12 a100: llm deserves 6, vision 2 (group-train 8), rl 4 (group-research); 4 h100: rl.
    assert first_wave == {"llm": 6, "vision": 2, "rl": 4, "rl-h100": 4}
    # Capabilities hold all along: proj-vision 3 a100, group-train 10, group-research 4.
    assert most_held(run, {"vision"}) == 3  # borrowing beyond deserved 2, up to capability 3
    assert most_held(run, {"llm", "vision"}) <= 10
    assert most_held(run, {"rl"}) == 4
    assert "4 completed" in run.stdout
    # The summary's queue table shows what capacity says each queue deserves.
    assert run.queue("proj-llm")["deserved_share"] == pytest.approx(0.5)
    assert run.queue("proj-vision")["deserved_share"] == pytest.approx(2 / 12)


def test_a_capability_holds_on_an_idle_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "capacity-capability.yaml", config="capacity-config.yaml")

    assert run.code == 0, run.stderr
    starts = Counter(e["time"] for e in run.of("bound"))
    assert starts == {0.0: 2, 100.0: 2, 200.0: 2}  # 2 GPUs at a time of 8 idle
    assert "6 completed" in run.stdout


def test_enqueue_refuses_a_job_beyond_the_queues_real_capability(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "capacity-enqueue.yaml", config="capacity-config.yaml")

    assert run.code == 4, run.stderr  # stuck: too-big can never be admitted
    assert {job_of(e["name"]) for e in run.of("bound")} == {"fits"}
    assert run.job("default/too-big")["phase"] == "Pending"
    assert "default/too-big (0 pods): its PodGroup is not admitted: queue small" in run.stdout


def test_a_job_in_a_queue_with_children_waits_and_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys,
        tmp_path,
        "volcano-capacity-h1.yaml",
        config="volcano-capacity-hierarchy-config.yaml",
    )
    assert run.code == 4, run.stderr
    assert run.of("bound") == []
    assert "queue 'q1' has child queues (q11, q12); only leaf queues hold jobs" in run.stdout


# Volcano's capacity_test.go cases whose outcome needs no reclaim (notes, appendix C):
# (case, binds at the start as pod -> node, exit code of the run).
FLAT = "volcano-capacity-config.yaml"
TREE = "volcano-capacity-hierarchy-config.yaml"
VOLCANO_CASES: list[tuple[str, str, dict[str, str], int]] = [
    ("c0", FLAT, {"p2": "n1"}, 0),  # within capability; nodeSelector picks n1
    ("c1", FLAT, {}, 4),  # 1 + 1 > capability 1.5
    ("c4", FLAT, {"p15": "n6"}, 4),  # the priority-10 queue first; p14 finds no node
    ("e0", FLAT, {"pod3": "n1"}, 0),  # memory over deserved, a cpu-only job enqueues
    ("e1", FLAT, {"pod4": "n2"}, 0),  # cpu over deserved, a memory-only job enqueues
    ("e2", FLAT, {}, 4),  # memory 3G + 1G > capability 2G: never enqueued
    ("e3", FLAT, {}, 4),  # a Closed queue admits nothing
    ("h0", TREE, {"p1": "n1"}, 0),  # a leaf queue
    ("h1", TREE, {}, 4),  # not a leaf queue
    ("h2", TREE, {"p3": "n1", "p4": "n1"}, 0),  # a gang of 2 within capability
    ("h4", TREE, {}, 4),  # ancestor q3's reach (4 cpu) is used up
    ("h5", TREE, {"p11": "n1"}, 0),  # cpu capability inherited from root
    ("h6", TREE, {"p10": "n1"}, 4),  # q6's room admits pg10, not pg11 too
    ("h8", TREE, {"p12": "n-gpu"}, 0),  # a GPU deserved
    ("h9", TREE, {"p13": "n2"}, 0),  # a deserved of 0 hugepages passes
    ("h11", TREE, {"p14": "n2", "p15": "n2"}, 0),  # GPU capability inherited per child
]


@pytest.mark.parametrize(("case", "config", "binds", "code"), VOLCANO_CASES)
def test_volcano_capacity_case(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    case: str,
    config: str,
    binds: dict[str, str],
    code: int,
) -> None:
    run = simulate(
        capsys, tmp_path, f"volcano-capacity-{case}.yaml", config=config, extra=["--until", "50"]
    )
    assert run.code == code, run.stdout + run.stderr
    assert run.placements() == binds


def test_volcano_capacity_h6_admits_one_podgroup_of_two(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "volcano-capacity-h6.yaml", config=TREE)
    phases: dict[str, Any] = {
        e["name"]: e["phase"] for e in run.of("phase") if e["kind"] == "PodGroup"
    }
    assert phases.get("pg11", "Pending") == "Pending"
    assert phases["pg10"] in ("Inqueue", "Running")


def test_volcano_capacity_h7_child_guarantees_beyond_the_parent_are_refused_at_load(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Volcano's test only asks that the scheduler not panic; its webhook refuses such queues,
    # and so does asyncsched, before anything runs.
    run = simulate(capsys, tmp_path, "volcano-capacity-h7.yaml", config=TREE)
    assert run.code == 2 and run.events == []
    assert "Queue q7: refused by admission: spec.deserved: its child queues (q71, q72)" in (
        run.stderr
    )


# Volcano's capacity_test.go reclaim cases are in test_volcano_eviction_cases.py; these
# show what capacity's answers to the queue-level hooks decide in them.
FLAT_RECLAIM = "volcano-capacity-reclaim-config.yaml"
TREE_RECLAIM = "volcano-capacity-hierarchy-reclaim-config.yaml"


def reclaimed(run: Run) -> tuple[set[str], dict[str, str]]:
    """Who was evicted, and what was placed at t=1 (when the waiting pod arrived)."""
    assert {e["time"] for e in run.of("evicted")} <= {1.0}
    placed = {e["name"]: e["node"] for e in run.of("bound") if e["time"] == 1.0}
    return {e["name"] for e in run.of("evicted")}, placed


def test_a_queue_holding_its_deserved_amount_waits_instead_of_reclaiming(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Volcano's C6: q13 deserves nothing, so its p21 would be a victim; but q12, which wants
    # room for p20, already holds the 1 cpu it deserves, and capacity's answer to
    # `preemptive` keeps it from reclaiming: p20 waits for p19 and p21 to complete.
    run = simulate(capsys, tmp_path, "volcano-capacity-c6.yaml", config=FLAT_RECLAIM)
    assert run.of("evicted") == []
    assert [e["time"] for e in run.of("bound") if e["name"] == "p20"] == [1000.0]

    # The same cluster with capacity's `preemptive` switched off: nothing says q12 may not
    # reclaim, and p21 is evicted for p20 as soon as it arrives.
    config = (YAML / FLAT_RECLAIM).read_text(encoding="utf-8")
    switched = tmp_path / "no-preemptive.yaml"
    switched.write_text(
        config.replace("- name: capacity\n", "- name: capacity\n    enablePreemptive: false\n")
    )
    run = simulate(capsys, tmp_path, "volcano-capacity-c6.yaml", config=switched)
    assert reclaimed(run) == ({"p21"}, {"p20": "n1"})


def test_a_sibling_queue_gives_back_before_a_distant_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Volcano's H3 with p7 a gang of its own: evicting q4's p5 or q31's p7 would each break
    # one gang and free enough on n1, and capacity's victim queue order alone picks p7 (q31
    # is the reclaimer's sibling), the one choice that makes room in q3, their parent at its
    # capability. Taking p5 instead, nothing could be placed.
    run = simulate(capsys, tmp_path, "capacity-reclaim-sibling-first.yaml", config=TREE_RECLAIM)
    assert run.code == 0, run.stdout + run.stderr
    assert reclaimed(run) == ({"p7"}, {"p8": "n1"})


def test_an_idle_project_lends_its_gpus_and_reclaim_takes_them_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(
        capsys,
        tmp_path,
        "capacity-hierarchy-reclaim.yaml",
        config="capacity-hierarchy-reclaim-config.yaml",
    )

    assert run.code == 0, run.stderr
    started = [e for e in run.of("started") if e["time"] == 0.0]
    assert len(started) == 8, "llm borrows vision's 2 GPUs while vision is idle"
    evicted = run.of("evicted")
    assert [(e["time"], e["reason"]) for e in evicted] == [(10.0, "reclaim")] * 2
    assert all(e["name"].startswith("llm-pretrain-") for e in evicted)
    assert all(e["preemptor"].startswith("default/vision-finetune-") for e in evicted)
    vision = [e["time"] for e in run.of("bound") if e["name"].startswith("vision-")]
    assert vision == [10.0, 10.0], "the owner's gang runs at once on the GPUs taken back"
