"""binpack: a task goes to the node it fills most, weighed per resource as Volcano does."""

from __future__ import annotations

import pytest

from asyncsched.api.core import Node, Pod
from asyncsched.framework import ArgumentError, Arguments, Session, parse_configuration
from asyncsched.plugins.binpack import BinpackPlugin
from tests.builders import node, pod, snapshot
from tests.session_probes import scores

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: binpack
"""
GPU_ARGS = {
    "binpack.resources": "nvidia.com/gpu, example.com/foo",
    "binpack.resources.nvidia.com/gpu": 8,
}


def open_session(objects: list[Node | Pod], args: dict[str, object] | None = None) -> Session:
    plugin = BinpackPlugin(Arguments(args or {}))
    ssn = Session(snapshot(*objects), parse_configuration(CONF), {"binpack": plugin})
    plugin.on_session_open(ssn)
    return ssn


def running(name: str, on: str, cpu: str, memory: str, gpu: int = 0) -> Pod:
    return pod(name, cpu, memory, gpu=gpu, node_name=on, phase="Running")


HALF_AND_EMPTY: list[Node | Pod] = [
    node("half"),
    node("empty"),
    node("full"),
    running("r1", "half", "4", "8Gi"),
    running("r2", "full", "7", "8Gi"),
    pod("p", "2", "8Gi"),
]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # half: cpu 6/8, memory 16/32 -> (0.75 + 0.5) / 2; empty: (0.25 + 0.25) / 2
        ({}, {"half": 62.5, "empty": 25.0, "full": 0.0}),
        ({"binpack.weight": 10}, {"half": 625.0, "empty": 250.0, "full": 0.0}),
        ({"binpack.cpu": 3}, {"half": (3 * 0.75 + 0.5) / 4 * 100, "empty": 25.0, "full": 0.0}),
        ({"binpack.memory": 0}, {"half": 75.0, "empty": 25.0, "full": 0.0}),
        ({"binpack.cpu": -4}, {"half": 62.5, "empty": 25.0, "full": 0.0}),
        ({"binpack.weight": "2", "binpack.cpu": "1"}, {"half": 125.0, "empty": 50.0, "full": 0.0}),
    ],
    ids=[
        "defaults",
        "weight",
        "cpu-weight",
        "memory-ignored",
        "negative-falls-back-to-1",
        "quoted",
    ],
)
def test_fuller_node_wins_and_overflow_scores_zero(
    args: dict[str, object], expected: dict[str, float]
) -> None:
    assert scores(open_session(HALF_AND_EMPTY, args), "p") == pytest.approx(expected)


GPU_NODES: list[Node | Pod] = [
    node("gpu-busy", gpu=8),
    node("cpu-busy", gpu=8),
    running("g", "gpu-busy", "1", "4Gi", gpu=6),
    running("c", "cpu-busy", "6", "24Gi"),
    pod("p", "1", "4Gi", gpu=1),
]


def test_weighted_gpus_pull_a_gpu_task_to_the_gpu_filled_node() -> None:
    result = scores(open_session(GPU_NODES, GPU_ARGS), "p")
    # gpu-busy: cpu 2/8, memory 8/32, gpu 7/8 x 8 -> (0.25 + 0.25 + 7) / 10
    # cpu-busy: cpu 7/8, memory 28/32, gpu 1/8 x 8 -> (0.875 + 0.875 + 1) / 10
    assert result == pytest.approx({"gpu-busy": 75.0, "cpu-busy": 27.5})


def test_resources_not_listed_are_ignored() -> None:
    result = scores(open_session(GPU_NODES), "p")
    assert result == pytest.approx({"gpu-busy": 25.0, "cpu-busy": 87.5})


def test_a_weighed_resource_the_node_lacks_scores_zero_but_still_counts_its_weight() -> None:
    objects: list[Node | Pod] = [node("plain"), pod("p", "4", "16Gi", gpu=1)]
    result = scores(open_session(objects, GPU_ARGS), "p")
    assert result == pytest.approx({"plain": (0.5 + 0.5) / 10 * 100})


def test_weight_zero_turns_binpack_off() -> None:
    ssn = open_session(HALF_AND_EMPTY, {"binpack.weight": 0})
    assert scores(ssn, "p") == {"half": 0.0, "empty": 0.0, "full": 0.0}


@pytest.mark.parametrize(
    "args",
    [
        {"binpack.weight": "heavy"},
        {"binpack.cpu": 1.5},
        {"binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": "x"},
        {"binpack.resources": 3},
    ],
    ids=["weight", "cpu", "resource-weight", "resources-list"],
)
def test_malformed_arguments_are_rejected_when_the_plugin_is_built(args: dict[str, object]) -> None:
    with pytest.raises(ArgumentError, match="binpack"):
        BinpackPlugin(Arguments(args))
