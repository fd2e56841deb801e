"""The fragmentation meter: shares of cards, card models named as Volcano matches them, and
the typical pods taken from the GPU pods that came (CPU-only pods left out)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from asyncsched.api import Node, Pod
from asyncsched.backends.sim.fragmentation import FragMeter
from asyncsched.backends.sim.gpu_meter import GpuMeter
from asyncsched.model.devices import ASSIGNED_IDS, VGPU_REGISTER, encode_register


def node(name: str, model: str = "NVIDIA-A100") -> Node:
    cards = [(f"{name}-{i}", 10, 40960, model) for i in range(2)]
    meta = {"name": name, "annotations": {VGPU_REGISTER: encode_register(cards)}}
    return msgspec.convert({"metadata": meta, "status": {"allocatable": {"cpu": "16"}}}, Node)


def pod(name: str, cores: int, on: str = "", card: int = 0, gputype: str = "") -> Pod:
    requests: dict[str, Any] = {"cpu": "1"}
    annotations = {}
    if cores:
        requests |= {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-cores": str(cores)}
        requests["volcano.sh/vgpu-memory-percentage"] = str(cores)
        if on:
            annotations[ASSIGNED_IDS] = f"{on}-{card},NVIDIA,{cores * 409},{cores}:"
    if gputype:
        annotations["nvidia.com/use-gputype"] = gputype
    meta = {"name": name, "namespace": "default", "annotations": annotations}
    spec = {"nodeName": on, "containers": [{"name": "main", "resources": {"requests": requests}}]}
    return msgspec.convert({"metadata": meta, "spec": spec}, Pod)


def meter(*nodes: Node) -> tuple[GpuMeter, FragMeter]:
    gpus = GpuMeter()
    frag = FragMeter(gpus)
    for n in nodes:
        gpus.add_node(n)
        frag.add_node(n, 0.0)
    return gpus, frag


def run(gpus: GpuMeter, frag: FragMeter, *pods: Pod, at: float = 0.0) -> None:
    for p in pods:
        frag.arrived(p, at)
    for p in pods:
        if p.spec.node_name:
            gpus.start(p.metadata.name, p, at)
            frag.start(p.metadata.name, p, at)


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        ((0, 1), 1.0),  # half of each card left: no 60% share fits on either
        ((0, 0), 0.0),  # one card full, the other free for a 60% share
    ],
)
def test_two_halves_of_a_card_block_a_larger_share_unless_on_one_card(
    cards: tuple[int, int], expected: float
) -> None:
    gpus, frag = meter(node("a"))
    halves = [pod(f"half-{i}", 50, on="a", card=c) for i, c in enumerate(cards)]
    big = [pod(f"big-{i}", 60) for i in range(2)]  # typical too, and waiting
    run(gpus, frag, *halves, *big)

    found = frag.summary(100.0)
    assert found is not None
    assert found.allocation == 0.5
    assert found.fragmentation == pytest.approx(expected * 0.5)  # half the pods are 50% ones
    assert found.typical_shapes == 2


def test_cpu_only_pods_are_not_typical_and_an_empty_run_has_no_fragment() -> None:
    gpus, frag = meter(node("a"))
    run(gpus, frag, pod("web", 0))
    found = frag.summary(10.0)
    assert found is not None and found.typical_shapes == 0 and found.fragmentation == 0.0


def test_a_gpu_type_names_the_cards_it_accepts_as_volcano_matches_them() -> None:
    gpus, frag = meter(node("a", "NVIDIA-A100"), node("t", "NVIDIA-Tesla-T4"))
    run(gpus, frag, *(pod(f"p{i}", 100, gputype="a100") for i in range(3)))

    found = frag.summary(1.0)
    assert found is not None
    assert found.fragmentation == pytest.approx(0.5), "the A100s serve it; the T4s do not"


def test_mean_fragmentation_counts_from_the_first_gpu_pod() -> None:
    gpus, frag = meter(node("a"))
    frag.points = []
    run(gpus, frag, pod("first", 60), at=10.0)
    run(gpus, frag, pod("half", 50, on="a", card=0), pod("other", 50, on="a", card=1), at=20.0)

    found = frag.summary(30.0)
    assert found is not None
    # t 10-20: cards free, nothing lost; t 20-30: two halves, a third of pods (60%) lost.
    assert found.fragmentation == pytest.approx(1 / 3)
    assert found.mean_fragmentation == pytest.approx(1 / 3 * 10 / 20)
    assert found.mean_allocation == pytest.approx(0.5 * 10 / 30)
    assert [(p.time, p.fragmentation) for p in frag.points] == [
        (0.0, None),
        (10.0, 0.0),
        (20.0, pytest.approx(1 / 3)),
    ]
