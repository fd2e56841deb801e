"""GPU model pools (seed 003): two teams' quotas in cards of each model, idle cards lent and
taken back by reclaim, and a queue never above its capability in a model, whatever name
its pods ask the cards under."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness import YAML, Run, simulate

CONFIG = "gpu-model-pools-config.yaml"


def most_on(run: Run, job: str, nodes: set[str]) -> int:
    """The most pods of ``job`` (one card each) running at once on ``nodes``."""
    running: set[str] = set()
    most = 0
    for e in run.events:
        if e["kind"] != "Pod" or not e["name"].startswith(f"{job}-"):
            continue
        if e["event"] == "bound" and e["node"] in nodes:
            running.add(e["name"])
        elif e["event"] in ("completed", "failed", "evicted", "deleted"):
            running.discard(e["name"])
        most = max(most, len(running))
    return most


@pytest.mark.parametrize("gpufrag", [False, True])
def test_team_b_borrows_idle_a100s_up_to_its_capability_and_gives_them_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gpufrag: bool
) -> None:
    config = tmp_path / "config.yaml"
    text = (YAML / CONFIG).read_text()
    if gpufrag:  # its card filter leaves whole cards' room to the resource fit too
        text = text.replace("  - name: nodeorder", "  - name: gpufrag\n  - name: nodeorder")
    config.write_text(text)
    run = simulate(capsys, tmp_path, "gpu-model-pools.yaml", config=config)
    assert run.code == 0, run.stderr
    a100s = {"a100-0", "a100-1"}
    at_start = [e for e in run.of("bound") if e["time"] == 0.0]
    assert sum(1 for e in at_start if e["node"] in a100s) == 6, "capability 6 A100"
    assert sum(1 for e in at_start if e["node"] == "h100-0") == 4
    assert most_on(run, "b-sweep", a100s) == 6, "never above its capability"
    evicted = run.of("evicted")
    assert [(e["time"], e["reason"]) for e in evicted] == [(100.0, "reclaim")] * 6
    assert all(e["name"].startswith("b-sweep-") for e in evicted)
    team_a = [e["time"] for e in run.of("bound") if e["name"].startswith("a-train-")]
    assert team_a == [100.0] * 8, "the owner's gang runs at once on the cards taken back"
    # The device model sees the pool's cards: each card in the table, the queues' most.
    cards = {(g["node"], g["index"]): g for g in run.summary["gpus"]}
    assert len(cards) == 12 and cards["h100-0", 3]["model"] == "NVIDIA-H100-80GB-HBM3"
    most = {(m["queue"], m["resource"]): m["most"] for m in run.summary["model_cards"]}
    assert most == {
        ("team-a", "nvidia.com/a100"): 8,
        ("team-b", "nvidia.com/a100"): 6,
        ("team-b", "nvidia.com/h100"): 4,
    }
    assert "cards of each GPU model pool held by queues" in run.stdout


def test_generic_gpu_pods_count_against_the_capability_of_their_cards_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = simulate(capsys, tmp_path, "gpu-model-pools-generic.yaml", config=CONFIG)
    assert run.code == 0, run.stderr
    first = [e["node"] for e in run.of("bound") if e["time"] == 0.0]
    assert sorted(first) == ["a100-0"] * 2 + ["t4-0"] * 4
    assert most_on(run, "b-inference", {"a100-0"}) == 2
    most = {(m["queue"], m["resource"]): m["most"] for m in run.summary["model_cards"]}
    assert most == {("team-b", "nvidia.com/a100"): 2}


def test_a_capability_of_zero_cards_of_a_model_keeps_the_queue_off_that_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An explicit 0 bounds, as Volcano's plugins read an extended resource at 0 (found by
    the generated workloads: a queue at 0 A100 got A100 cards through vGPU requests)."""
    text = (YAML / "gpu-model-pools-generic.yaml").read_text()
    variant = tmp_path / "zero-a100.yaml"
    variant.write_text(
        text.replace('capability: {nvidia.com/a100: "2"}', 'capability: {nvidia.com/a100: "0"}')
    )
    run = simulate(capsys, tmp_path, variant, config=CONFIG)
    assert run.code == 0, run.stderr
    assert {e["node"] for e in run.of("bound")} == {"t4-0"}
    assert most_on(run, "b-inference", {"a100-0"}) == 0
